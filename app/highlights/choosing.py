"""Which sentences of each chunk support the answer: the LLM's choice, or the lexical selector's
with the reason the LLM's was not used.

The LLM gets what is left of the batch's deadline; past it, or as soon as the service starts to
shut down, the call is abandoned (its HTTP request cancelled) and the lexical selector answers
with ``llm_unavailable``. A reader waiting on a slow model gets highlights either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TypeVar

from app.highlights.cited import Choice
from app.highlights.contract import ChunkChoice, Selection, narrowed_schema, validate_reply
from app.highlights.prompts import PromptChunk, system_prompt, user_prompt
from app.highlights.schemas import HighlightBatchRequest, Reason
from app.llm.client import StructuredClient
from app.llm.errors import (
    LLMError,
    LLMInvalidOutput,
    LLMParameterRefused,
    LLMRejected,
    LLMTruncated,
    LLMUnavailable,
)
from app.selection.selection import select_batch
from app.selection.sentences import Sentence

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class Chosen:
    method: str = "llm"
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


class SentenceChooser:
    def __init__(self, llm: StructuredClient | None, max_per_chunk: int) -> None:
        self.llm = llm
        self.max_per_chunk = max_per_chunk
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
        self, request: HighlightBatchRequest, sentences: dict[str, list[Sentence]]
    ) -> dict[str, list[int]]:
        """The lexical choice for every chunk: terms are weighed against the whole batch, so it is
        made for all chunks at once even when the LLM failed only some of them."""
        return select_batch(sentences, request.answer, request.query, self.max_per_chunk)

    async def lexical_only(
        self, request: HighlightBatchRequest, sentences: dict[str, list[Sentence]], reason: Reason
    ) -> Chosen:
        """Every chunk by the lexical selector, e.g. the provisional answer a stream sends while
        the LLM thinks (in a worker thread: stemming and scoring a batch is CPU work)."""
        lexical = await asyncio.to_thread(self.lexical, request, sentences)
        per_chunk = {
            cid: Choice(tuple(lexical[cid]), reason) for cid, sents in sentences.items() if sents
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
        finally:
            stop.cancel()
        if task in done:
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        raise Abandoned("shutdown" if self.stopping else "deadline")

    async def _ask_llm(
        self, request: HighlightBatchRequest, sentences: dict[str, list[Sentence]]
    ) -> tuple[Selection, str]:
        assert self.llm is not None
        ids = [cid for cid, sents in sentences.items() if sents]
        choices = [ChunkChoice(cid, len(sentences[cid])) for cid in ids]
        limit = self.max_per_chunk
        # Every sentence of the batch, NFKC-normalised: tens of milliseconds for a full batch,
        # not on the loop.
        user = await asyncio.to_thread(
            user_prompt, request.query, request.answer, [PromptChunk(c, sentences[c]) for c in ids]
        )
        completion = await self.llm.complete_json(
            system=system_prompt(limit),
            user=user,
            schema=narrowed_schema(choices, limit),
            schema_name="HighlightBatchResult",
            validate=lambda raw: validate_reply(raw, choices, limit),
        )
        if completion.value.dropped_ids:
            log.warning("dropped %d unknown ids from the LLM reply", completion.value.dropped_ids)
        return completion.value, completion.strategy

    async def choose(
        self,
        request: HighlightBatchRequest,
        sentences: dict[str, list[Sentence]],
        budget_s: float,
    ) -> Chosen:
        chosen = Chosen()
        fallback: Reason | None = Reason.llm_disabled if self.llm is None else None
        selection = Selection()
        if self.llm is not None and any(sentences.values()):
            try:
                selection, chosen.tier = await self._bounded(
                    self._ask_llm(request, sentences), budget_s
                )
            except LLMError as exc:
                log.warning("LLM selection failed (%s): %s", exc.kind, exc.message)
                fallback = reason_for(exc)
            except Abandoned as exc:
                fallback = Reason.llm_unavailable
                chosen.note = (
                    "The service is shutting down"
                    if str(exc) == "shutdown"
                    else f"The LLM did not answer within the batch deadline ({budget_s:.0f} s)"
                ) + "; sentences were chosen by word overlap."
                log.warning("LLM call abandoned: %s", exc)
        by_llm = set(selection.by_chunk) if fallback is None else set()
        lexical: dict[str, list[int]] = {}
        if any(sents for cid, sents in sentences.items() if cid not in by_llm):
            # Stemming and scoring a whole batch takes tens of milliseconds: not on the loop.
            lexical = await asyncio.to_thread(self.lexical, request, sentences)
        for cid, sents in sentences.items():
            if cid in by_llm:
                chosen.per_chunk[cid] = Choice(tuple(selection.by_chunk[cid]))
            elif sents:
                chosen.per_chunk[cid] = Choice(
                    tuple(lexical[cid]), fallback or Reason.llm_invalid_output
                )
        if fallback is not None or not chosen.tier:
            chosen.method = "lexical"
        return chosen
