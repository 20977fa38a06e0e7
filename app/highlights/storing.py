"""Writing a batch's answer down: its highlights by id (the viewer and page previews read them)
and, when it would come out the same again, the answer in the result cache.

A stored highlight keeps what its id covers (the sentence, its place in the chunk, its
rectangles), not its selectors: those index the document's whole text, which changes when another
chunk does, and are computed again on every read (sources.py, stored.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session

from app.core import tracing
from app.core.errors import DatabaseUnavailable, WriteConflict
from app.db.session import transaction
from app.db.spans import transaction_attributes
from app.db.threaded import in_thread_transaction
from app.highlights import repository
from app.highlights.cited import CitedChunk
from app.highlights.schemas import HighlightBatchResponse

log = logging.getLogger(__name__)
# Old cache rows are deleted at most this often per process (on a write).
PRUNE_EVERY_S = 600.0
# Storing a batch's highlights is tried again after a deadlock or serialization failure.
STORE_ATTEMPTS = 4


def now() -> datetime:
    return datetime.now(UTC)


def highlight_rows(
    cited: Mapping[str, CitedChunk], response: HighlightBatchResponse
) -> list[dict[str, object]]:
    """One row per highlight id of ``response``; ``cited``: the batch's records by chunk id."""
    at = now()
    rows: dict[str, dict[str, object]] = {
        h.highlight_id: {
            "id": h.highlight_id,
            "document_id": r.document_id,
            "document_sha256": cited[r.chunk_id].chunk.sha256,
            "chunk_id": r.chunk_id,
            "page": h.page,
            # The claims are this answer's; a highlight by id belongs to none. The selectors
            # are the document text's as it is now: computed on each read instead.
            "data": h.model_copy(
                update={"claims": [], "selectors": [], "text_fragment": None}
            ).model_dump_json(),
            "created_at": at,
        }
        for r in response.results
        for h in r.highlights
    }
    return list(rows.values())


class HighlightWriter:
    def __init__(
        self, session_factory: async_sessionmaker[AsyncSession], result_cache_ttl_s: float
    ) -> None:
        self.session_factory = session_factory
        self.result_cache_ttl_s = result_cache_ttl_s
        self._last_prune = 0.0

    async def store(
        self,
        rows: list[dict[str, object]],
        cache: tuple[str, str] | None,
        only_missing: bool = False,
    ) -> None:
        """The highlight rows and, when given, the cached answer (key, JSON), in one
        transaction retried after a lost race (a deadlock, a serialization failure)."""
        if not rows and cache is None:
            return

        def write(session: Session) -> None:
            todo = rows
            if only_missing and rows:
                present = repository.stored_highlight_ids(session, [str(row["id"]) for row in rows])
                todo = [row for row in rows if row["id"] not in present]
            repository.store_highlights(session, todo)
            if cache is not None:
                repository.put_response(session, *cache, now())

        try:
            attributes = transaction_attributes(self.session_factory) or {}
            with tracing.span("db.write", {**attributes, "highlight.rows": len(rows)}):
                # combine: on SQLite, with other batches' writes waiting (db/write_queue.py).
                await in_thread_transaction(
                    self.session_factory, write, attempts=STORE_ATTEMPTS, combine=True
                )
        except WriteConflict:
            raise DatabaseUnavailable(
                "the answer's highlights could not be stored (the database kept refusing the "
                "write); retry the request"
            ) from None
        if cache is not None and time.monotonic() - self._last_prune > PRUNE_EVERY_S:
            self._last_prune = time.monotonic()
            await self._prune()

    async def _prune(self) -> None:
        expired = now() - timedelta(seconds=self.result_cache_ttl_s)
        try:
            async with transaction(self.session_factory) as session:
                await repository.prune_responses(session, expired)
        except Exception:  # old cache rows stay a little longer; nothing is wrong
            log.warning("could not delete expired cached answers", exc_info=True)
