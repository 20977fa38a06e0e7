"""Which sentences of each chunk support the answer: the LLM's choice, or the lexical selector's
with the reason the LLM's was not used.

The LLM gets what is left of the batch's deadline; past it, or as soon as the service starts to
shut down, the call is abandoned (its HTTP request cancelled) and the lexical selector answers
with ``llm_unavailable``. A reader waiting on a slow model gets highlights either way.

At most ``max_in_flight`` calls are in flight from this process: a burst does not pile onto the
LLM server (vLLM queues whatever it is sent, and every waiting batch would then run out of its
deadline together). A batch waits for a slot at most ``queue_timeout_s`` (never past its
deadline); without one it answers with the lexical selector and ``llm_busy`` at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from app.core import metrics, tracing
from app.highlights.cited import Choice
from app.highlights.contract import ChunkChoice, Selection, narrowed_schema, validate_reply
from app.highlights.prompts import PromptChunk, system_prompt, user_prompt
from app.highlights.schemas import HighlightBatchRequest, Method, Reason
from app.llm.errors import (
    LLMError,
    LLMInvalidOutput,
    LLMParameterRefused,
    LLMRejected,
    LLMTruncated,
    LLMUnavailable,
)
from app.selection.selection import Span, select_claims
from app.selection.sentences import Sentence
from app.selection.stats import DocumentStats
from app.selection.support import Verdict

if TYPE_CHECKING:  # the client imports openai (a second): built only when an LLM is set
    from app.llm.client import Completion, StructuredClient

log = logging.getLogger(__name__)
T = TypeVar("T")
# Per chunk id, the claims it is cited for (None: the answer as a whole).
Wanted = dict[str, list[Span]]
# Per chunk id, its document's term statistics (the lexical judge's word weights).
Stats = Mapping[str, DocumentStats]
# The LLM's verdict as a support score: it says which, not how much.
LLM_SCORES = {"supported": 1.0, "partial": 0.5, "unsupported": 0.0}


@dataclass
class Chosen:
    method: Method = "llm"
    tier: str | None = None
    per_chunk: dict[str, Choice] = field(default_factory=dict)
    # Says more than the reason's standard message (the deadline, a shutdown).
    note: str | None = None


# What a reader is told when the LLM failed, by the error's class (the first that matches).
# Anything else (all tiers unsupported, a bare LLMError) reads as the LLM being unavailable.
_LLM_REASONS: tuple[tuple[type[LLMError], Reason], ...] = (
    (LLMTruncated, Reason.llm_truncated),
    (LLMInvalidOutput, Reason.llm_invalid_output),
    (LLMRejected, Reason.llm_rejected),
    (LLMParameterRefused, Reason.llm_rejected),
    (LLMUnavailable, Reason.llm_unavailable),
)


def reason_for(exc: LLMError) -> Reason:
    return next((r for cls, r in _LLM_REASONS if isinstance(exc, cls)), Reason.llm_unavailable)


class Abandoned(Exception):
    pass


class Busy(Exception):
    """No LLM slot came free in time."""


class SentenceChooser:
    def __init__(
        self,
        llm: StructuredClient | None,
        max_per_chunk: int,
        *,
        max_in_flight: int,
        queue_timeout_s: float,
    ) -> None:
        self.llm = llm
        self.max_per_chunk = max_per_chunk
        self.max_in_flight = max_in_flight
        self.queue_timeout_s = queue_timeout_s
        self._slots = asyncio.Semaphore(max_in_flight)
        self._stopping = asyncio.Event()
        self._loop = asyncio.get_running_loop()

    def begin_shutdown(self) -> None:
        """Abandon every LLM wait now (callable from a signal handler or another thread)."""
        self._loop.call_soon_threadsafe(self._stopping.set)

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    @property
    def has_llm(self) -> bool:
        return self.llm is not None

    def lexical(
        self,
        request: HighlightBatchRequest,
        sentences: dict[str, list[Sentence]],
        wanted: Wanted,
        stats: Stats,
    ) -> dict[str, dict[Span, Verdict]]:
        """The word-overlap judge's verdicts for every chunk and claim (made for all chunks at
        once, even when the LLM failed only some: chunks without their document's statistics
        are weighed against the whole batch)."""
        return select_claims(
            sentences, request.answer, request.query, wanted, self.max_per_chunk, stats
        )

    async def lexical_only(
        self,
        request: HighlightBatchRequest,
        sentences: dict[str, list[Sentence]],
        wanted: Wanted,
        reason: Reason,
        stats: Stats,
    ) -> Chosen:
        """Every chunk by the lexical selector, e.g. the provisional answer a stream sends while
        the LLM thinks (in a worker thread: stemming and scoring a batch is CPU work)."""
        lexical = await asyncio.to_thread(self.lexical, request, sentences, wanted, stats)
        per_chunk = {
            cid: Choice.of(lexical[cid], reason) for cid, sents in sentences.items() if sents
        }
        return Chosen(method="lexical", per_chunk=per_chunk)

    async def _bounded(self, work: Awaitable[T], budget_s: float) -> T:
        """``work``'s result, unless the budget runs out or shutdown begins first."""
        task = asyncio.ensure_future(work)
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            done, _ = await asyncio.wait(
                {task, stop}, timeout=max(budget_s, 0.0), return_when=asyncio.FIRST_COMPLETED
            )
        except asyncio.CancelledError:
            # Our caller is cancelled (a stream's reader left): so is the work, or a slot it
            # was waiting for would be taken and never given back.
            task.cancel()
            raise
        finally:
            stop.cancel()
        if task in done:
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        raise Abandoned("shutdown" if self.stopping else "deadline")

    @contextlib.asynccontextmanager
    async def _slot(self, wait_s: float) -> AsyncIterator[None]:
        """One of this process's LLM slots, held for the block; raises Busy when none comes free
        within ``wait_s``, Abandoned when shutdown begins while waiting."""
        if self._slots.locked():
            metrics.LLM_QUEUED.inc()
            try:
                await self._bounded(self._slots.acquire(), wait_s)
            except Abandoned as exc:
                if str(exc) != "deadline":
                    raise
                metrics.LLM_REFUSED.inc()
                raise Busy from None
        else:
            await self._slots.acquire()  # free: returns at once
        metrics.LLM_IN_FLIGHT.inc()
        try:
            yield
        finally:
            metrics.LLM_IN_FLIGHT.dec()
            self._slots.release()

    async def _ask_llm(
        self,
        request: HighlightBatchRequest,
        sentences: dict[str, list[Sentence]],
        items: list[tuple[str, Span]],
        deadline: float,
    ) -> Completion[Selection]:
        assert self.llm is not None
        choices = [ChunkChoice(len(sentences[cid])) for cid, _ in items]
        limit = self.max_per_chunk
        answer = request.answer
        passages = [
            PromptChunk(cid, sentences[cid], None if span is None else answer[span[0] : span[1]])
            for cid, span in items
        ]
        # Every sentence of the batch, NFKC-normalised: tens of milliseconds for a full batch,
        # not on the loop.
        user = await asyncio.to_thread(user_prompt, request.query, answer, passages)
        completion = await self.llm.complete_json(
            system=system_prompt(limit),
            user=user,
            schema=narrowed_schema(choices, limit),
            schema_name="HighlightBatchResult",
            validate=lambda raw: validate_reply(raw, choices, limit),
            deadline=deadline,
        )
        if completion.value.dropped_ids or completion.value.extra_positions:
            log.warning(
                "dropped %d unknown ids and %d answers past the passages from the LLM reply",
                completion.value.dropped_ids,
                completion.value.extra_positions,
            )
        return completion

    async def choose(
        self,
        request: HighlightBatchRequest,
        sentences: dict[str, list[Sentence]],
        wanted: Wanted,
        budget_s: float,
        stats: Stats | None = None,
    ) -> Chosen:
        with tracing.span("choose") as span:
            chosen = await self._choose(request, sentences, wanted, budget_s, stats or {}, span)
            span.set_attribute("highlight.method", chosen.method)
            if chosen.tier:
                span.set_attribute("highlight.llm.tier", chosen.tier)
            return chosen

    async def _choose(
        self,
        request: HighlightBatchRequest,
        sentences: dict[str, list[Sentence]],
        wanted: Wanted,
        budget_s: float,
        stats: Stats,
        span: tracing.Span,
    ) -> Chosen:
        chosen = Chosen()
        fallback: Reason | None = Reason.llm_disabled if self.llm is None else None
        selection = Selection()
        # One passage per chunk and claim, in the order the chunks were cited.
        items = [
            (cid, claim) for cid, claims in wanted.items() if sentences[cid] for claim in claims
        ]
        if self.llm is not None and items:
            started = time.perf_counter()
            try:
                async with self._slot(min(self.queue_timeout_s, budget_s)):
                    left = budget_s - (time.perf_counter() - started)
                    # The client's retries wait no longer than this (time.monotonic, its clock).
                    deadline = time.monotonic() + left
                    completion = await self._bounded(
                        self._ask_llm(request, sentences, items, deadline), left
                    )
                # The tokens are on the LLM call's own span (llm/telemetry.py), not repeated here.
                selection, chosen.tier = completion.value, completion.strategy
            except Busy:
                fallback = Reason.llm_busy
                log.warning(
                    "no LLM slot within %.1f s (%d calls in flight in this process)",
                    min(self.queue_timeout_s, budget_s),
                    self.max_in_flight,
                )
            except LLMError as exc:
                log.warning("LLM selection failed (%s): %s", exc.kind, exc.message)
                fallback = reason_for(exc)
                if isinstance(exc, LLMUnavailable) and exc.retry_after_s is not None:
                    chosen.note = (
                        f"The LLM server answered HTTP {exc.status or 'error'} and asked to wait "
                        f"{exc.retry_after_s:.0f} s, past the batch deadline; sentences were "
                        "chosen by word overlap."
                    )
                if isinstance(exc, LLMTruncated) and exc.by_reasoning:
                    chosen.note = (
                        "The LLM spent its whole token budget reasoning before it answered; "
                        "sentences were chosen by word overlap."
                    )
            except Abandoned as exc:
                fallback = Reason.llm_unavailable
                if str(exc) == "deadline":
                    metrics.DEADLINE_HITS.inc()
                chosen.note = (
                    "The service is shutting down"
                    if str(exc) == "shutdown"
                    else f"The LLM did not answer within the batch deadline ({budget_s:.0f} s)"
                ) + "; sentences were chosen by word overlap."
                log.warning("LLM call abandoned: %s", exc)
            span.set_attribute("highlight.llm.outcome", fallback.value if fallback else "ok")
        by_llm: dict[str, dict[Span, Verdict]] = {}
        if fallback is None:
            for position, answer in selection.by_position.items():
                cid, claim = items[position]
                verdict = Verdict(tuple(answer.ids), answer.verdict, LLM_SCORES[answer.verdict])
                by_llm.setdefault(cid, {})[claim] = verdict
        # A chunk is the LLM's only when every claim it is cited for was answered.
        by_llm = {cid: got for cid, got in by_llm.items() if len(got) == len(wanted[cid])}
        lexical: dict[str, dict[Span, Verdict]] = {}
        if any(sents for cid, sents in sentences.items() if cid not in by_llm):
            # Stemming and scoring a whole batch takes tens of milliseconds: not on the loop.
            lexical = await asyncio.to_thread(self.lexical, request, sentences, wanted, stats)
        for cid, sents in sentences.items():
            if cid in by_llm:
                chosen.per_chunk[cid] = Choice.of(by_llm[cid])
            elif sents:
                chosen.per_chunk[cid] = Choice.of(
                    lexical[cid], fallback or Reason.llm_invalid_output
                )
        if fallback is not None or not chosen.tier:
            chosen.method = "lexical"
        return chosen
