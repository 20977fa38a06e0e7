"""Highlights by id, after the batch that found them: what the reference viewer draws, and page
preview images. A highlight of a document's previous content is never served: its rectangles
belong to another file. It answers 410 (``HighlightOutdated``, code pdf_changed), not 404: its
row stays, without its rectangles, after the document changed (``repository.FORGOTTEN``)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.errors import Busy
from app.core.formats import TEXT, SourceFormat
from app.db.session import transaction
from app.documents import repository as documents
from app.documents.errors import DocumentNotFound, NoPdf
from app.documents.links import PdfLinks
from app.highlights import repository
from app.highlights.cache import etag
from app.highlights.errors import (
    HighlightNotFound,
    HighlightOutdated,
    PageNotFound,
    PageNotRendered,
)
from app.highlights.previews import render_page
from app.highlights.schemas import Highlight, StoredHighlightOut
from app.highlights.sources import SourceText, selected
from app.pdfs.storage import PdfStorage
from app.pdfs.titles import shown_title
from app.pdfs.workers import PdfJobFailed

# A preview waits this long for a free render slot before it is answered 503 busy.
PREVIEW_WAIT_S = 10.0


async def forget_other_content(
    session_factory: async_sessionmaker[AsyncSession], document_id: str
) -> None:
    """Forget the stored highlights of a document's earlier content (their rectangles belong to
    another file), after its new content was committed. Reads already skip such rows, so this
    only frees space, and may run late: it compares with the content stored *now*, so a document
    put back to its earlier content before this runs keeps that content's highlights."""
    async with transaction(session_factory) as session:
        document = await documents.get_document_row(session, document_id)
        if document is not None:
            await repository.forget_highlights_of(session, document_id, document.sha256)


def _outdated(highlight_id: str, document_id: str) -> HighlightOutdated:
    return HighlightOutdated(
        f"highlight {highlight_id!r} no longer applies: document {document_id!r} was ingested "
        "again with other content since the answer that made it; ask again to highlight the "
        "current document",
        details={"document_id": document_id},
    )


@dataclass(frozen=True)
class Preview:
    png: bytes | None  # None: the client's copy (If-None-Match) is current
    etag: str
    scale: float  # what it was rendered at: lower than asked on a page too large for it


