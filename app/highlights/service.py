"""The batch use case: chunk ids in, per-citation highlights with PDF rectangles out.

Nothing an upstream does makes this raise: a missing chunk, an LLM that is down or answers badly,
a PDF that is gone or has no text layer each become a per-citation status with a reason, and the
lexical selector stands in for the LLM so readers still get highlights.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.alignment.index import IndexCache
from app.alignment.sentences import Sentence, split_sentences
from app.core.errors import BadRequest
from app.db.session import transaction
from app.documents import repository
from app.documents.service import resolve_under_root
from app.highlights.contract import ChunkChoice, Selection, narrowed_schema, validate_reply
from app.highlights.locating import ChunkLocation, LocateJob, locate_chunks
from app.highlights.prompts import PromptChunk, system_prompt, user_prompt
from app.highlights.schemas import (
    CitationResult,
    CitationStatus,
    Highlight,
    HighlightBatchRequest,
    HighlightBatchResponse,
    Reason,
)
from app.highlights.selection import select_sentences
from app.llm.client import StructuredClient
from app.llm.errors import LLMError

log = logging.getLogger(__name__)

MESSAGES: dict[Reason, str] = {
    Reason.chunk_not_found: "No chunk with this id is stored; it may not have been ingested yet.",
    Reason.pdf_unavailable: "The document's PDF could not be opened; showing the page link only.",
    Reason.pdf_changed: "The PDF changed since it was ingested; re-ingest the document.",
    Reason.no_text_layer: "The cited pages have no text layer (a scan without OCR).",
    Reason.not_located: "The supporting sentences could not be found reliably on the PDF pages.",
    Reason.no_relevant_sentences: "No sentence of this chunk was judged to support the answer.",
    Reason.no_sentences: "The chunk has no text to highlight.",
    Reason.llm_disabled: "No LLM is configured; sentences were chosen by word overlap.",
    Reason.llm_unavailable: "The LLM could not be reached; sentences were chosen by word overlap.",
    Reason.llm_rejected: "The LLM refused the request; sentences were chosen by word overlap.",
    Reason.llm_truncated: "The LLM's reply was cut off; sentences were chosen by word overlap.",
    Reason.llm_invalid_output: (
        "The LLM's reply was unusable; sentences were chosen by word overlap."
    ),
}


@dataclass(frozen=True)
class Limits:
    max_citations: int
    max_query_chars: int
    max_answer_chars: int
    max_sentences_per_chunk: int
    max_highlights_per_chunk: int


@dataclass(frozen=True)
class StoredChunk:
    id: str
    document_id: str
    text: str
    page_start: int
    page_end: int
    pdf_path: Path | None
    sha256: str


@dataclass
class Choice:
    """What was chosen for one chunk, and why the LLM did not choose it (when it did not)."""

    sentence_ids: list[int]
    reason: Reason | None


@dataclass
class Chosen:
    method: str = "llm"
    tier: str | None = None
    per_chunk: dict[str, Choice] = field(default_factory=dict)


class HighlightService:
    def __init__(
        self,
        *,
        session_factory: async_sessionmaker[AsyncSession],
        llm: StructuredClient | None,
        index_cache: IndexCache,
        pdf_root: Path,
        limits: Limits,
    ) -> None:
        self.session_factory = session_factory
        self.llm = llm
        self.index_cache = index_cache
        self.pdf_root = pdf_root
        self.limits = limits

    def warm_index(self, source_path: str, sha256: str) -> None:
        """Blocking: build (or load) a document's text index ahead of its first highlight request,
        which would otherwise pay for it (about 2 s for a 350-page book). Failures only log: the
        request path reports them properly when it meets the same PDF."""
        try:
            self.index_cache.get(resolve_under_root(self.pdf_root, source_path), sha256)
        except Exception:
            log.warning("could not pre-build the text index of %s", source_path, exc_info=True)

    def _check_limits(self, request: HighlightBatchRequest) -> None:
        checks = [
            ("citations", len(request.citations), self.limits.max_citations, "items"),
            ("query", len(request.query), self.limits.max_query_chars, "characters"),
            ("answer", len(request.answer), self.limits.max_answer_chars, "characters"),
        ]
        for name, size, limit, unit in checks:
            if size > limit:
                raise BadRequest(f"{name} has {size} {unit}; this service accepts at most {limit}")

    async def _load(self, chunk_ids: list[str]) -> dict[str, StoredChunk]:
        # A short transaction of its own: no connection is held while the LLM thinks.
        async with transaction(self.session_factory) as session:
            rows = await repository.get_chunks(session, chunk_ids)
            out: dict[str, StoredChunk] = {}
            for chunk in rows.values():
                try:
                    pdf: Path | None = resolve_under_root(self.pdf_root, chunk.document.source_path)
                except BadRequest:
                    pdf = None
                out[chunk.id] = StoredChunk(
                    chunk.id,
                    chunk.document_id,
                    chunk.text,
                    chunk.page_start,
                    chunk.page_end,
                    pdf,
                    chunk.document.sha256,
                )
            return out

    def _lexical(
        self, request: HighlightBatchRequest, sentences: list[Sentence], reason: Reason
    ) -> Choice:
        ids = select_sentences(
            sentences, request.answer, request.query, self.limits.max_highlights_per_chunk
        )
        return Choice(ids, reason)

    async def _ask_llm(
        self, request: HighlightBatchRequest, sentences: dict[str, list[Sentence]]
    ) -> tuple[Selection, str]:
        assert self.llm is not None
        ids = [cid for cid, sents in sentences.items() if sents]
        choices = [ChunkChoice(cid, len(sentences[cid])) for cid in ids]
        limit = self.limits.max_highlights_per_chunk
        completion = await self.llm.complete_json(
            system=system_prompt(limit),
            user=user_prompt(
                request.query, request.answer, [PromptChunk(c, sentences[c]) for c in ids]
            ),
            schema=narrowed_schema(choices, limit),
            schema_name="HighlightBatchResult",
            validate=lambda raw: validate_reply(raw, choices, limit),
        )
        if completion.value.dropped_ids:
            log.warning("dropped %d unknown ids from the LLM reply", completion.value.dropped_ids)
        return completion.value, completion.strategy

    async def _choose(
        self, request: HighlightBatchRequest, sentences: dict[str, list[Sentence]]
    ) -> Chosen:
        chosen = Chosen()
        fallback_reason: Reason | None = Reason.llm_disabled if self.llm is None else None
        selection = Selection()
        if self.llm is not None and any(sentences.values()):
            try:
                selection, chosen.tier = await self._ask_llm(request, sentences)
            except LLMError as exc:
                log.warning("LLM selection failed (%s): %s", exc.reason, exc.message)
                known = exc.reason in Reason.__members__
                fallback_reason = Reason(exc.reason) if known else Reason.llm_unavailable
        for cid, sents in sentences.items():
            if fallback_reason is None and cid in selection.by_chunk:
                chosen.per_chunk[cid] = Choice(selection.by_chunk[cid], None)
            elif sents:
                reason = fallback_reason or Reason.llm_invalid_output
                chosen.per_chunk[cid] = self._lexical(request, sents, reason)
        if fallback_reason is not None or not chosen.tier:
            chosen.method = "lexical"
        return chosen

    async def highlight_batch(
        self, request: HighlightBatchRequest, link_prefix: str = ""
    ) -> HighlightBatchResponse:
        started = time.perf_counter()
        self._check_limits(request)
        chunks = await self._load([c.chunk_id for c in request.citations])
        cap = self.limits.max_sentences_per_chunk
        sentences = {cid: split_sentences(chunk.text)[:cap] for cid, chunk in chunks.items()}
        chosen = await self._choose(request, sentences)
        jobs = [
            LocateJob(
                chunk_id=cid,
                pdf_path=chunk.pdf_path,
                sha256=chunk.sha256,
                pages=(chunk.page_start, chunk.page_end),
                sentences=[
                    sentences[cid][i - 1]
                    for i in chosen.per_chunk.get(cid, Choice([], None)).sentence_ids
                ],
            )
            for cid, chunk in chunks.items()
        ]
        # PyMuPDF and rapidfuzz are blocking: all of it runs in one worker thread.
        located = await asyncio.to_thread(locate_chunks, self.index_cache, jobs)
        results = [
            self._result(c.chunk_id, c.citation_id, chunks, sentences, chosen, located, link_prefix)
            for c in request.citations
        ]
        highlighted = sum(r.status == CitationStatus.highlighted for r in results)
        log.info(
            "batch: %d citations, %d highlighted, method %s, tier %s, reasons %s, %.0f ms",
            len(results),
            highlighted,
            chosen.method,
            chosen.tier,
            sorted({r.reason.value for r in results if r.reason}),
            (time.perf_counter() - started) * 1000,
        )
        status = (
            "complete" if highlighted == len(results) else "partial" if highlighted else "fallback"
        )
        return HighlightBatchResponse(
            status=status,
            method="llm" if chosen.method == "llm" else "lexical",
            llm_tier=chosen.tier,
            results=results,
        )

    def _result(
        self,
        chunk_id: str,
        citation_id: str | None,
        chunks: dict[str, StoredChunk],
        sentences: dict[str, list[Sentence]],
        chosen: Chosen,
        located: dict[str, ChunkLocation],
        link_prefix: str,
    ) -> CitationResult:
        chunk = chunks.get(chunk_id)
        if chunk is None:
            return CitationResult(
                citation_id=citation_id,
                chunk_id=chunk_id,
                document_id=None,
                status=CitationStatus.fallback,
                reason=Reason.chunk_not_found,
                message=MESSAGES[Reason.chunk_not_found],
                link=None,
            )
        choice = chosen.per_chunk.get(chunk_id, Choice([], None))
        location = located[chunk_id]
        highlights: list[Highlight] = location.highlights
        status, reason = CitationStatus.highlighted, choice.reason
        if not highlights:
            status = CitationStatus.no_match
            if location.error is not None:
                status, reason = CitationStatus.fallback, location.error
            elif not sentences[chunk_id]:
                reason = Reason.no_sentences
            elif not choice.sentence_ids:
                # After an LLM failure the empty choice is the weaker selector's: name the cause.
                reason = choice.reason or Reason.no_relevant_sentences
            else:
                reason = Reason.not_located
        message = MESSAGES[reason] if reason else None
        if not highlights and reason == choice.reason and reason is not None:
            message = f"{MESSAGES[reason]} None of them echoes the answer."
        page = highlights[0].page if highlights else chunk.page_start
        link = f"{link_prefix}/v2/documents/{quote(chunk.document_id, safe='')}/pdf#page={page}"
        return CitationResult(
            citation_id=citation_id,
            chunk_id=chunk_id,
            document_id=chunk.document_id,
            status=status,
            reason=reason,
            message=message,
            page_start=chunk.page_start,
            page_end=chunk.page_end,
            link=link,
            highlights=highlights,
        )
