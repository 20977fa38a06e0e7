from __future__ import annotations

import re
import unicodedata
from collections import Counter
from pathlib import PureWindowsPath
from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Header, Path, Query, Request, Response, status
from fastapi.responses import FileResponse
from pydantic import StringConstraints

from app.api.body_limit import BodyLimit
from app.api.deps import HIGHLIGHT_ID, DocumentsDep, HighlightsDep, LinksDep, StoredDep
from app.api.pdf_response import PdfFileResponse
from app.api.routing import RawBody, raw_body
from app.core.errors import BadRequest, error_responses, header_refs
from app.core.fields import DOCUMENT_ID_MAX, ID_PATTERN, MAX_INT32
from app.core.formats import ACCEPTED_MEDIA_TYPES, MEDIA_TYPES, TEXT, SourceFormat
from app.documents.links import PdfLinks
from app.documents.models import Document
from app.documents.placing import PlacementStatus
from app.documents.schemas import (
    ChunkOut,
    DocumentOut,
    DocumentText,
    DocumentUpsert,
    DocumentUpsertResult,
    PdfUploadResult,
    PlacementSummary,
    TextBlock,
)
from app.documents.service import Upload
from app.documents.sources import SourceLimits
from app.documents.text_sources import document_text
from app.documents.upserting import UpsertOutcome
from app.pdfs.titles import shown_title

# Three routers, because auth (when configured) differs: reads, writes, and the PDF file, which
# also takes a signed link. create_app attaches the checks.
reads = APIRouter(prefix="/v2/documents", tags=["documents"])
writes = APIRouter(prefix="/v2/documents", tags=["documents"])
files = APIRouter(prefix="/v2/documents", tags=["documents"])
DocumentId = Annotated[str, Path(min_length=1, max_length=DOCUMENT_ID_MAX, pattern=ID_PATTERN)]
SHA256 = r"^[0-9a-f]{64}$"
PDF_BODY = RawBody("application/pdf", lambda settings: BodyLimit.for_pdfs(settings.max_pdf_bytes))
FILE_BODY = RawBody(
    "application/octet-stream",
    lambda settings: BodyLimit.for_files(SourceLimits.from_settings(settings).largest),
    also=tuple(t for t in ACCEPTED_MEDIA_TYPES if t != "application/octet-stream"),
)
_BINARY = {"schema": {"type": "string", "format": "binary"}}


def _chunks_out(document: Document, include_text: bool) -> list[ChunkOut]:
    return [
        ChunkOut(
            id=c.id,
            ordinal=c.ordinal,
            page_start=c.page_start,
            page_end=c.page_end,
            text=c.text if include_text else None,
            placement=PlacementStatus(c.placement) if c.placement else None,
            placed_share=c.placed_share,
            given_page_start=c.given_page_start,
            given_page_end=c.given_page_end,
            pages_corrected=c.given_page_start is not None
            and (c.given_page_start, c.given_page_end) != (c.page_start, c.page_end),
        )
        for c in document.chunks
    ]


def _summary(chunks: list[ChunkOut], outcome: UpsertOutcome) -> PlacementSummary | None:
    """How a PDF's chunks were placed, in all (None for a web or text source)."""
    if not any(c.placement for c in chunks):
        return None
    count = Counter(c.placement for c in chunks)
    return PlacementSummary(
        placed=count[PlacementStatus.placed],
        partial=count[PlacementStatus.partial],
        not_found=count[PlacementStatus.not_found],
        unchecked=count[PlacementStatus.unchecked],
        pages_corrected=sum(c.pages_corrected for c in chunks),
        page_offset=outcome.page_offset,
        unchecked_reason=outcome.unchecked,
    )


def _out(document: Document, links: PdfLinks, include_text: bool) -> DocumentOut:
    return DocumentOut(
        id=document.id,
        # A placeholder stored before they were refused shows as the file's name (titles.py).
        title=shown_title(
            document.title, document.original_name or document.source_path, document.id
        ),
        source_path=document.source_path,
        sha256=document.sha256,
        page_count=document.page_count,
        source_format=SourceFormat(document.source_format),
        original_name=document.original_name,
        # A web or text source has no PDF: GET …/pdf answers 404 for it (no_pdf).
        pdf_url=None if document.source_format in TEXT else links.document_pdf(document.id),
        chunks=_chunks_out(document, include_text),
    )


