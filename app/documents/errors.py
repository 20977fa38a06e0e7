"""The documents domain's named errors (all under ``app.core.errors``; each keeps its parent's
status and code, so the API's contract does not grow with them).
"""

from __future__ import annotations

from app.core.errors import BadRequest, Conflict, NotFound


class DocumentNotFound(NotFound):
    def __init__(self, document_id: str) -> None:
        super().__init__(f"no document with id {document_id!r}")


class NoPdf(NotFound):
    """A web or text source has no PDF: its text is served instead."""

    def __init__(self, document_id: str) -> None:
        super().__init__(
            f"document {document_id!r} is a web or text source and has no PDF; its text is at "
            f"GET /v2/documents/{document_id}/text"
        )


class InvalidDocumentId(BadRequest):
    pass


class InvalidChunks(BadRequest):
    """Chunks that contradict each other or the PDF (a repeated id or ordinal, a page beyond the
    last)."""


class ChunkIdsTaken(Conflict):
    def __init__(self, chunk_ids: list[str]) -> None:
        super().__init__(
            f"chunk ids already belong to another document: {', '.join(chunk_ids[:5])}",
            details={"chunk_ids": chunk_ids},
        )


class InvalidUpload(BadRequest):
    """A PDF upload without a body, or with options that do not go together."""


class UploadHashMismatch(BadRequest):
    """An upload whose bytes do not hash to the ``sha256`` it was sent with: damaged on the way,
    or the wrong file."""
