"""The batch use case: chunk ids in, per-citation highlights with PDF rectangles out.

Nothing an upstream does makes this raise: a missing chunk, an LLM that is down or answers badly,
a PDF that is gone or has no text layer each become a per-citation status with a reason, and the
lexical selector stands in for the LLM so readers still get highlights.

The steps, shared by the batch and the stream (streaming.py), each carrying one record per cited
chunk (cited.py): ``prepare`` (limits, chunks from the database, the cache key, a miss's
sentences), ``cached`` (the result cache), ``choose`` (choosing.py: the LLM, or the lexical
selector with a reason), ``compute`` (place the chosen sentences, in a worker thread, and answer
each citation), ``remember`` (cache the answer and store its highlights by id). Links are added
last, per caller (results.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session

from app.core import tracing
from app.core.errors import AppError
from app.core.formats import TEXT
from app.db.spans import transaction_attributes
from app.db.threaded import run_transaction
from app.documents.links import PdfLinks
from app.highlights import repository
from app.highlights.batch_log import log_batch
from app.highlights.cache import cache_key, cacheable, etag
from app.highlights.choosing import Chosen, SentenceChooser
from app.highlights.cited import (
    NOTHING_CHOSEN,
    Cited,
    CitedChunk,
    StoredChunk,
    sentences,
    sentences_of,
)
from app.highlights.claims import CitationClaims, citation_claims, wanted_claims
from app.highlights.errors import BatchTooLarge
from app.highlights.limits import Limits
from app.highlights.locating import locate_chunks, locate_text
from app.highlights.results import batch_status, not_found, with_links
from app.highlights.schemas import (
    HighlightBatchRequest,
    HighlightBatchResponse,
    Reason,
)
from app.highlights.sources import SourceText, SourceTexts, with_selectors
from app.highlights.stored import forget_other_content
from app.highlights.storing import HighlightWriter, highlight_rows, now
from app.highlights.term_stats import TermStatistics
from app.pdfs.index_cache import IndexCache
from app.pdfs.indexing import IndexWait, open_index
from app.pdfs.storage import PdfStorage
from app.selection.selection import Span
from app.selection.stats import DocumentStats

if TYPE_CHECKING:  # the client imports openai (a second): built only when an LLM is set
    from app.llm.client import StructuredClient

log = logging.getLogger(__name__)


# What prepare's transaction read: the cited chunks, the cache key, a cached answer, whether
# some of its highlight rows are missing, the chunks (id, text) of the documents whose term
# statistics or text (highlights/sources.py) this process does not keep, the texts it keeps, and
# the own texts of the PDFs among those it does not keep (their chunks placed in them).
_Read = tuple[
    dict[str, StoredChunk],
    str,
    "HighlightBatchResponse | None",
    bool,
    dict[str, list[tuple[str, str]]],
    dict[str, SourceText],
    dict[str, SourceText],
]


@dataclass(frozen=True)
class Batch:
    request: HighlightBatchRequest
    # The cited chunks that are stored; without sentences when ``cached`` is set (not split).
    cited: Cited
    key: str
    cached: HighlightBatchResponse | None
    started: float
    # A cached answer whose highlight rows were deleted since (the document's content changed
    # and came back): they are stored again before the answer is sent.
    rows_missing: bool = False
    # Per citation, the claims its markers close; per stored chunk, the claims it is chosen for.
    claims: CitationClaims = field(default_factory=list)
    wanted: dict[str, list[Span]] = field(default_factory=dict)
    # Per cited chunk, its document's term statistics (the word-overlap judge's weights).
    stats: dict[str, DocumentStats] = field(default_factory=dict)
    # Per cited chunk, its document's text (the selectors' text), and which are web pages.
    sources: dict[str, SourceText] = field(default_factory=dict)

    @property
    def web(self) -> set[str]:
        return {cid for cid, record in self.cited.items() if record.chunk.source_format == "html"}

    def budget(self, deadline_s: float) -> float:
        return deadline_s - (time.perf_counter() - self.started)


@dataclass(frozen=True)
class BatchAnswer:
    response: HighlightBatchResponse
    body: bytes
    etag: str
    cache_hit: bool


def _parsed(stored: str) -> HighlightBatchResponse | None:
    try:
        return HighlightBatchResponse.model_validate_json(stored)
    except ValidationError:
        log.warning("ignoring a cached answer that no longer fits the response model")
        return None


class HighlightService:
    def __init__(
        self,
        *,
        session_factory: async_sessionmaker[AsyncSession],
        llm: StructuredClient | None,
        index_cache: IndexCache,
        storage: PdfStorage,
        limits: Limits,
    ) -> None:
        self.session_factory = session_factory
        self.index_cache = index_cache
        self.storage = storage
        self.limits = limits
        self.chooser = SentenceChooser(
            llm,
            limits.max_highlights_per_chunk,
            max_in_flight=limits.llm_max_in_flight,
            queue_timeout_s=limits.llm_queue_timeout_s,
        )
        # What the result cache keys on: another model or other request settings, another answer.
        self.llm_identity = llm.identity if llm is not None else {"provider": "none"}
        self._settings = {
            "max_highlights_per_chunk": limits.max_highlights_per_chunk,
            "max_sentences_per_chunk": limits.max_sentences_per_chunk,
            # Scanned pages read or not read by OCR answer differently (no_text_layer is kept).
            "ocr": index_cache.ocr.tag() if index_cache.ocr is not None else "off",
        }
        self.term_stats = TermStatistics()
        self.source_texts = SourceTexts()
        self._index_wait = IndexWait(
            limits.index_wait_s, limits.index_wait_page_s, limits.index_wait_max_s
        )
        self.writer = HighlightWriter(session_factory, limits.result_cache_ttl_s)
        self._warmers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="warm-index")

    def begin_shutdown(self) -> None:
        self.chooser.begin_shutdown()

    def close(self) -> None:
        # Index warm-ups still running finish in their threads; nothing waits for them.
        self._warmers.shutdown(wait=False)

    @property
    def shutting_down(self) -> bool:
        return self.chooser.stopping

    async def document_changed(
        self, document_id: str, source_path: str, sha256: str, source_format: str = "pdf"
    ) -> None:
        """After a document's new content is committed (a background task of the PUT): forget
        the highlights of its earlier content, and build the new content's text index (a web or
        text source has none). Failures only log: reads skip stale highlights, and a batch
        reports an index it cannot build."""
        try:
            await forget_other_content(self.session_factory, document_id)
        except Exception as exc:  # an outage: the rows wait for the next change
            log.warning("could not delete the old highlights of %s: %r", document_id, exc)
        if source_format in TEXT:
            return
        # Its own threads, not asyncio's default pool: reading a scan takes minutes, and a few
        # uploads at once would otherwise hold every thread the batches' locating needs.
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._warmers, self.warm_index, source_path, sha256)

    def warm_index(self, source_path: str, sha256: str) -> None:
        """Blocking: build (or load) a document's text index ahead of its first highlight request,
        which would otherwise pay for it (about 1 s of CPU for a 350-page book). Failures only
        log: the request path reports them properly when it meets the same PDF."""
        try:
            open_index(self.storage, self.index_cache, source_path, sha256)
        except AppError as exc:  # PdfTooComplex, PdfMissing, PdfChanged: a reason, not a bug
            log.warning("could not pre-build the text index of %s: %s", source_path, exc.message)
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
                raise BatchTooLarge(
                    f"{name} has {size} {unit}; this service accepts at most {limit}"
                )

    async def prepare(self, request: HighlightBatchRequest) -> Batch:
        """Everything that can fail the request itself (422, 503) happens here, before a stream
        starts. One short transaction: no connection is held while the LLM thinks."""
        started = time.perf_counter()
        self._check_limits(request)
        async with tracing.async_span("db.read", transaction_attributes(self.session_factory)):
            # One transaction, run whole in a thread on SQLite (db/threaded.py).
            chunks, key, cached, rows_missing, texts, held, own = await run_transaction(
                self.session_factory, lambda session: self._read(session, request)
            )
        if cached is not None and not await self._files_unchanged(chunks):
            cached = None
        sources = self.source_texts.of(chunks, texts, held, own)
        # A cached answer needs no sentences; a miss splits its chunks off the loop.
        if cached is not None:
            batch = Batch(
                request,
                {cid: CitedChunk(chunk) for cid, chunk in chunks.items()},
                key,
                cached,
                started,
                rows_missing,
                sources=sources,
            )
            # Selectors on every answer sent: one cached before they existed gets them too. Off
            # the loop: each scans its document's text (a 10-K's 1.5 MB: 0.3 ms a highlight).
            selected = await asyncio.to_thread(with_selectors, cached, sources, batch.web)
            return replace(batch, cached=selected)
        # Splitting chunks and finding claims is CPU work (a 20,000-character answer, thousands
        # of markers): off the loop.
        cited, claims, stats = await asyncio.to_thread(
            lambda: (
                self._split(chunks),
                citation_claims(request),
                self.term_stats.of(
                    chunks, {doc: [text for _, text in rows] for doc, rows in texts.items()}
                ),
            )
        )
        wanted = wanted_claims(request, claims, cited)
        return Batch(request, cited, key, None, started, False, claims, wanted, stats, sources)

    def _read(self, session: Session, request: HighlightBatchRequest) -> _Read:
        """``prepare``'s transaction: the cited chunks, the cache key and a cached answer, and on
        a miss the texts of the documents whose term statistics are not kept yet."""
        chunks = repository.stored_chunks(session, [c.chunk_id for c in request.citations])
        key = cache_key(request, chunks, self.llm_identity, self._settings)
        cached, rows_missing = None, False
        if self.limits.result_cache_ttl_s > 0:
            stored = repository.cached_response(
                session, key, now() - timedelta(seconds=self.limits.result_cache_ttl_s)
            )
            cached = _parsed(stored) if stored else None
        ids = {h.highlight_id for r in cached.results for h in r.highlights} if cached else set()
        if ids:
            # In this transaction, so a hit whose highlight rows all exist costs no other.
            rows_missing = bool(ids - repository.stored_highlight_ids(session, ids))
        # A miss judges support by word weights over whole documents: read the texts of
        # those whose weights are not kept yet (the first batch on a document); every answer's
        # selectors need the documents' texts.
        wanted = self.term_stats.missing(chunks) if cached is None else set()
        held = self.source_texts.held(chunks)
        unheld = {chunk.document_id for cid, chunk in chunks.items() if cid not in held}
        texts = repository.document_texts(session, wanted | unheld)
        own = {
            doc: SourceText(text, offsets)
            for doc, (text, offsets) in repository.own_texts(session, unheld).items()
        }
        return chunks, key, cached, rows_missing, texts, held, own

    def _split(self, chunks: Mapping[str, StoredChunk]) -> Cited:
        cap = self.limits.max_sentences_per_chunk
        return {cid: CitedChunk(chunk, sentences(chunk.text, cap)) for cid, chunk in chunks.items()}

    async def _files_unchanged(self, chunks: Mapping[str, StoredChunk]) -> bool:
        """Whether a cached answer still holds: the stored hashes in its key cannot see a PDF
        replaced on disk without re-ingest."""
        files = {(c.source_path, c.sha256) for c in chunks.values()}

        def verify_all() -> None:
            for source_path, sha256 in files:
                self.storage.verify(source_path, sha256)

        try:
            # One trip to a thread for all of them: a hit costs little besides its thread trips.
            await asyncio.to_thread(verify_all)
        except Exception as exc:  # PdfChanged, PdfMissing: recompute, which reports it
            log.info("cached answer not used: %s", exc)
            return False
        return True

    @property
    def has_llm(self) -> bool:
        return self.chooser.has_llm

    async def choose(self, batch: Batch) -> Chosen:
        """The LLM's choice within what is left of the batch's deadline, or the lexical
        selector's with the reason."""
        budget = batch.budget(self.limits.batch_deadline_s)
        return await self.chooser.choose(
            batch.request, sentences_of(batch.cited), batch.wanted, budget, batch.stats
        )

    async def choose_lexically(self, batch: Batch, reason: Reason) -> Chosen:
        """Every chunk by the lexical selector, e.g. the provisional answer a stream sends while
        the LLM thinks."""
        return await self.chooser.lexical_only(
            batch.request, sentences_of(batch.cited), batch.wanted, reason, batch.stats
        )

    async def compute(
        self, batch: Batch, chosen: Chosen, earlier: Cited | None = None
    ) -> tuple[HighlightBatchResponse, Cited]:
        """Place the chosen sentences (in a worker thread: PyMuPDF and rapidfuzz block) and
        answer each citation, without links. ``earlier``: the records of an earlier computation
        of this batch, whose placements are kept where the choice names the same sentences."""
        base = earlier or batch.cited
        cited = {cid: base[cid].chose(chosen.per_chunk.get(cid, NOTHING_CHOSEN)) for cid in base}
        todo = [record.job() for record in cited.values() if record.location is None]
        # A web or text source has no PDF: its sentences are spans of its text.
        for job in [job for job in todo if cited[job.chunk_id].chunk.source_format in TEXT]:
            cited[job.chunk_id] = cited[job.chunk_id].located(locate_text(job))
            todo.remove(job)
        if todo:
            with tracing.span("locate", {"highlight.chunks": len(todo)}):
                located = await asyncio.to_thread(
                    locate_chunks, self.storage, self.index_cache, todo, self._index_wait
                )
            for cid, location in located.items():
                cited[cid] = cited[cid].located(location)
        results = [
            cited[c.chunk_id].result(c.citation_id, claims, chosen.note)
            if c.chunk_id in cited
            else not_found(c.chunk_id, c.citation_id)
            for c, claims in zip(batch.request.citations, batch.claims, strict=True)
        ]
        response = HighlightBatchResponse(
            status=batch_status(results),
            method=chosen.method,
            llm_tier=chosen.tier,
            results=results,
        )
        selected = await asyncio.to_thread(with_selectors, response, batch.sources, batch.web)
        return selected, cited

    async def remember(self, batch: Batch, response: HighlightBatchResponse) -> None:
        """Store the highlights by id (the viewer and page previews read them) and cache the
        answer when it would come out the same again, before the answer is sent: every id in
        an answer can be fetched. Raises DatabaseUnavailable when that cannot be done."""
        store = self.limits.result_cache_ttl_s > 0 and cacheable(response)
        rows = highlight_rows(batch.cited, response)
        await self.writer.store(rows, (batch.key, response.model_dump_json()) if store else None)

    async def keep_highlights(self, batch: Batch, response: HighlightBatchResponse) -> None:
        """Make sure every highlight of ``response`` is stored: a cached answer may outlive its
        rows (a document put back to earlier content had them deleted in between), and a
        provisional stream event carries ids too. Reads first, so the usual case writes
        nothing."""
        await self.writer.store(highlight_rows(batch.cited, response), None, only_missing=True)

    async def answer(self, batch: Batch) -> HighlightBatchResponse:
        """The batch's answer without links: from the cache, or chosen, placed and remembered."""
        if batch.cached is not None:
            if batch.rows_missing:
                await self.keep_highlights(batch, batch.cached)
            return batch.cached
        response, _ = await self.compute(batch, await self.choose(batch))
        await self.remember(batch, response)
        return response

    async def highlight_batch(
        self, request: HighlightBatchRequest, links: PdfLinks | None = None
    ) -> BatchAnswer:
        with tracing.span("batch", {"highlight.citations": len(request.citations)}):
            batch = await self.prepare(request)
            response = with_links(await self.answer(batch), links or PdfLinks())
            self.log_batch(batch, response)
        body = response.model_dump_json().encode()
        return BatchAnswer(response, body, etag(body), batch.cached is not None)

    def log_batch(self, batch: Batch, response: HighlightBatchResponse) -> None:
        """A batch's one log line and its metrics, for its final answer (batch or stream)."""
        log_batch(response, cached=batch.cached is not None, started=batch.started)
