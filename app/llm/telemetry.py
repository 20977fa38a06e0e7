"""What the structured-output client reports about its requests: per tier tried, a count by
outcome, a duration, the tokens the reply's ``usage`` names (core/metrics.py) and a client span;
per HTTP request, the headers that let the LLM server's logs and traces join the service's
(``X-Request-ID``, and ``traceparent`` when tracing is on)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

import openai

from app.core import metrics, tracing
from app.core.logs import current_request_id
from app.llm.errors import LLMError

T = TypeVar("T")


@dataclass
class Usage:
    """Tokens spent by one call, summed over the tiers and requests it took."""

    prompt: int = 0
    completion: int = 0

    def add(self, tier: str, response: Any) -> None:
        """Adds a reply's usage (some servers send none), counted for ``tier`` too."""
        usage = getattr(response, "usage", None)
        prompt = getattr(usage, "prompt_tokens", None)
        completion = getattr(usage, "completion_tokens", None)
        if isinstance(prompt, int) and prompt > 0:
            self.prompt += prompt
            metrics.LLM_TOKENS.labels(tier, "prompt").inc(prompt)
        if isinstance(completion, int) and completion > 0:
            self.completion += completion
            metrics.LLM_TOKENS.labels(tier, "completion").inc(completion)


def outcome(exc: BaseException) -> str:
    """A tier's outcome label: the error's kind without the prefix (unavailable, rejected, ...)."""
    if isinstance(exc, LLMError):
        return exc.kind.removeprefix("llm_")
    return "cancelled" if isinstance(exc, asyncio.CancelledError) else "error"


def count_retry(exc: Exception) -> None:
    if isinstance(exc, openai.APITimeoutError):
        error = "timeout"
    elif isinstance(exc, openai.RateLimitError):
        error = "rate_limited"
    elif isinstance(exc, openai.InternalServerError):
        error = "server_error"
    else:
        error = "connection"
    metrics.LLM_RETRIES.labels(error).inc()


def count_downgrade(tier: str, remembered: bool) -> None:
    metrics.LLM_DOWNGRADES.labels(tier, "true" if remembered else "false").inc()


def request_headers() -> dict[str, str]:
    """Per HTTP request: the request's id and the current trace context."""
    headers: dict[str, str] = {}
    request_id = current_request_id()
    if request_id:
        headers["X-Request-ID"] = request_id
    tracing.inject(headers)
    return headers


async def measured(tier: str, model: str, usage: Usage, work: Awaitable[T], provider: str) -> T:
    """``work`` (one tier's attempt) counted by outcome and timed, inside a client span, so the
    trace context its requests send names this span. The span follows OpenTelemetry's GenAI
    conventions: ``chat {model}``, the provider as configured (``openai``, ``vllm``,
    ``openrouter``), and the tokens this tier's replies reported, here only (the batch's spans
    do not repeat them, and ``Usage.add`` counts them once in the metrics)."""
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
        "highlight.llm.tier": tier,
    }
    started = time.perf_counter()
    before = (usage.prompt, usage.completion)
    result = "ok"
    with tracing.span(f"chat {model}", attributes, kind="client") as span:
        try:
            return await work
        except BaseException as exc:
            result = outcome(exc)
            tracing.set_error(span, result)
            raise
        finally:
            metrics.LLM_CALLS.labels(tier, result).inc()
            metrics.LLM_DURATION.labels(tier).observe(time.perf_counter() - started)
            span.set_attribute("highlight.llm.outcome", result)
            if (usage.prompt, usage.completion) != before:
                span.set_attribute("gen_ai.usage.input_tokens", usage.prompt - before[0])
                span.set_attribute("gen_ai.usage.output_tokens", usage.completion - before[1])
