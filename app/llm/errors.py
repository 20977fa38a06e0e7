"""Typed failures of the structured-output client.

UpstreamError (app.core.errors)
 └── LLMError                 .kind names the failure in logs; the highlights side maps the
      │                        class to the per-citation reason (highlights/choosing.py)
      ├── LLMUnavailable      connection, timeout, 5xx or 429 after retries, or at once when the
      │                        server asks to wait past the deadline (.status, .retry_after_s);
      │                        auth or model missing
      ├── LLMRejected         a 400 that is not about structured output (context too long, ...)
      ├── LLMUnsupported      a 400 saying the schema or parameter is unsupported: next tier;
      │                        .per_schema: a 5xx of the grammar backend failing on this schema
      ├── LLMParameterRefused a 400 refusing an ordinary parameter (max_tokens, temperature,
      │                        the reasoning effort) or its value
      ├── LLMTruncated        finish_reason == "length": never repaired; .by_reasoning when the
      │                        model spent the whole budget reasoning and wrote no answer
      └── LLMInvalidOutput    the reply is not JSON or does not fit the schema and the batch
"""

from __future__ import annotations

from app.core.errors import UpstreamError


class LLMError(UpstreamError):
    kind = "llm_error"


class LLMUnavailable(LLMError):
    kind = "llm_unavailable"

    def __init__(
        self, message: str, *, status: int | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        # The upstream HTTP status (None: no answer at all) and the wait it asked for, if any.
        self.status = status
        self.retry_after_s = retry_after_s


class LLMRejected(LLMError):
    kind = "llm_rejected"


class LLMUnsupported(LLMError):
    kind = "llm_unsupported"

    def __init__(
        self,
        message: str,
        *,
        this_call_only: bool = False,
        no_endpoints: bool = False,
        per_schema: bool = False,
    ) -> None:
        super().__init__(message)
        # The schema of this one batch was too big: move on for this call, remember nothing.
        self.this_call_only = this_call_only
        # The server's grammar backend cannot compile this schema (a 5xx, vllm#57725): remember
        # it for this schema only; other schemas keep the tier.
        self.per_schema = per_schema
        # OpenRouter found no provider for what was sent (the schema, or a parameter).
        self.no_endpoints = no_endpoints


class LLMParameterRefused(LLMError):
    kind = "llm_rejected"

    def __init__(
        self,
        message: str,
        *,
        parameter: str,
        value_refused: bool = False,
        supported: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.parameter = parameter
        # The value sent was refused, not the parameter ("Unsupported value: 'reasoning_effort'
        # does not support 'none'"), with the values the server says it takes, when it says.
        self.value_refused = value_refused
        self.supported = supported


class LLMTruncated(LLMError):
    kind = "llm_truncated"

    def __init__(self, message: str, *, by_reasoning: bool = False) -> None:
        super().__init__(message)
        # The model reasoned until the token budget ran out and wrote no answer at all.
        self.by_reasoning = by_reasoning


class LLMInvalidOutput(LLMError):
    kind = "llm_invalid_output"
