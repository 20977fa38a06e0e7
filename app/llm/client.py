"""Tiered structured-output client over any OpenAI-compatible chat completions endpoint.

Each call walks the provider's strategies (see providers.py) from the first one known to work
for this (base URL, model):

- a refusal of the schema or the structured-output parameter moves to the next strategy and is
  remembered, so later calls skip it; a refusal of this batch's schema for its *size* moves on for
  this call only (one oversized batch must not cost the model its tier for an hour);
- a refusal of an ordinary parameter (reasoning models refuse ``max_tokens`` and
  ``temperature: 0``) is learned per model and the same strategy is sent again without it;
- the reasoning effort likewise: left out or raised, learned per model (reasoning.py);
- timeouts, connection errors, 429 and 5xx are retried on the same strategy after the wait the
  server asks for (``Retry-After``, OpenRouter's ``retry_after_seconds``) or a jittered
  exponential backoff, never past the call's deadline: a wait that would outlast it is reported
  at once (retries.py);
- a 5xx saying the grammar backend cannot compile the schema (vllm#57725) is not retried: the
  next strategy is tried, and this schema starts there for the rest of the process;
- a truncated reply (finish_reason "length") is reported as such, never repaired, naming the
  reasoning when that spent the budget (reasoning.py); only ``content`` is read, never the
  ``reasoning``/``reasoning_content`` text beside it; a 200 that is not a chat completion (an
  HTML error page, a choice without a message) is invalid output, and so is a reply larger than
  ``max_tokens`` allows, cut off as it arrives (reply_cap.py).

Each request carries the request's id (``X-Request-ID``) and, with tracing on, its W3C trace
context (``traceparent``), so the LLM server's logs and spans join the service's. Every tier
tried is counted by outcome and timed (core/metrics.py), with the tokens the reply's ``usage``
reports.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import openai
from openai import AsyncOpenAI

from app.llm.errors import (
    LLMError,
    LLMInvalidOutput,
    LLMParameterRefused,
    LLMRejected,
    LLMTruncated,
    LLMUnavailable,
    LLMUnsupported,
)
from app.llm.memory import MAX_COMPLETION_TOKENS, OMIT_TEMPERATURE, CapabilityMemory
from app.llm.parsing import extract_json, read_completion
from app.llm.providers import EFFORTS, ProviderProfile, Strategy, merge_extra
from app.llm.reasoning import ReasoningPolicy, reasoned, spent_reasoning
from app.llm.refusals import REASONING_EFFORT, read_refusal
from app.llm.reply_cap import UNENCODED, capped, install, reply_cap
from app.llm.retries import wait_before_retry
from app.llm.schema import JSON
from app.llm.telemetry import Usage, count_downgrade, count_retry, measured, request_headers

# CapabilityMemory lives in memory.py (reasoning.py needs it too) and is still imported from here.
__all__ = ["CapabilityMemory", "Completion", "StructuredClient"]
log = logging.getLogger(__name__)
T = TypeVar("T")
# The quirk that answers each ordinary parameter a model refuses.
_QUIRK_FOR_PARAMETER = {"temperature": OMIT_TEMPERATURE, "max_tokens": MAX_COMPLETION_TOKENS}


@dataclass(frozen=True)
class Completion(Generic[T]):
    value: T
    strategy: str
    model: str
    tiers_tried: int
    seconds: float
    # Summed over the tiers tried, as the server's ``usage`` reported them.
    prompt_tokens: int = 0
    completion_tokens: int = 0


def _status_error(exc: openai.APIStatusError) -> LLMError:
    refusal = read_refusal(exc.body, str(exc.message))
    status = exc.status_code
    if status in (400, 404, 422):
        parameter = refusal.refused_parameter
        if parameter is not None:
            return LLMParameterRefused(
                refusal.text,
                parameter=parameter,
                value_refused=refusal.refuses_effort == "value",
                supported=refusal.supported_values,
            )
        if refusal.no_endpoints:
            # OpenRouter's require_parameters left no provider: a refusal of what was sent.
            return LLMUnsupported(refusal.text, no_endpoints=True)
        if status != 404 and refusal.about_schema:
            return LLMUnsupported(refusal.text, this_call_only=refusal.schema_too_big)
    if status == 404:
        return LLMUnavailable(f"model or endpoint not found: {refusal.text}")
    if status in (401, 403):
        return LLMUnavailable(f"the LLM server refused the API key: {refusal.text}")
    if status in (400, 422):
        return LLMRejected(f"the LLM server rejected the request: {refusal.text}")
    return LLMUnavailable(f"LLM server error {status}: {refusal.text}")


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
        max_reply_bytes: int | None = None,
        rng: random.Random | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model = model
        self.profile = profile
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.memory = memory or CapabilityMemory()
        self.backoff_s = backoff_s
        # The backoff's jitter, the wait and the deadline's clock: injected by tests.
        self._rng = rng or random.Random()
        self._sleep = sleep
        self._clock = clock
        self.max_reply_bytes = max_reply_bytes or reply_cap(max_tokens)
        self._key = (base_url.rstrip("/"), model)
        self.reasoning = ReasoningPolicy(profile.reasoning_effort, self.memory, self._key, model)
        # The SDK's own retries are off: this class decides what is retried and logs it.
        self._sdk = AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or "not-needed",
            timeout=timeout_s,
            max_retries=0,
            default_headers={**UNENCODED, **profile.headers},
            http_client=install(http_client or openai.DefaultAsyncHttpxClient()),
        )

    async def close(self) -> None:
        await self._sdk.close()

    @property
    def identity(self) -> JSON:
        """What shapes this client's answers, for a cache keyed on them: where it asks, and each
        tier's request as sent but for the messages (model, token limit, temperature, reasoning
        effort, every extra body). Read off the requests themselves, so a new request parameter
        changes it with no second list to keep in step."""
        requests = []
        for strategy in self.profile.strategies:
            request = self._request(strategy, frozenset(), "", "", {}, "schema")
            request.pop("messages")
            requests.append(request)
        return {
            "provider": self.profile.name,
            "base_url": self._key[0],
            "headers": dict(self.profile.headers),
            "requests": requests,
        }

    def _request(
        self,
        strategy: Strategy,
        quirks: frozenset[str],
        system: str,
        user: str,
        schema: JSON,
        name: str,
    ) -> JSON:
        shaped = strategy.shape(schema)
        extra: JSON = dict(self.profile.extra_body)
        if strategy.tier != "prompted":
            extra = merge_extra(extra, self.profile.schema_extra_body)
        request: JSON = {"model": self.model}
        if strategy.tier == "json_schema":
            request["response_format"] = {
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
        request["messages"] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]
        token_param = self.profile.token_param
        if MAX_COMPLETION_TOKENS in quirks:
            token_param = "max_completion_tokens"
        request[token_param] = self.max_tokens
        if OMIT_TEMPERATURE not in quirks:
            request["temperature"] = self.temperature
        effort = self.reasoning.effort(quirks)
        if effort is not None:
            asked = self.profile.effort_body(effort)
            if "reasoning_effort" in asked:
                request.update(asked)  # a parameter of the SDK's own
            else:
                extra = merge_extra(extra, asked)
        request["extra_body"] = extra or None
        return request

    async def _send(
        self, request: JSON, deadline: float | None, constrained: bool
    ) -> tuple[str | None, str | None, Any]:
        """One HTTP exchange with bounded retries; returns (content, finish_reason, the reply
        for its usage). ``constrained``: the request carries a schema for the server's grammar
        backend."""
        for attempt in range(self.max_retries + 1):
            try:
                with capped(self.max_reply_bytes):
                    response = await self._sdk.chat.completions.create(
                        **request, extra_headers=request_headers()
                    )
            except (
                openai.APIConnectionError,
                openai.RateLimitError,
                openai.InternalServerError,
            ) as exc:
                if constrained and isinstance(exc, openai.InternalServerError):
                    refusal = read_refusal(exc.body, str(exc.message))
                    if refusal.grammar_failed:
                        raise LLMUnsupported(
                            f"the grammar backend failed on this schema: {refusal.text}",
                            per_schema=True,
                        ) from exc
                if attempt == self.max_retries:
                    raise LLMUnavailable(
                        f"the LLM server did not answer after {attempt + 1} attempts: {exc}",
                        status=getattr(exc, "status_code", None),
                    ) from exc
                left = None if deadline is None else deadline - self._clock()
                delay = wait_before_retry(
                    exc, attempt, base_s=self.backoff_s, rng=self._rng, left_s=left
                )
                count_retry(exc)
                log.warning("llm call failed (%s), retrying in %.2fs", type(exc).__name__, delay)
                await self._sleep(delay)
                continue
            except openai.APIStatusError as exc:
                raise _status_error(exc) from exc
            except (openai.APIResponseValidationError, ValueError) as exc:
                # A 200 whose body is not JSON although it says so.
                raise LLMInvalidOutput(f"the LLM server's 200 is not JSON: {exc}") from exc
            return (*read_completion(response), response)
        raise AssertionError("unreachable")

    async def _attempt(
        self,
        strategy: Strategy,
        system: str,
        user: str,
        schema: JSON,
        name: str,
        validate: Callable[[Any], T],
        usage: Usage,
        deadline: float | None,
    ) -> T:
        """One strategy, sent again (at most once per parameter, or per step of the reasoning
        effort) while the model refuses an ordinary parameter that can be left out, renamed or
        raised."""
        tentative: frozenset[str] = frozenset()
        tried: set[frozenset[str]] = set()
        # Each refusal of the effort raises it or leaves it out: at most one per value and one
        # more; past that the server refuses something the client cannot change.
        effort_refusals = len(EFFORTS) + 1
        while True:
            quirks = self.memory.quirks(self._key) | tentative
            effort = self.reasoning.effort(quirks)
            try:
                content, finish, response = await self._send(
                    self._request(strategy, quirks, system, user, schema, name),
                    deadline,
                    strategy.tier != "prompted",
                )
            except LLMParameterRefused as exc:
                if exc.parameter == REASONING_EFFORT:
                    effort_refusals -= 1
                    if effort_refusals < 0:
                        raise LLMRejected(f"the LLM server keeps refusing: {exc.message}") from exc
                    self.reasoning.learn_refusal(exc, effort)
                    continue
                quirk = _QUIRK_FOR_PARAMETER[exc.parameter]
                if quirk in quirks:
                    raise LLMRejected(f"the LLM server keeps refusing: {exc.message}") from exc
                log.info("model %s refuses %s; sending without it", self.model, exc.parameter)
                self.memory.learn(self._key, quirk)
                continue
            except LLMUnsupported as exc:
                # Behind OpenRouter's require_parameters, a provider that refuses temperature 0
                # (reasoning models) or the reasoning effort (models that do not reason) looks
                # like one that refuses the schema: try without them first.
                if exc.no_endpoints:
                    tried.add(tentative)
                    retry = self.reasoning.routing_retry(tried)
                    if retry is not None:
                        tentative = retry
                        continue
                raise
            usage.add(strategy.name, response)  # spent, whatever becomes of the reply
            self.reasoning.learn_routing(tentative)
            if finish == "length":
                if not (content or "").strip() and reasoned(response):
                    raise spent_reasoning(effort, self.max_tokens)
                raise LLMTruncated(
                    f"the reply hit max_tokens={self.max_tokens} before the JSON was complete"
                )
            return validate(extract_json(content))

    async def complete_json(
        self,
        *,
        system: str,
        user: str,
        schema: JSON,
        schema_name: str,
        validate: Callable[[Any], T],
        deadline: float | None = None,
    ) -> Completion[T]:
        """Ask for JSON that fits ``schema``; ``validate`` turns it into T or raises
        LLMInvalidOutput. Raises the last LLMError when every strategy failed. ``deadline``
        (on the client's clock, ``time.monotonic`` unless injected) bounds the waits between
        retries; the caller still bounds the call itself."""
        started = time.perf_counter()
        strategies = self.profile.strategies
        fingerprint = hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()
        first = min(
            max(self.memory.start(self._key), self.memory.schema_start(self._key, fingerprint)),
            len(strategies) - 1,
        )
        last_error: LLMError | None = None
        usage = Usage()
        for index in range(first, len(strategies)):
            strategy = strategies[index]
            try:
                value = await measured(
                    strategy.name,
                    self.model,
                    usage,
                    self._attempt(
                        strategy, system, user, schema, schema_name, validate, usage, deadline
                    ),
                    self.profile.name,
                )
            except LLMUnsupported as exc:
                remembered = not exc.this_call_only
                if exc.per_schema:
                    log.info("llm tier %s cannot compile this schema: %s", strategy.name, exc)
                    self.memory.downgrade_schema(self._key, fingerprint, index + 1)
                elif remembered:
                    log.info("llm tier %s unsupported by %s: %s", strategy.name, self._key, exc)
                    self.memory.downgrade(self._key, index + 1)
                else:
                    log.info("llm tier %s refused this batch's schema: %s", strategy.name, exc)
                if index + 1 < len(strategies):  # the last tier has nowhere to go
                    count_downgrade(strategy.name, remembered)
                last_error = exc
                continue
            except LLMInvalidOutput as exc:
                # The server accepted the tier but the reply does not fit: try the next tier for
                # this call only; it may be a one-off of the model rather than the server.
                log.warning("llm tier %s gave invalid output: %s", strategy.name, exc.message)
                if index + 1 < len(strategies):
                    count_downgrade(strategy.name, remembered=False)
                last_error = exc
                continue
            seconds = time.perf_counter() - started
            log.info(
                "llm call served by tier %s (model %s, %.2fs)", strategy.name, self.model, seconds
            )
            return Completion(
                value,
                strategy.name,
                self.model,
                index - first + 1,
                seconds,
                usage.prompt,
                usage.completion,
            )
        assert last_error is not None
        if isinstance(last_error, LLMUnsupported):
            raise LLMRejected(
                f"no structured-output tier is supported by {self.model!r}: {last_error.message}"
            ) from last_error
        raise last_error
