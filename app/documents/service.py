"""Documents use cases: register a PDF with its chunks (over HTTP or from the CLI), take a PDF
uploaded over HTTP (stored by its content, optionally chunked here as ``ingest`` does), take any
supported file by its content (``upload_file``, ``ingest``: an Office file converted to PDF
first, text sources through ``text_sources.py``; ``sources.py``), read it back.

Every write is one transaction; re-sending the same document is a no-op, also when two identical
requests race (the loser of the race retries and finds the winner's rows unchanged).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.formats import TEXT, family, sniff
from app.db.session import in_transaction, transaction
from app.documents import repository
from app.documents.errors import (
    DocumentNotFound,
    InvalidUpload,
    NoPdf,
)
from app.documents.models import Document
from app.documents.pdf_files import (
    PDF_HEADER_WITHIN,
    checked_hash,
    head_of,
    ingest_id,
    plan_ingest,
    read_within,
    store_upload,
    title_needs_chunk,
)
from app.documents.placing import GivenChunk, place_in_pdf
from app.documents.schemas import DocumentUpsert
from app.documents.sources import Origin, SourceLimits, default_name
from app.documents.text_sources import upload_text
from app.documents.upserting import UpsertOutcome, check_chunks, origin_of, upsert
from app.pdfs.convert import OfficeConverter
from app.pdfs.errors import ConverterMissing, PdfChanged, PdfMissing, UnreadablePdf
from app.pdfs.index_cache import IndexCache
from app.pdfs.indexing import index_or_refuse
from app.pdfs.originals import converted_pdf, known_pdf
from app.pdfs.storage import PdfFacts, PdfStorage, SavedPdf
from app.pdfs.titles import title_from_name

log = logging.getLogger(__name__)
# A racing identical write loses at most once per competitor; three tries cover a burst.
WRITE_ATTEMPTS = 3


@dataclass(frozen=True)
class Upload:
    """An uploaded PDF (or the PDF an Office file was converted to), stored; with ``chunk``, the
    document made of it too; ``origin``, the file it was made from."""

    facts: PdfFacts
    saved: SavedPdf
    document: UpsertOutcome | None = None
    origin: Origin = Origin()


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
        converter: OfficeConverter | None = None,
        limits: SourceLimits | None = None,
    ) -> None:
        self.session_factory = session_factory
        self.storage = storage
        self.index_cache = index_cache
        # None: Office files are refused as if LibreOffice were not installed (415).
        self.converter = converter
        self.limits = limits or SourceLimits()

    async def put(
        self,
        document_id: str,
        body: DocumentUpsert,
        facts: PdfFacts | None = None,
        origin: Origin | None = None,
    ) -> UpsertOutcome:
        """Store a document and all its chunks in one transaction, each chunk placed in the
        PDF's own text first (``placing.py``: its pages found, its span kept). ``facts`` are the
        PDF's hash and page count when the caller already read them (ingest hashes the bytes it
        chunked); ``origin`` the file it was made from (None: kept while the PDF is the same
        content)."""
        if facts is None:
            facts = await asyncio.to_thread(self.storage.facts, body.source_path)
        check_chunks(body.chunks, facts.page_count)
        given = [GivenChunk(c.text, c.page_start, c.page_end) for c in body.chunks]
        placed = await asyncio.to_thread(
            place_in_pdf,
            self.storage,
            self.index_cache,
            body.source_path,
            facts.sha256,
            facts.page_count,
            given,
        )
        outcome = await in_transaction(
            self.session_factory,
            lambda session: upsert(session, self.storage, document_id, body, facts, origin, placed),
            attempts=WRITE_ATTEMPTS,
        )
        # What placing found, for the answer (nothing of it is stored but in the chunks).
        return replace(outcome, page_offset=placed.page_offset, unchecked=placed.unchecked)

    async def ingest(
        self, pdf_path: Path, document_id: str | None, title: str | None = None
    ) -> UpsertOutcome:
        """A PDF from anywhere on disk, chunked here and stored with its chunks (``ingest``).
        Chunked from the text index, so a PDF that cannot be indexed is refused before anything
        is stored; the index is written to the caches the servers read (the shared disk cache
        and the object store's index blobs), and scanned pages are read by OCR once, here.
        Any other supported file (an Office file, a text source) is taken as ``upload_file``
        takes it, with chunk=true."""
        doc_id = ingest_id(pdf_path, document_id)
        head = await asyncio.to_thread(head_of, pdf_path)
        if b"%PDF-" not in head:
            data = await asyncio.to_thread(read_within, pdf_path, self.limits.largest)
            upload = await self.upload_file(
                doc_id, data, filename=pdf_path.name, chunk=True, title=title
            )
            assert upload.document is not None  # chunk=True
            return upload.document
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
        origin = Origin(original_name=pdf_path.name)
        return await self.put(plan.document_id, plan.body, plan.facts, origin)

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
        title_needs_chunk(title, chunk)
        if not data:
            raise InvalidUpload("the request body is empty; send the PDF's bytes as the body")
        if b"%PDF-" not in data[: PDF_HEADER_WITHIN + 5]:
            raise UnreadablePdf("the body is not a PDF (no %PDF- header in its first 1024 bytes)")
        actual = await asyncio.to_thread(checked_hash, data, sha256)
        name = f"{document_id}.pdf"
        return await self._take_pdf(document_id, data, actual, name, chunk, title, document_id)

    async def upload_file(
        self,
        document_id: str,
        data: bytes,
        *,
        filename: str | None = None,
        media_type: str | None = None,
        sha256: str | None = None,
        chunk: bool = False,
        title: str | None = None,
    ) -> Upload:
        """Any supported file, taken by what its bytes are (``core/formats.sniff``; ``filename``
        and ``media_type`` only tell Markdown from text): a PDF as ``upload`` takes it; an Office
        file converted to PDF (once per original content, ``pdfs/originals.py``), then the same;
        a text source by ``text_sources.upload_text``. Each family within its own size limit
        (413). ``filename`` is recorded as the document's ``original_name``. A file refused by
        its bytes or size stores nothing; an Office file's converted PDF, conversion record and
        original are stored before the PDF is inspected (named by content: the same file again
        reuses them), so a converted PDF that cannot be chunked leaves them, with no document."""
        title_needs_chunk(title, chunk)
        # Off the event loop: a ZIP's directory and a text body are read here.
        fmt = await asyncio.to_thread(sniff, data, filename, media_type, self.limits.max_text_bytes)
        name = filename or default_name(document_id, fmt)
        self.limits.check(fmt, len(data), name)
        actual = await asyncio.to_thread(checked_hash, data, sha256)
        kind = family(fmt)
        if kind == "text":
            return await upload_text(
                self, document_id, data, fmt, sha256=actual, filename=filename, chunk=chunk,
                title=title,
            )  # fmt: skip
        fallback = title_from_name(filename) if filename else document_id
        if kind == "pdf":
            origin = Origin(original_name=filename)
            return await self._take_pdf(
                document_id, data, actual, name, chunk, title, fallback, origin
            )
        if self.converter is None:
            raise ConverterMissing(f"{name} is an Office document, and this service converts none")
        converted = await asyncio.to_thread(known_pdf, self.storage, data, actual, fmt.value)
        if converted is None:
            converted = await self.converter.run(
                name, converted_pdf, self.storage, self.converter, data, actual, fmt.value, name
            )
        origin = Origin(fmt, filename, actual, converted.original_path)
        return await self._take_pdf(
            document_id,
            converted.data,
            converted.sha256,
            name,
            chunk,
            title,
            fallback,
            origin,
            newly_stored=converted.newly_stored,
        )

    async def _take_pdf(
        self,
        document_id: str,
        data: bytes,
        sha256: str,
        name: str,
        chunk: bool,
        title: str | None,
        fallback_title: str,
        origin: Origin | None = None,
        newly_stored: bool | None = None,
    ) -> Upload:
        """The PDF path of every upload: inspected (and chunked) in the PDF workers, stored by
        its content, and with ``chunk`` the document put. ``origin`` None: the document keeps
        what it was made from while its PDF stays the same content."""
        facts, saved, chunks = await asyncio.to_thread(
            store_upload, self.storage, self.index_cache, data, sha256, name, document_id, chunk
        )
        if newly_stored is not None:  # the converted PDF was stored before it was inspected
            saved = SavedPdf(saved.source_path, newly_stored)
        if not chunk:
            return Upload(facts, saved, origin=origin or Origin())
        body = DocumentUpsert(
            title=title or facts.title or fallback_title,
            source_path=saved.source_path,
            chunks=chunks,
        )
        outcome = await self.put(document_id, body, facts, origin)
        return Upload(facts, saved, outcome, origin_of(outcome.document))

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