@writes.put(
    "/{document_id}",
    response_model=DocumentUpsertResult,
    responses={
        201: {"model": DocumentUpsertResult, "description": "Created"},
        **error_responses(409, 413, 422, 503),
    },
)
async def put_document(
    document_id: DocumentId,
    body: DocumentUpsert,
    documents: DocumentsDep,
    highlights: HighlightsDep,
    links: LinksDep,
    response: Response,
    background: BackgroundTasks,
) -> DocumentUpsertResult:
    """Store a document and all its chunks, replacing what was stored; sending the same body again
    changes nothing (``changed: false``), also when identical requests race."""
    outcome = await documents.put(document_id, body)
    if outcome.created:
        response.status_code = status.HTTP_201_CREATED
    if outcome.changed:
        # After the response (and the commit): the earlier content's highlights are deleted, and
        # the first highlight request finds the new text index ready.
        document = outcome.document
        background.add_task(
            highlights.document_changed,
            document.id,
            document.source_path,
            document.sha256,
            document.source_format,
        )
    out = _out(outcome.document, links, include_text=False)
    return DocumentUpsertResult(
        **out.model_dump(),
        created=outcome.created,
        changed=outcome.changed,
        placement=_summary(out.chunks, outcome),
    )


@writes.put(
    "/{document_id}/pdf",
    response_model=PdfUploadResult,
    responses={
        201: {"model": PdfUploadResult, "description": "Stored (with chunk=true: created)"},
        **error_responses(409, 413, 415, 422, 503),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/pdf": {"schema": {"type": "string", "format": "binary"}}},
        }
    },
)
@raw_body(PDF_BODY)
async def put_document_pdf(
    document_id: DocumentId,
    request: Request,
    documents: DocumentsDep,
    highlights: HighlightsDep,
    response: Response,
    background: BackgroundTasks,
    sha256: Annotated[
        str | None,
        Query(
            pattern=SHA256,
            description="SHA-256 of the body (lower-case hex) as the sender computed it; a body "
            "that hashes otherwise is refused (422) and nothing is stored.",
        ),
    ] = None,
    chunk: Annotated[
        bool,
        Query(
            description="Also split the PDF into chunks here, as `highlight-service ingest` "
            "does, and store the document (replacing its chunks) in the same call."
        ),
    ] = False,
    title: Annotated[
        str | None,
        Query(min_length=1, max_length=500, description="With chunk=true: the document's title."),
    ] = None,
) -> PdfUploadResult:
    """Upload a document's PDF as the raw body (`Content-Type: application/pdf`, at most
    HIGHLIGHT_MAX_PDF_BYTES). It is stored by its content, so sending the same bytes again
    rewrites nothing (`newly_stored: false`); then PUT the document with the answered
    `source_path` and its chunks, or pass `chunk=true` to have this service chunk it. 201 when
    the PDF (with chunk=true: the document) is new."""
    upload = await documents.upload(
        document_id, await request.body(), sha256=sha256, chunk=chunk, title=title
    )
    return _upload_result(document_id, upload, highlights, response, background)


@writes.put(
    "/{document_id}/file",
    response_model=PdfUploadResult,
    responses={
        201: {"model": PdfUploadResult, "description": "Stored (with chunk=true: created)"},
        **error_responses(409, 413, 415, 422, 503),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": dict.fromkeys((*MEDIA_TYPES.values(), FILE_BODY.media_type), _BINARY),
        }
    },
)
@raw_body(FILE_BODY)
async def put_document_file(
    document_id: DocumentId,
    request: Request,
    documents: DocumentsDep,
    highlights: HighlightsDep,
    response: Response,
    background: BackgroundTasks,
    filename: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=255,
            pattern=r"^[^\x00-\x1f\x7f]+$",
            description="The file's name, recorded as the document's original_name and shown "
            "as its title when it has none of its own; with text, .md marks Markdown. Never "
            "decides the type: the bytes do.",
        ),
    ] = None,
    sha256: Annotated[
        str | None,
        Query(pattern=SHA256, description="SHA-256 of the body, as for PUT …/pdf."),
    ] = None,
    chunk: Annotated[
        bool,
        Query(description="Also chunk it here and store the document, as for PUT …/pdf."),
    ] = False,
    title: Annotated[
        str | None,
        Query(min_length=1, max_length=500, description="With chunk=true: the document's title."),
    ] = None,
) -> PdfUploadResult:
    """Upload a document's file as the raw body, whatever its type: a PDF, an Office file (DOCX,
    PPTX, XLSX, ODT, ODP, ODS, RTF, and the legacy DOC, PPT, XLS: converted to PDF by
    LibreOffice, then taken as a PDF), or HTML, Markdown or plain text. The bytes decide the
    type (a PNG named report.docx is a 415 naming what it is); Content-Type may be the type's
    own or application/octet-stream. Size limits per type: HIGHLIGHT_MAX_PDF_BYTES,
    HIGHLIGHT_MAX_OFFICE_BYTES, HIGHLIGHT_MAX_TEXT_BYTES (413). The same file again changes
    nothing (an Office file is converted once per content). A conversion that fails, runs too
    long or needs too much memory is a 422 saying which; a server without LibreOffice answers
    415 for Office files."""
    upload = await documents.upload_file(
        document_id,
        await request.body(),
        filename=_base_name(filename),
        media_type=request.headers.get("content-type"),
        sha256=sha256,
        chunk=chunk,
        title=title,
    )
    return _upload_result(document_id, upload, highlights, response, background)


