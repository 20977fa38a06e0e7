"""The blocking PDF work of the documents use cases (run in a thread; PyMuPDF itself in the
bounded PDF workers): a file's id and chunks for ``ingest``, an upload inspected, chunked and
stored, and small checks of an upload's bytes."""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from app.core.errors import AppError, NotFound, PayloadTooLarge
from app.core.fields import CHUNK_ID_MAX, DOCUMENT_ID_MAX, ID_PATTERN
from app.documents.errors import InvalidDocumentId, InvalidUpload, UploadHashMismatch
from app.documents.schemas import ChunkIn, DocumentUpsert
from app.pdfs.chunking import chunk_index
from app.pdfs.errors import UnreadablePdf
from app.pdfs.index_cache import IndexCache
from app.pdfs.indexing import cached_index
from app.pdfs.storage import PdfFacts, PdfStorage, SavedPdf, inspect_pdf
from app.pdfs.titles import title_from_name

log = logging.getLogger(__name__)
# What ``ingest`` reads of a file to tell a PDF (taken from disk as it is) from the rest.
_HEAD_BYTES = 1029


def slugify(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.").lower()
    return slug[:DOCUMENT_ID_MAX] or "document"


@dataclass(frozen=True)
class IngestPlan:
    document_id: str
    body: DocumentUpsert
    facts: PdfFacts


def plan_ingest(
    storage: PdfStorage,
    cache: IndexCache,
    pdf_path: Path,
    document_id: str | None,
    title: str | None = None,
) -> IngestPlan:
    """Blocking: chunk a PDF from anywhere on disk and make sure the file lives under the root.
    The bytes are read once, so the hash recorded is the hash of exactly what was chunked. The
    chunks are cut from the text index (scanned pages read by OCR), which ``cache`` keeps for
    the first highlight request."""
    doc_id = ingest_id(pdf_path, document_id)
    data = pdf_path.read_bytes()
    facts = inspect(storage, data, hashlib.sha256(data).hexdigest(), pdf_path.name)
    chunks = chunks_of(storage, cache, data, facts.sha256, pdf_path.name, doc_id)
    relative = storage.relative(pdf_path) or storage.store_copy(data, facts.sha256)
    # A title given by the caller wins over the PDF's metadata, which is empty when it was a
    # word processor's placeholder ("Microsoft Word - draft3.docx"; pdfs/titles.py); then the
    # file's name, "budget_2024.pdf" read as "budget 2024".
    body = DocumentUpsert(
        title=title or facts.title or title_from_name(pdf_path.name),
        source_path=relative,
        chunks=chunks,
    )
    return IngestPlan(doc_id, body, facts)


def ingest_id(path: Path, document_id: str | None) -> str:
    """The id ``ingest`` gives the file at ``path``: the caller's, or made of its name."""
    if not path.is_file():
        raise NotFound(f"no such file: {path}")
    doc_id = document_id or slugify(path.stem)
    if not re.fullmatch(ID_PATTERN, doc_id) or len(doc_id) > DOCUMENT_ID_MAX:
        raise InvalidDocumentId(
            f"document id {doc_id!r} must be at most {DOCUMENT_ID_MAX} letters, digits, '.', '_', "
            "':' or '-', starting with a letter or digit"
        )
    return doc_id


def inspect(storage: PdfStorage, data: bytes, sha256: str, name: str) -> PdfFacts:
    """Blocking: page count and title, in the bounded PDF workers."""
    page_count, title = storage.workers.run(inspect_pdf, data, name, name=name)
    return PdfFacts(sha256, page_count, title)


def chunks_of(
    storage: PdfStorage, cache: IndexCache, data: bytes, sha256: str, name: str, document_id: str
) -> list[ChunkIn]:
    """Blocking: the PDF split into chunks as ``ingest`` does, with ids made from the document's
    (``<id>-c0000``, ...), refusing a PDF without text (no text layer, and OCR off or unable to
    read it)."""
    try:
        index = cached_index(storage.workers, cache, lambda: data, sha256, name)
        drafts = chunk_index(index)
    except AppError:  # PdfTooComplex says what limit the file is over
        raise
    except Exception as exc:  # MuPDF's own errors on a damaged page: a reason, not a traceback
        log.warning("cannot chunk %s", name, exc_info=True)
        raise UnreadablePdf(f"{name} cannot be indexed ({type(exc).__name__}: {exc})") from exc
    if not drafts:
        how = "and OCR found no text in it" if cache.ocr is not None else "and OCR is off"
        raise UnreadablePdf(f"{name} has no text layer to chunk {how} (docs/scanned-pdfs.md)")
    # Room for the "-c0000" suffix within a chunk id.
    prefix = document_id[: CHUNK_ID_MAX - 6]
    return [
        ChunkIn(
            id=f"{prefix}-c{d.ordinal:04d}",
            text=d.text,
            page_start=d.page_start,
            page_end=d.page_end,
            ordinal=d.ordinal,
        )
        for d in drafts
    ]


# Readers take a %PDF- header anywhere in the first 1024 bytes (PDF Reference 1.7, Appendix H,
# implementation note 13: some producers put other data first); so does the upload's check.
PDF_HEADER_WITHIN = 1024


def store_upload(
    storage: PdfStorage,
    cache: IndexCache,
    data: bytes,
    sha256: str,
    name: str,
    document_id: str,
    chunk: bool,
) -> tuple[PdfFacts, SavedPdf, list[ChunkIn]]:
    """Blocking: inspect (and chunk) in the PDF workers, then store."""
    facts = inspect(storage, data, sha256, name)
    chunks = chunks_of(storage, cache, data, sha256, name, document_id) if chunk else []
    return facts, storage.save(data, sha256), chunks


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def head_of(path: Path) -> bytes:
    """Blocking: the first bytes of a file, where a PDF has its %PDF- header."""
    with path.open("rb") as handle:
        return handle.read(_HEAD_BYTES)


def read_within(path: Path, max_bytes: int) -> bytes:
    """Blocking: the whole file, refused (413, as an upload would be) when it is larger than
    any family takes; the family's own limit is checked once its type is known."""
    size = path.stat().st_size
    if size > max_bytes:
        raise PayloadTooLarge(
            f"{path.name} is {size} bytes, larger than this service takes of any file type "
            f"({max_bytes} bytes)",
            details={"max_bytes": max_bytes},
        )
    return path.read_bytes()


def title_needs_chunk(title: str | None, chunk: bool) -> None:
    if title is not None and not chunk:
        raise InvalidUpload(
            "title is used only with chunk=true; without it, send the title with the document "
            "(PUT /v2/documents/{id})"
        )


def checked_hash(data: bytes, expected: str | None) -> str:
    """Blocking: the body's SHA-256, refused when the sender hashed something else."""
    actual = sha256_of(data)
    if expected is not None and actual != expected:
        raise UploadHashMismatch(
            f"the body hashes to sha256 {actual}, not {expected} (the sha256 parameter): it was "
            "damaged on the way or is another file; send it again",
            details={"sha256": actual, "expected": expected},
        )
    return actual
