"""Typed failures of the structured-output client.

UpstreamError (app.core.errors)
 └── LLMError                 .reason is the per-citation reason the API reports
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
    reason = "llm_error"


class LLMUnavailable(LLMError):
    reason = "llm_unavailable"


class LLMRejected(LLMError):
    reason = "llm_rejected"


class LLMUnsupported(LLMError):
    reason = "llm_unsupported"

    def __init__(
        self, message: str, *, this_call_only: bool = False, no_endpoints: bool = False
    ) -> None:
        super().__init__(message)
        # The schema of this one batch was too big: move on for this call, remember nothing.
        self.this_call_only = this_call_only
        # OpenRouter found no provider for what was sent (the schema, or a parameter).
        self.no_endpoints = no_endpoints


class LLMParameterRefused(LLMError):
    reason = "llm_rejected"

    def __init__(self, message: str, *, parameter: str) -> None:
        super().__init__(message)
        self.parameter = parameter


class LLMTruncated(LLMError):
    reason = "llm_truncated"


class LLMInvalidOutput(LLMError):
    reason = "llm_invalid_output"
