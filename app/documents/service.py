"""Documents use cases: register a PDF with its chunks (over HTTP or from the CLI), take a PDF
uploaded over HTTP (stored by its content, optionally chunked here as ``ingest`` does), read it
back.

Every write is one transaction; re-sending the same document is a no-op, also when two identical
requests race (the loser of the race retries and finds the winner's rows unchanged).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.errors import AppError, NotFound
from app.core.fields import CHUNK_ID_MAX, DOCUMENT_ID_MAX, ID_PATTERN
from app.core.formats import TEXT
from app.db.session import in_transaction, transaction
from app.documents import repository
from app.documents.errors import (
    ChunkIdsTaken,
    DocumentNotFound,
    InvalidChunks,
    InvalidDocumentId,
    InvalidUpload,
    NoPdf,
    UploadHashMismatch,
)
from app.documents.models import Chunk, Document
from app.documents.schemas import ChunkIn, DocumentUpsert
from app.pdfs.chunking import chunk_index
from app.pdfs.errors import PdfChanged, PdfMissing, UnreadablePdf
from app.pdfs.index_cache import IndexCache
from app.pdfs.indexing import cached_index, index_or_refuse
from app.pdfs.storage import PdfFacts, PdfStorage, SavedPdf, inspect_pdf
from app.pdfs.titles import name_title, title_from_name

log = logging.getLogger(__name__)
# A racing identical write loses at most once per competitor; three tries cover a burst.
WRITE_ATTEMPTS = 3


@dataclass(frozen=True)
class UpsertOutcome:
    document: Document
    created: bool
    changed: bool


def slugify(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.").lower()
    return slug[:DOCUMENT_ID_MAX] or "document"


def _same_chunks(stored: list[Chunk], incoming: list[Chunk]) -> bool:
    def key(c: Chunk) -> tuple[str, int, str, int, int]:
        return (c.id, c.ordinal, c.text, c.page_start, c.page_end)

    return sorted(map(key, stored)) == sorted(map(key, incoming))


def _check_chunks(chunks: list[ChunkIn], page_count: int) -> None:
    seen: set[str] = set()
    ordinals: set[int] = set()
    for position, chunk in enumerate(chunks):
        if chunk.id in seen:
            raise InvalidChunks(f"chunks[{position}].id {chunk.id!r} appears twice")
        seen.add(chunk.id)
        ordinal = position if chunk.ordinal is None else chunk.ordinal
        if ordinal in ordinals:
            raise InvalidChunks(f"chunks[{position}].ordinal {ordinal} appears twice")
        ordinals.add(ordinal)
        if chunk.page_end > page_count:
            raise InvalidChunks(
                f"chunks[{position}] ends on page {chunk.page_end}, "
                f"but the PDF has {page_count} pages"
            )


async def _put(
    session_factory: async_sessionmaker[AsyncSession],
    storage: PdfStorage,
    document_id: str,
    body: DocumentUpsert,
    facts: PdfFacts | None = None,
) -> UpsertOutcome:
    if facts is None:
        facts = await asyncio.to_thread(storage.facts, body.source_path)
    _check_chunks(body.chunks, facts.page_count)
    return await in_transaction(
        session_factory,
        lambda session: _upsert(session, storage, document_id, body, facts),
        attempts=WRITE_ATTEMPTS,
    )


async def _upsert(
    session: AsyncSession,
    storage: PdfStorage,
    document_id: str,
    body: DocumentUpsert,
    facts: PdfFacts,
) -> UpsertOutcome:
    owners = await repository.chunk_owners(session, [c.id for c in body.chunks])
    foreign = sorted(cid for cid, owner in owners.items() if owner != document_id)
    if foreign:
        raise ChunkIdsTaken(foreign)
    incoming = [
        Chunk(
            id=c.id,
            document_id=document_id,
            ordinal=i if c.ordinal is None else c.ordinal,
            text=c.text,
            page_start=c.page_start,
            page_end=c.page_end,
        )
        for i, c in enumerate(body.chunks)
    ]
    title = body.title or facts.title or name_title(body.source_path, document_id)
    source_path = storage.normalize(body.source_path)
    document = await repository.get_document(session, document_id)
    created = document is None
    if document is None:
        document = Document(id=document_id, created_at=datetime.now(UTC))
        session.add(document)
    elif (document.title, document.source_path, document.sha256) == (
        title,
        source_path,
        facts.sha256,
    ) and _same_chunks(document.chunks, incoming):
        return UpsertOutcome(document, created=False, changed=False)

    document.title = title
    document.source_path = source_path
    document.sha256 = facts.sha256
    document.page_count = facts.page_count
    if document.source_format in TEXT:
        # A web or text source replaced by a PDF: it is a PDF now (located on its pages).
        document.source_format = "pdf"
        document.original_name = document.original_sha256 = document.original_path = None
    document.updated_at = datetime.now(UTC)
    await session.flush()
    await repository.replace_chunks(session, document, incoming)
    await session.refresh(document, ["chunks"])
    return UpsertOutcome(document, created=created, changed=True)


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
    if not pdf_path.is_file():
        raise NotFound(f"no such file: {pdf_path}")
    doc_id = document_id or slugify(pdf_path.stem)
    if not re.fullmatch(ID_PATTERN, doc_id) or len(doc_id) > DOCUMENT_ID_MAX:
        raise InvalidDocumentId(
            f"document id {doc_id!r} must be at most {DOCUMENT_ID_MAX} letters, digits, '.', '_', "
            "':' or '-', starting with a letter or digit"
        )
    data = pdf_path.read_bytes()
    facts = _inspect(storage, data, hashlib.sha256(data).hexdigest(), pdf_path.name)
    chunks = _chunks_of(storage, cache, data, facts.sha256, pdf_path.name, doc_id)
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


def _inspect(storage: PdfStorage, data: bytes, sha256: str, name: str) -> PdfFacts:
    """Blocking: page count and title, in the bounded PDF workers."""
    page_count, title = storage.workers.run(inspect_pdf, data, name, name=name)
    return PdfFacts(sha256, page_count, title)


def _chunks_of(
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


@dataclass(frozen=True)
class Upload:
    """An uploaded PDF, stored; with ``chunk``, the document made of it too."""

    facts: PdfFacts
    saved: SavedPdf
    document: UpsertOutcome | None = None


def _store_upload(
    storage: PdfStorage,
    cache: IndexCache,
    data: bytes,
    sha256: str,
    name: str,
    document_id: str,
    chunk: bool,
) -> tuple[PdfFacts, SavedPdf, list[ChunkIn]]:
    """Blocking: inspect (and chunk) in the PDF workers, then store."""
    facts = _inspect(storage, data, sha256, name)
    chunks = _chunks_of(storage, cache, data, sha256, name, document_id) if chunk else []
    return facts, storage.save(data, sha256), chunks


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class PdfFile:
    path: Path
    # The ingested content's hash when the file on disk still is that content, else None (the
    # file is served as it is, but nothing may claim it is the ingested one).
    sha256: str | None


class DocumentService:
    """The documents use cases over one database and one PDF storage, built once per process
    (the server's lifespan, or a command: ``app/services.py``). ``index_cache`` keeps the text
    index chunking builds, so the first highlight request finds it."""

    def __init__(
        self,
        session_factory: async_sessionmaker[AsyncSession],
        storage: PdfStorage,
        index_cache: IndexCache,
    ) -> None:
        self.session_factory = session_factory
        self.storage = storage
        self.index_cache = index_cache

    async def put(
        self, document_id: str, body: DocumentUpsert, facts: PdfFacts | None = None
    ) -> UpsertOutcome:
        """Store a document and all its chunks in one transaction. ``facts`` are the PDF's hash
        and page count when the caller already read them (ingest hashes the bytes it chunked)."""
        return await _put(self.session_factory, self.storage, document_id, body, facts)

    async def ingest(
        self, pdf_path: Path, document_id: str | None, title: str | None = None
    ) -> UpsertOutcome:
        """A PDF from anywhere on disk, chunked here and stored with its chunks (``ingest``).
        Chunked from the text index, so a PDF that cannot be indexed is refused before anything
        is stored; the index is written to the caches the servers read (the shared disk cache
        and the object store's index blobs), and scanned pages are read by OCR once, here."""
        plan = await asyncio.to_thread(
            plan_ingest, self.storage, self.index_cache, pdf_path, document_id, title
        )
        await asyncio.to_thread(
            index_or_refuse,
            self.storage,
            self.index_cache,
            plan.body.source_path,
            plan.facts.sha256,
        )
        return await self.put(plan.document_id, plan.body, plan.facts)

    async def upload(
        self,
        document_id: str,
        data: bytes,
        *,
        sha256: str | None = None,
        chunk: bool = False,
        title: str | None = None,
    ) -> Upload:
        """Store an uploaded PDF by its content, after checking it is one this service can read;
        the same bytes again rewrite nothing. ``sha256``: what the sender hashed, refused when the
        bytes differ. ``chunk``: also split it as ``ingest`` does and put the document (its id's
        chunks replaced, as a document PUT does), in one call; a PDF that cannot be chunked is
        refused before anything is stored."""
        name = f"{document_id}.pdf"
        if title is not None and not chunk:
            raise InvalidUpload(
                "title is used only with chunk=true; without it, send the title with the document "
                "(PUT /v2/documents/{id})"
            )
        if not data:
            raise InvalidUpload("the request body is empty; send the PDF's bytes as the body")
        if b"%PDF-" not in data[: PDF_HEADER_WITHIN + 5]:
            raise UnreadablePdf("the body is not a PDF (no %PDF- header in its first 1024 bytes)")
        actual = await asyncio.to_thread(_sha256, data)
        if sha256 is not None and actual != sha256:
            raise UploadHashMismatch(
                f"the body hashes to sha256 {actual}, not {sha256} (the sha256 parameter): it was "
                "damaged on the way or is another file; send it again",
                details={"sha256": actual, "expected": sha256},
            )
        facts, saved, chunks = await asyncio.to_thread(
            _store_upload, self.storage, self.index_cache, data, actual, name, document_id, chunk
        )
        if not chunk:
            return Upload(facts, saved)
        body = DocumentUpsert(
            title=title or facts.title or document_id, source_path=saved.source_path, chunks=chunks
        )
        outcome = await self.put(document_id, body, facts)
        return Upload(facts, saved, outcome)

    async def get(self, document_id: str) -> Document:
        async with transaction(self.session_factory) as session:
            document = await repository.get_document(session, document_id)
        if document is None:
            raise DocumentNotFound(document_id)
        return document

    async def pdf_file(self, document_id: str, pinned: str | None = None) -> PdfFile:
        """The document's PDF. ``pinned``: only when it still is that content (the content stored
        highlights were made from), else PdfChanged; unpinned, a changed file is served as it is,
        without claiming to be the ingested one."""
        async with transaction(self.session_factory) as session:
            document = await repository.get_document_row(session, document_id)
        if document is None:
            raise DocumentNotFound(document_id)
        if document.source_format in TEXT:
            raise NoPdf(document_id)
        if pinned is not None and pinned != document.sha256:
            raise PdfChanged(
                f"document {document_id!r} was re-ingested with other content since this link was "
                "made; its highlights no longer apply"
            )
        try:
            path = await asyncio.to_thread(
                self.storage.verify, document.source_path, document.sha256
            )
            return PdfFile(path, document.sha256)
        except PdfChanged:
            if pinned is not None:
                raise
            current = await asyncio.to_thread(self.storage.current_file, document.source_path)
            return PdfFile(current, None)
        except PdfMissing as exc:
            raise PdfMissing(
                f"the PDF of document {document_id!r} is missing from the PDF storage"
            ) from exc