def _base_name(filename: str | None) -> str | None:
    """The name without any folder a client put in front of it (a Windows path too). Refused
    (422): invisible or control characters (C1 controls, bidi overrides such as U+202E, which
    show a program's name reversed to look like a document's), and a name that is a folder ("." or
    "..") or has none."""
    if filename is None:
        return None
    hidden = [c for c in filename if unicodedata.category(c) in _HIDDEN]
    if hidden:
        raise BadRequest(
            f"the filename holds a control or invisible character (U+{ord(hidden[0]):04X}); "
            "send the name as it is shown",
            details={"character": f"U+{ord(hidden[0]):04X}"},
        )
    last = re.split(r"[\\/]", filename)[-1]
    name = PureWindowsPath(filename).name
    if last in ("", ".", "..") or name in ("", ".", ".."):
        raise BadRequest(
            f"the filename {filename!r} names no file (a folder, or empty after the folders); "
            "send the file's own name, such as report.docx"
        )
    return name


def _upload_result(
    document_id: str,
    upload: Upload,
    highlights: HighlightsDep,
    response: Response,
    background: BackgroundTasks,
) -> PdfUploadResult:
    result = PdfUploadResult(
        document_id=document_id,
        sha256=upload.facts.sha256,
        source_path=upload.saved.source_path,
        page_count=upload.facts.page_count,
        title=upload.facts.title,
        newly_stored=upload.saved.newly_stored,
        source_format=upload.origin.source_format,
        original_name=upload.origin.original_name,
    )
    outcome = upload.document
    if outcome is None:
        if upload.saved.newly_stored:
            response.status_code = status.HTTP_201_CREATED
        return result
    document = outcome.document
    if outcome.created:
        response.status_code = status.HTTP_201_CREATED
    if outcome.changed:
        # As for a document PUT: the earlier content's highlights go, the new index is warmed.
        background.add_task(
            highlights.document_changed,
            document.id,
            document.source_path,
            document.sha256,
            document.source_format,
        )
    return result.model_copy(
        update={
            "title": document.title,
            "created": outcome.created,
            "changed": outcome.changed,
            "chunks": _chunks_out(document, include_text=False),
        }
    )


@reads.get(
    "/{document_id}",
    response_model=DocumentOut,
    responses=error_responses(404, 422, 503),
)
async def get_document(
    document_id: DocumentId,
    documents: DocumentsDep,
    links: LinksDep,
    include_text: Annotated[bool, Query(description="Include each chunk's text.")] = False,
) -> DocumentOut:
    return _out(await documents.get(document_id), links, include_text)


_STRING = {"required": True, "schema": {"type": "string"}}
_PDF_HEADERS = {
    "ETag": {
        **_STRING,
        "description": 'The content\'s SHA-256, quoted ("<hex>"); a file changed since it was '
        "ingested gets a validator of its own.",
    },
    "Accept-Ranges": {
        "description": "bytes: Range requests are served (PDF.js loads large PDFs in parts).",
        "required": True,
        "schema": {"type": "string", "enum": ["bytes"]},
    },
    "Cache-Control": _STRING,
}
_NOT_MODIFIED_HEADERS = {"ETag": _STRING, "Cache-Control": _STRING}


