"""The highlights domain's named errors (under ``app.core.errors``; each keeps its parent's
status and code)."""

from __future__ import annotations

from app.core.errors import BadRequest, ErrorCode, Gone, NotFound


class HighlightNotFound(NotFound):
    """No stored highlight with this id for the document's current content."""


class HighlightOutdated(Gone):
    """A stored highlight of its document's earlier content: the document was ingested again
    with other content since the answer that made it, so its rectangles belong to another
    file. 410, not 404: the link was good, the document moved on (ask again on the new one).
    A file replaced under the same document without re-ingest stays ``PdfChanged`` (409): a
    conflict that putting the file back resolves."""

    code = ErrorCode.pdf_changed


class PageNotFound(NotFound):
    def __init__(self, document_id: str, page: int, page_count: int) -> None:
        pages = "1 page" if page_count == 1 else f"{page_count} pages"
        super().__init__(
            f"document {document_id!r} has no page {page}: it has {pages}, numbered from 1"
        )


class BatchTooLarge(BadRequest):
    """More citations, or a longer question or answer, than the service's limits
    (``HIGHLIGHT_MAX_*``)."""


class PageNotRendered(BadRequest):
    """MuPDF could not draw the page (damaged content)."""
