"""Typed failures of the structured-output client.

UpstreamError (app.core.errors)
 └── LLMError                 .kind names the failure in logs; the highlights side maps the
      │                        class to the per-citation reason (highlights/choosing.py)
      ├── LLMUnavailable      connection, timeout, 5xx or 429 after retries; auth or model missing
      ├── LLMRejected         a 400 that is not about structured output (context too long, ...)
      ├── LLMUnsupported      a 400 saying the schema or parameter is unsupported: next tier
      ├── LLMParameterRefused a 400 refusing an ordinary parameter (max_tokens, temperature)
      ├── LLMTruncated        finish_reason == "length": never repaired
      └── LLMInvalidOutput    the reply is not JSON or does not fit the schema and the batch
"""

from __future__ import annotations

from app.core.errors import UpstreamError


class LLMError(UpstreamError):
    kind = "llm_error"


class LLMUnavailable(LLMError):
    kind = "llm_unavailable"


class LLMRejected(LLMError):
    kind = "llm_rejected"


class LLMUnsupported(LLMError):
    kind = "llm_unsupported"

    def __init__(
        self, message: str, *, this_call_only: bool = False, no_endpoints: bool = False
    ) -> None:
        super().__init__(message)
        # The schema of this one batch was too big: move on for this call, remember nothing.
        self.this_call_only = this_call_only
        # OpenRouter found no provider for what was sent (the schema, or a parameter).
        self.no_endpoints = no_endpoints


class LLMParameterRefused(LLMError):
    kind = "llm_rejected"

    def __init__(self, message: str, *, parameter: str) -> None:
        super().__init__(message)
        self.parameter = parameter


class LLMTruncated(LLMError):
    kind = "llm_truncated"


class LLMInvalidOutput(LLMError):
    kind = "llm_invalid_output"