@files.get(
    "/{document_id}/pdf",
    response_class=FileResponse,
    responses={
        200: {
            "content": {"application/pdf": {}},
            "description": "The stored PDF",
            "headers": _PDF_HEADERS,
        },
        206: {
            "content": {"application/pdf": {}},
            "description": "Part of it (Range)",
            "headers": {**_PDF_HEADERS, **header_refs("Content-Range")},
        },
        304: {"description": "Not modified (If-None-Match)", "headers": _NOT_MODIFIED_HEADERS},
        **error_responses(404, 409, 416, 422, 503),
    },
)
async def get_document_pdf(
    document_id: DocumentId,
    documents: DocumentsDep,
    sha256: Annotated[
        str | None,
        Query(
            pattern=SHA256,
            description="Serve the PDF only if it is this content (409 pdf_changed otherwise), "
            "as a viewer drawing stored highlights needs; stored highlights' pdf_url carries it.",
        ),
    ] = None,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    """The PDF itself (Range requests supported, as PDF.js uses them). With auth on, a bearer
    token or the signature that batch results put in their links (so a reader's browser can
    open them)."""
    pdf = await documents.pdf_file(document_id, sha256)
    headers = {"Cache-Control": "private, no-cache"}
    if pdf.sha256 is not None:
        # The content's own hash: a re-ingested document gets a new ETag, the same file keeps it.
        headers["ETag"] = f'"{pdf.sha256}"'
        if if_none_match == headers["ETag"]:
            return Response(status_code=304, headers=headers)
    return PdfFileResponse(
        pdf.path,
        media_type="application/pdf",
        filename=f"{document_id}.pdf",
        content_disposition_type="inline",
        headers=headers,
    )


@files.get(
    "/{document_id}/text",
    response_model=DocumentText,
    responses=error_responses(404, 422, 503),
)
async def get_document_text(document_id: DocumentId, documents: DocumentsDep) -> DocumentText:
    """The text the highlights' selectors index (TextQuoteSelector, TextPositionSelector), with
    its blocks: what the viewer shows of a web or text source. With auth on, a bearer token or
    the signature of the viewer's link."""
    document, text, blocks = await document_text(documents.session_factory, document_id)
    return DocumentText(
        document_id=document.id,
        title=shown_title(document.title, document.source_path, document.id),
        source_format=SourceFormat(document.source_format),
        sha256=document.sha256,
        text=text,
        blocks=[TextBlock(kind=b.kind, level=b.level, start=b.start, end=b.end) for b in blocks],
    )


# Unicode categories a filename may not hold: controls, format characters (bidi overrides,
# zero-width ones), line and paragraph separators.
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp"})

HighlightIdParam = Annotated[str, StringConstraints(pattern=HIGHLIGHT_ID)]


@files.get(
    "/{document_id}/pages/{page}.png",
    response_class=Response,
    responses={
        200: {
            "content": {"image/png": {}},
            "description": "The page, highlights drawn, at the scale in X-Preview-Scale: lower "
            "than asked when the image would exceed HIGHLIGHT_PREVIEW_MAX_PIXELS",
            "headers": {
                "X-Preview-Scale": {
                    "description": "Pixels per PDF point the page was rendered at.",
                    "schema": {"type": "number"},
                },
                **_NOT_MODIFIED_HEADERS,
            },
        },
        304: {"description": "Not modified (If-None-Match)", "headers": _NOT_MODIFIED_HEADERS},
        **error_responses(404, 409, 410, 422, 503),
    },
)
async def get_page_preview(
    document_id: DocumentId,
    page: Annotated[int, Path(ge=1, le=MAX_INT32, description="1-based page number.")],
    stored: StoredDep,
    highlight: Annotated[
        list[HighlightIdParam],
        Query(max_length=50, description="Ids of the highlights to draw (from batch results)."),
    ] = [],  # noqa: B006  (FastAPI copies query defaults)
    scale: Annotated[
        float, Query(ge=0.25, le=3.0, description="Pixels per PDF point (1: 72 dpi).")
    ] = 1.0,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    """A page rendered as PNG with the given highlights drawn, for chat UIs that show a
    thumbnail instead of a viewer. 409 when the PDF on disk changed since it was ingested; 422
    (pdf_too_complex) when the page needs more than a PDF job's memory or time; 503 (busy) when
    every render slot stays taken."""
    preview = await stored.page_preview(document_id, page, highlight, scale, if_none_match)
    headers = {"ETag": preview.etag, "Cache-Control": "private, no-cache"}
    if preview.png is None:
        return Response(status_code=304, headers=headers)
    headers["X-Preview-Scale"] = f"{preview.scale:g}"
    return Response(content=preview.png, media_type="image/png", headers=headers)