class StoredHighlights:
    def __init__(
        self,
        session_factory: async_sessionmaker[AsyncSession],
        storage: PdfStorage,
        *,
        preview_max_pixels: int,
        max_concurrent_previews: int,
    ) -> None:
        self.session_factory = session_factory
        self.storage = storage
        self.preview_max_pixels = preview_max_pixels
        # Renders beyond this wait (then get 503): the PDF workers also build text indexes.
        self._render_slots = asyncio.Semaphore(max_concurrent_previews)

    async def forget_other_content(self, document_id: str) -> None:
        await forget_other_content(self.session_factory, document_id)

    async def document_of(self, highlight_id: str) -> str | None:
        async with transaction(self.session_factory) as session:
            row = await repository.get_highlight(session, highlight_id)
        return row.document_id if row is not None else None

    async def get(self, highlight_id: str, links: PdfLinks) -> StoredHighlightOut:
        async with transaction(self.session_factory) as session:
            row = await repository.get_highlight(session, highlight_id)
            document = await documents.get_document_row(session, row.document_id) if row else None
        if row is None or document is None:
            raise HighlightNotFound(f"no highlight {highlight_id!r} for the stored documents")
        if document.sha256 != row.document_sha256 or row.data == repository.FORGOTTEN:
            raise _outdated(highlight_id, document.id)
        # The file a viewer will draw these rectangles on: PdfChanged (409, not 410) when it is
        # no longer the content they were made from though nobody re-ingested it, a conflict
        # that putting the file back (or re-ingesting) resolves.
        await asyncio.to_thread(self.storage.verify, document.source_path, document.sha256)
        # Selectors from the document's text as it is now, never the row's (a row stored by
        # an earlier release has some): another chunk put again since moves every offset.
        async with transaction(self.session_factory) as session:
            own = await session.run_sync(repository.own_texts, [document.id])
            chunks = {} if own else await session.run_sync(repository.document_texts, [document.id])
        source = (
            SourceText(*own[document.id]) if own else SourceText.of(chunks.get(document.id, []))
        )
        web = document.source_format == SourceFormat.html
        highlight = await asyncio.to_thread(
            selected, Highlight.model_validate_json(row.data), source, row.chunk_id, web
        )
        text = document.source_format in TEXT
        return StoredHighlightOut(
            highlight_id=row.id,
            document_id=document.id,
            document_title=shown_title(
                document.title, document.original_name or document.source_path, document.id
            ),
            source_format=SourceFormat(document.source_format),
            original_name=document.original_name,
            chunk_id=row.chunk_id,
            pdf_sha256=row.document_sha256,
            pdf_url=None if text else links.pinned_pdf(document.id, row.document_sha256),
            text_url=links.text(document.id) if text else None,
            highlight=highlight,
        )

    async def page_preview(
        self,
        document_id: str,
        page: int,
        highlight_ids: Sequence[str],
        scale: float,
        if_none_match: str | None = None,
    ) -> Preview:
        """A page as PNG with the given highlights drawn, and its ETag (no PNG when it matches
        ``if_none_match``). The highlights must be of this document's current content, and the
        PDF on disk the ingested one (PdfChanged, a 409, otherwise). Rendered in the bounded PDF
        workers, at most ``max_concurrent_previews`` at once (Busy, a 503, after waiting
        ``PREVIEW_WAIT_S`` for a slot)."""
        async with transaction(self.session_factory) as session:
            document = await documents.get_document_row(session, document_id)
            rows = await repository.get_highlights(session, highlight_ids) if highlight_ids else []
        if document is None:
            raise DocumentNotFound(document_id)
        if document.source_format in TEXT:
            raise NoPdf(document_id)
        if not 1 <= page <= document.page_count:
            raise PageNotFound(document_id, page, document.page_count)
        current = (document.id, document.sha256)
        found = {
            row.id: row
            for row in rows
            if (row.document_id, row.document_sha256) == current
            and row.data != repository.FORGOTTEN
        }
        outdated = [r.id for r in rows if r.document_id == document_id and r.id not in found]
        if outdated:
            raise _outdated(outdated[0], document_id)
        missing = [h for h in highlight_ids if h not in found]
        if missing:
            raise HighlightNotFound(f"no highlight {missing[0]!r} of document {document_id!r}")
        await asyncio.to_thread(self.storage.verify, document.source_path, document.sha256)
        tag = etag(f"{document.sha256}/{page}/{sorted(highlight_ids)}/{scale}".encode())
        if if_none_match == tag:
            return Preview(None, tag, scale)
        rects = [
            rect
            for row in found.values()
            for rect in Highlight.model_validate_json(row.data).rects
            if rect.page == page
        ]
        try:
            await asyncio.wait_for(self._render_slots.acquire(), PREVIEW_WAIT_S)
        except TimeoutError:
            raise Busy(
                "every page preview slot is taken (HIGHLIGHT_MAX_CONCURRENT_PREVIEWS); retry "
                "after the Retry-After header's seconds"
            ) from None
        try:
            pdf = await asyncio.to_thread(
                self.storage.read_verified, document.source_path, document.sha256
            )
            png, used = await asyncio.to_thread(
                self.storage.workers.run,
                render_page,
                pdf,
                page,
                rects,
                scale,
                self.preview_max_pixels,
                name=PurePosixPath(document.source_path).name,
            )
        except PdfJobFailed as exc:  # MuPDF could not draw this page (damaged content)
            raise PageNotRendered(
                f"page {page} of document {document_id!r} cannot be rendered: {exc}"
            ) from None
        finally:
            self._render_slots.release()
        return Preview(png, tag, used)
