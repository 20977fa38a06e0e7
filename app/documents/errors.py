"""The documents domain's named errors (all under ``app.core.errors``; each keeps its parent's
status and code, so the API's contract does not grow with them).

Errors raised inside a PDF worker process take the message as their only argument: they are
pickled back to the service, and pickling rebuilds an exception from its ``args``.
"""

from __future__ import annotations

from app.core.errors import BadRequest, Conflict, ErrorCode, NotFound, UpstreamError


class DocumentNotFound(NotFound):
    def __init__(self, document_id: str) -> None:
        super().__init__(f"no document with id {document_id!r}")


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


class InvalidSourcePath(BadRequest):
    """A ``source_path`` that is malformed, escapes the PDF root, or names no file under it."""


class UnreadablePdf(BadRequest):
    """Not a PDF, damaged, encrypted, without pages or without text to chunk: refused at ingest
    with the reason, never stored half-usable."""


class InvalidUpload(BadRequest):
    """A PDF upload without a body, or with options that do not go together."""


class UploadHashMismatch(BadRequest):
    """An upload whose bytes do not hash to the ``sha256`` it was sent with: damaged on the way,
    or the wrong file."""


class PdfTooComplex(BadRequest):
    """A PDF whose processing needs more memory or time than one job may use."""

    code = ErrorCode.pdf_too_complex


class PdfMissing(NotFound):
    """A stored document's PDF is no longer (readable) under the PDF root."""


class PdfChanged(Conflict):
    """The PDF on disk is not the content a document (or a stored highlight) was made from."""

    code = ErrorCode.pdf_changed


class StorageUnavailable(UpstreamError):
    """The object store holding the PDFs failed or cannot be reached (a write, or a document PUT
    that must read its PDF); readers of a stored PDF get ``PdfMissing`` instead."""
