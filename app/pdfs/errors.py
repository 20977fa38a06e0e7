"""Errors of the PDF as a file: its path, its bytes, its storage and the work it needs (all under
``app.core.errors``; each keeps its parent's status and code, so the API's contract does not grow
with them).

Errors raised inside a PDF worker process take the message as their only argument: they are
pickled back to the service, and pickling rebuilds an exception from its ``args``.
"""

from __future__ import annotations

from app.core.errors import BadRequest, Busy, Conflict, ErrorCode, NotFound, UpstreamError


class InvalidSourcePath(BadRequest):
    """A ``source_path`` that is malformed, escapes the PDF root, or names no file under it."""


class UnreadablePdf(BadRequest):
    """Not a PDF, damaged, encrypted, without pages or without text to chunk: refused at ingest
    with the reason, never stored half-usable."""


class PdfTooComplex(BadRequest):
    """A PDF whose processing needs more memory or CPU time than one job may use: a fact of the
    content, remembered (asked again, it is refused at once)."""

    code = ErrorCode.pdf_too_complex


class PdfWorkStalled(Busy):
    """A PDF job that outlasted its wall-clock backstop without using up its CPU budget: the
    machine was busy or the worker stuck, which says nothing about the PDF. Never remembered;
    the next request tries again."""


class PdfMissing(NotFound):
    """A stored document's PDF is no longer (readable) under the PDF root."""


class PdfChanged(Conflict):
    """The PDF on disk is not the content a document (or a stored highlight) was made from."""

    code = ErrorCode.pdf_changed


class StorageUnavailable(UpstreamError):
    """The object store holding the PDFs failed or cannot be reached (a write, or a document PUT
    that must read its PDF); readers of a stored PDF get ``PdfMissing`` instead."""
