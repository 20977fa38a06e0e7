"""Errors of the PDF as a file: its path, its bytes, its storage and the work it needs (all under
``app.core.errors``; each keeps its parent's status and code, so the API's contract does not grow
with them).

Errors raised inside a PDF worker process take the message as their only argument: they are
pickled back to the service, and pickling rebuilds an exception from its ``args``.
"""

from __future__ import annotations

from app.core.errors import (
    AppError,
    BadRequest,
    Busy,
    Conflict,
    ErrorCode,
    NotFound,
    UnsupportedMediaType,
)


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

    # The job it reports ran for many minutes: asking again in 2 s starts it all over at once.
    headers = {"Retry-After": "60"}


class PdfMissing(NotFound):
    """A stored document's PDF is not there: the storage answered that it has no such file or
    object. Never raised because the storage could not be asked (that is ``StorageUnavailable``):
    a client told 404 concludes the document is gone."""


class PdfChanged(Conflict):
    """The PDF on disk is not the content a document (or a stored highlight) was made from."""

    code = ErrorCode.pdf_changed


class StorageUnavailable(AppError):
    """The store holding the PDFs cannot be used now: unreachable, timing out, answering 5xx, or
    refusing this service's request (a write to a read-only bucket). A 503 with Retry-After on
    every route that needs the store; in a batch, the per-citation reason
    ``storage_unavailable``. The message says which of these it was."""

    status_code = 503
    code = ErrorCode.storage_unavailable
    headers = {"Retry-After": "10"}


class ConversionFailed(BadRequest):
    """An Office document LibreOffice could not turn into a PDF (damaged, encrypted, not what
    its content claims): the message says what to fix (``convert.py``)."""


class ConversionTimedOut(BadRequest):
    """An Office document whose conversion outlasted HIGHLIGHT_OFFICE_TIMEOUT_S."""


class ConversionTooLarge(BadRequest):
    """An Office document whose conversion needs more memory than HIGHLIGHT_OFFICE_MEMORY_MB, or
    whose PDF would be larger than HIGHLIGHT_MAX_PDF_BYTES."""


class ConversionBusy(Busy):
    """Every LibreOffice slot stayed taken for a conversion's whole timeout: retry."""

    headers = {"Retry-After": "10"}


class ConverterMissing(UnsupportedMediaType):
    """An Office document on a server without LibreOffice: a 415, not a 503, because this
    deployment does not take the type at all and retrying changes nothing; the message says to
    install it or to send a PDF."""
