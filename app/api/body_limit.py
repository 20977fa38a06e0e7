"""Request body limits, one per kind of route, enforced while the body is read.

A batch can only be so big: its schema caps the query, the answer and the citations, so its
limit is derived from those ceilings (576 KiB; real batches are under 200 KB). A document PUT
carries all of a document's chunks and has the configurable HIGHLIGHT_MAX_REQUEST_BYTES; a PDF
upload has HIGHLIGHT_MAX_PDF_BYTES. A
declared Content-Length over the limit is refused before a byte is read; a body without one
(chunked) is read up to the limit and then refused, so memory stays bounded either way.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotated_types import MaxLen
from pydantic import BaseModel
from starlette.requests import ClientDisconnect, Request

from app.core.errors import BadRequest, PayloadTooLarge
from app.highlights.schemas import CitationIn, HighlightBatchRequest

_KIB = 1024
# The longest JSON can write one character: a code point outside the BMP as an escaped
# surrogate pair, "\ud83d\ude00".
_MAX_JSON_BYTES_PER_CHAR = 12


def _max_len(model: type[BaseModel], field: str) -> int:
    return next(m.max_length for m in model.model_fields[field].metadata if isinstance(m, MaxLen))


def largest_batch_bytes() -> int:
    """The largest body a valid batch can have: every text at its published ceiling, every
    character at its longest JSON spelling, room for keys, punctuation and indentation; rounded
    up to 64 KiB."""
    citations = _max_len(HighlightBatchRequest, "citations")
    per_citation = _max_len(CitationIn, "chunk_id") + _max_len(CitationIn, "citation_id")
    chars = (
        _max_len(HighlightBatchRequest, "query")
        + _max_len(HighlightBatchRequest, "answer")
        + citations * per_citation
    )
    worst = chars * _MAX_JSON_BYTES_PER_CHAR + citations * 256 + 4 * _KIB
    return -(-worst // (64 * _KIB)) * 64 * _KIB


@dataclass(frozen=True)
class BodyLimit:
    """``max_bytes`` and, for the 413, which limit that is and what the caller can do."""

    max_bytes: int
    message: str

    @classmethod
    def for_batches(cls, max_request_bytes: int) -> BodyLimit:
        largest = largest_batch_bytes()
        if max_request_bytes < largest:  # the deployment's own ceiling is lower still
            return cls(
                max_request_bytes,
                f"the request body is larger than this service accepts ({max_request_bytes} "
                "bytes, HIGHLIGHT_MAX_REQUEST_BYTES); send fewer citations or a shorter answer "
                "per request",
            )
        return cls(
            largest,
            f"a batch body is at most {largest} bytes, the most a batch within the published "
            f"limits can need ({_max_len(HighlightBatchRequest, 'citations')} citations, a "
            f"{_max_len(HighlightBatchRequest, 'query')}-character query, a "
            f"{_max_len(HighlightBatchRequest, 'answer')}-character answer); send fewer "
            "citations or a shorter answer per request",
        )

    @classmethod
    def for_documents(cls, max_request_bytes: int) -> BodyLimit:
        return cls(
            max_request_bytes,
            f"the request body is larger than this service accepts ({max_request_bytes} bytes, "
            "HIGHLIGHT_MAX_REQUEST_BYTES); a PUT carries all of a document's chunks, so send "
            "fewer or shorter chunks, or ask the operator to raise HIGHLIGHT_MAX_REQUEST_BYTES",
        )

    @classmethod
    def for_pdfs(cls, max_pdf_bytes: int) -> BodyLimit:
        return cls(
            max_pdf_bytes,
            f"the PDF is larger than this service accepts ({max_pdf_bytes} bytes, "
            "HIGHLIGHT_MAX_PDF_BYTES); ask the operator to raise HIGHLIGHT_MAX_PDF_BYTES",
        )

    @classmethod
    def for_files(cls, max_bytes: int) -> BodyLimit:
        """Any file type: the largest family limit (each family's own is checked once the bytes
        say what the file is)."""
        return cls(
            max_bytes,
            f"the file is larger than this service accepts of any type ({max_bytes} bytes, the "
            "largest of HIGHLIGHT_MAX_PDF_BYTES, HIGHLIGHT_MAX_OFFICE_BYTES and "
            "HIGHLIGHT_MAX_TEXT_BYTES); split it or ask the operator to raise the limit",
        )

    def refusal(self) -> PayloadTooLarge:
        error = PayloadTooLarge(self.message, details={"max_bytes": self.max_bytes})
        # The rest of the body is never read: the connection cannot carry another request.
        error.headers = {"Connection": "close"}
        return error


async def read_body(request: Request, limit: BodyLimit) -> bytes:
    """The whole body, or PayloadTooLarge as soon as it is known to be over the limit."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit.max_bytes:
        raise limit.refusal()
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit.max_bytes:
                raise limit.refusal()
            chunks.append(chunk)
    except ClientDisconnect:
        # Usually nobody reads the answer (a client that only half-closed does); it also keeps
        # the error out of the server log.
        raise _cut_short(size, declared) from None
    if declared is not None and declared.isdigit() and size < int(declared):
        # HTTP servers end a body at its Content-Length, but an ASGI server or proxy that
        # passes a short body on as complete must not turn a cut upload into a stored one.
        raise _cut_short(size, declared)
    return b"".join(chunks)


def _cut_short(received: int, declared: str | None) -> BadRequest:
    expected = int(declared) if declared is not None and declared.isdigit() else None
    of = f" of {expected}" if expected is not None else ""
    details: dict[str, object] = {"received": received}
    if expected is not None:
        details["declared"] = expected
    return BadRequest(
        f"the upload ended after {received}{of} bytes (Content-Length); nothing was stored: "
        "send the whole body again",
        details=details,
    )
