"""Highlights by id, after the batch that found them: what the reference viewer draws, and page
preview images. A highlight of a document's previous content is never served: its rectangles
belong to another file."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.errors import NotFound
from app.db.session import transaction
from app.documents import repository as documents
from app.documents.links import PdfLinks
from app.documents.storage import PdfStorage
from app.highlights import repository
from app.highlights.cache import etag
from app.highlights.previews import render_page
from app.highlights.schemas import Highlight, StoredHighlightOut


class StoredHighlights:
    def __init__(
        self, session_factory: async_sessionmaker[AsyncSession], storage: PdfStorage
    ) -> None:
        self.session_factory = session_factory
        self.storage = storage

    async def document_of(self, highlight_id: str) -> str | None:
        async with transaction(self.session_factory) as session:
            row = await repository.get_highlight(session, highlight_id)
        return row.document_id if row is not None else None

    async def get(self, highlight_id: str, links: PdfLinks) -> StoredHighlightOut:
        async with transaction(self.session_factory) as session:
            row = await repository.get_highlight(session, highlight_id)
            document = await documents.get_document_row(session, row.document_id) if row else None
        if row is None or document is None or document.sha256 != row.document_sha256:
            raise NotFound(f"no highlight {highlight_id!r} for the stored documents")
        # The file a viewer will draw these rectangles on: PdfChanged (409) when it is no longer
        # the content they were made from, even if nobody re-ingested it.
        await asyncio.to_thread(self.storage.verify, document.source_path, document.sha256)
        return StoredHighlightOut(
            highlight_id=row.id,
            document_id=document.id,
            document_title=document.title,
            chunk_id=row.chunk_id,
            pdf_sha256=row.document_sha256,
            pdf_url=links.pinned_pdf(document.id, row.document_sha256),
            highlight=Highlight.model_validate_json(row.data),
        )

    async def page_preview(
        self,
        document_id: str,
        page: int,
        highlight_ids: Sequence[str],
        scale: float,
        if_none_match: str | None = None,
    ) -> tuple[bytes | None, str]:
        """A page as PNG with the given highlights drawn, and its ETag (no PNG when it matches
        ``if_none_match``). The highlights must be of this document's current content, and the
        PDF on disk the ingested one (PdfChanged, a 409, otherwise)."""
        async with transaction(self.session_factory) as session:
            document = await documents.get_document_row(session, document_id)
            rows = await repository.get_highlights(session, highlight_ids) if highlight_ids else []
        if document is None:
            raise NotFound(f"no document with id {document_id!r}")
        if not 1 <= page <= document.page_count:
            raise NotFound(f"document {document_id!r} has no page {page} ({document.page_count})")
        current = (document.id, document.sha256)
        found = {row.id: row for row in rows if (row.document_id, row.document_sha256) == current}
        missing = [h for h in highlight_ids if h not in found]
        if missing:
            raise NotFound(f"no highlight {missing[0]!r} of document {document_id!r}")
        await asyncio.to_thread(self.storage.verify, document.source_path, document.sha256)
        tag = etag(f"{document.sha256}/{page}/{sorted(highlight_ids)}/{scale}".encode())
        if if_none_match == tag:
            return None, tag
        rects = [
            rect
            for row in found.values()
            for rect in Highlight.model_validate_json(row.data).rects
            if rect.page == page
        ]
        pdf = await asyncio.to_thread(
            self.storage.read_verified, document.source_path, document.sha256
        )
        return await asyncio.to_thread(render_page, pdf, page, rects, scale), tag
