"""Tiered structured-output client over any OpenAI-compatible chat completions endpoint.

Each call walks the provider's strategies (see providers.py) from the first one known to work
for this (base URL, model). A 400 that says the schema or a parameter is unsupported moves to
the next strategy and is remembered, so later calls skip it. Timeouts, connection errors, 429 and
5xx are retried with bounded backoff on the same strategy, never downgraded. A truncated reply
(finish_reason "length") is reported as such, never repaired.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import openai
from openai import AsyncOpenAI

from app.llm.errors import (
    LLMError,
    LLMInvalidOutput,
    LLMRejected,
    LLMTruncated,
    LLMUnavailable,
    LLMUnsupported,
)
from app.llm.parsing import extract_json
from app.llm.providers import ProviderProfile, Strategy, merge_extra
from app.llm.schema import JSON

log = logging.getLogger(__name__)
T = TypeVar("T")

# Phrases with which OpenAI, OpenRouter and vLLM (xgrammar/outlines) refuse a structured-output
# request; any other 400 (context too long, bad message) is not a reason to change tier.
_UNSUPPORTED = re.compile(
    r"json_schema|response_format|structured.?output|schema|grammar|not supported|unsupported"
    r"|unrecognized request argument|extra inputs are not permitted|extra_forbidden"
    r"|unknown (?:field|parameter)",
    re.IGNORECASE,
)
_NO_ENDPOINTS = re.compile(r"no endpoints found that (?:can handle|support)", re.IGNORECASE)
MAX_BACKOFF_S = 8.0


@dataclass(frozen=True)
class Completion(Generic[T]):
    value: T
    strategy: str
    model: str
    tiers_tried: int
    seconds: float


class CapabilityMemory:
    """Which strategy to start from, per (base URL, model). A downgrade is forgotten after
    ``ttl_s`` so a server that gains a feature (a vLLM upgrade) is tried on it again."""

    def __init__(self, ttl_s: float = 3600.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._start: dict[tuple[str, str], tuple[int, float]] = {}
        self._ttl_s = ttl_s
        self._clock = clock

    def start(self, key: tuple[str, str]) -> int:
        index, since = self._start.get(key, (0, 0.0))
        if index and self._clock() - since > self._ttl_s:
            del self._start[key]
            return 0
        return index

    def downgrade(self, key: tuple[str, str], to_index: int) -> None:
        if to_index > self.start(key):
            self._start[key] = (to_index, self._clock())


def _error_text(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        return json.dumps(body)[:500]
    return str(exc.message)


class StructuredClient:
    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str,
        profile: ProviderProfile,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        memory: CapabilityMemory | None = None,
        backoff_s: float = 0.5,
        http_client: openai.DefaultAsyncHttpxClient | None = None,
    ) -> None:
        self.model = model
        self.profile = profile
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.memory = memory or CapabilityMemory()
        self.backoff_s = backoff_s
        self._key = (base_url.rstrip("/"), model)
        # The SDK's own retries are off: this class decides what is retried and logs it.
        self._sdk = AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or "not-needed",
            timeout=timeout_s,
            max_retries=0,
            default_headers=profile.headers or None,
            http_client=http_client,
        )

    async def close(self) -> None:
        await self._sdk.close()

    def _request(self, strategy: Strategy, system: str, user: str, schema: JSON, name: str) -> JSON:
        shaped = strategy.shape(schema)
        extra: JSON = dict(self.profile.extra_body)
        if strategy.tier != "prompted":
            extra = merge_extra(extra, self.profile.schema_extra_body)
        kwargs: JSON = {}
        if strategy.tier == "json_schema":
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": shaped, "strict": True},
            }
        elif strategy.tier == "structured_outputs":
            extra = merge_extra(extra, {"structured_outputs": {"json": shaped}})
        else:
            system = (
                f"{system}\n\nReply with one JSON object and nothing else, no markdown. "
                f"It must validate against this JSON Schema:\n{json.dumps(shaped)}"
            )
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        return {
            "model": self.model,
            "messages": messages,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "extra_body": extra or None,
            **kwargs,
        }

    async def _send(self, request: JSON) -> tuple[str | None, str | None]:
        """One HTTP exchange with bounded retries; returns (content, finish_reason)."""
        for attempt in range(self.max_retries + 1):
            try:
                response = await self._sdk.chat.completions.create(**request)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                text = _error_text(exc)
                if _UNSUPPORTED.search(text):
                    raise LLMUnsupported(text) from exc
                raise LLMRejected(f"the LLM server rejected the request: {text}") from exc
            except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
                raise LLMUnavailable(
                    f"the LLM server refused the API key: {_error_text(exc)}"
                ) from exc
            except openai.NotFoundError as exc:
                text = _error_text(exc)
                # OpenRouter answers 404 when provider.require_parameters leaves no provider that
                # supports the request's parameters: a capability refusal, not a missing model.
                if _NO_ENDPOINTS.search(text):
                    raise LLMUnsupported(text) from exc
                raise LLMUnavailable(f"model {self.model!r} or endpoint not found: {text}") from exc
            except (
                openai.APIConnectionError,
                openai.RateLimitError,
                openai.InternalServerError,
            ) as exc:
                retry_after = self._retry_after(exc)
                if attempt == self.max_retries:
                    raise LLMUnavailable(
                        f"the LLM server did not answer after {attempt + 1} attempts: {exc}"
                    ) from exc
                delay = retry_after or min(MAX_BACKOFF_S, self.backoff_s * 2**attempt)
                log.warning("llm call failed (%s), retrying in %.1fs", type(exc).__name__, delay)
                await asyncio.sleep(delay)
                continue
            except openai.APIStatusError as exc:
                raise LLMUnavailable(
                    f"LLM server error {exc.status_code}: {_error_text(exc)}"
                ) from exc
            if not response.choices:
                raise LLMInvalidOutput("the LLM server returned no choices")
            choice = response.choices[0]
            return choice.message.content, choice.finish_reason
        raise AssertionError("unreachable")

    @staticmethod
    def _retry_after(exc: Exception) -> float | None:
        response = getattr(exc, "response", None)
        header = response.headers.get("retry-after") if response is not None else None
        try:
            return min(MAX_BACKOFF_S, float(header)) if header else None
        except ValueError:
            return None

    async def complete_json(
        self,
        *,
        system: str,
        user: str,
        schema: JSON,
        schema_name: str,
        validate: Callable[[Any], T],
    ) -> Completion[T]:
        """Ask for JSON that fits ``schema``; ``validate`` turns it into T or raises
        LLMInvalidOutput. Raises the last LLMError when every strategy failed."""
        started = time.perf_counter()
        strategies = self.profile.strategies
        first = min(self.memory.start(self._key), len(strategies) - 1)
        last_error: LLMError | None = None
        for index in range(first, len(strategies)):
            strategy = strategies[index]
            try:
                content, finish = await self._send(
                    self._request(strategy, system, user, schema, schema_name)
                )
                if finish == "length":
                    raise LLMTruncated(
                        f"the reply hit max_tokens={self.max_tokens} before the JSON was complete"
                    )
                value = validate(extract_json(content))
            except LLMUnsupported as exc:
                log.info("llm tier %s unsupported by %s: %s", strategy.name, self._key, exc.message)
                self.memory.downgrade(self._key, index + 1)
                last_error = exc
                continue
            except LLMInvalidOutput as exc:
                # The server accepted the tier but the reply does not fit: try the next tier for
                # this call only; it may be a one-off of the model rather than the server.
                log.warning("llm tier %s gave invalid output: %s", strategy.name, exc.message)
                last_error = exc
                continue
            seconds = time.perf_counter() - started
            log.info(
                "llm call served by tier %s (model %s, %.2fs)", strategy.name, self.model, seconds
            )
            return Completion(value, strategy.name, self.model, index - first + 1, seconds)
        assert last_error is not None
        if isinstance(last_error, LLMUnsupported):
            raise LLMRejected(
                f"no structured-output tier is supported by {self.model!r}: {last_error.message}"
            ) from last_error
        raise last_error
