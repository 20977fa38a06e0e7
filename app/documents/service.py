"""Documents use cases: register a PDF with its chunks (over HTTP or from the CLI), read it back.

Every write is one transaction owned by the caller; re-sending the same document is a no-op.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pymupdf
from sqlalchemy.ext.asyncio import AsyncSession

from app.alignment.index import file_sha256
from app.core.errors import BadRequest, Conflict, NotFound
from app.documents import repository
from app.documents.chunking import chunk_pdf
from app.documents.models import Chunk, Document
from app.documents.schemas import ID_PATTERN, ChunkIn, DocumentUpsert

UPLOAD_DIR = "ingested"


@dataclass(frozen=True)
class UpsertOutcome:
    document: Document
    created: bool
    changed: bool


@dataclass(frozen=True)
class PdfFacts:
    sha256: str
    page_count: int


def resolve_under_root(pdf_root: Path, source_path: str) -> Path:
    """The absolute path of ``source_path``, refusing anything that escapes the PDF root."""
    root = pdf_root.resolve()
    candidate = Path(source_path)
    if candidate.is_absolute() or "\\" in source_path:
        raise BadRequest(f"source_path must be relative to the PDF root, got {source_path!r}")
    resolved = (root / candidate).resolve()
    if not resolved.is_relative_to(root):
        raise BadRequest(f"source_path {source_path!r} points outside the PDF root")
    return resolved


def read_pdf_facts(path: Path) -> PdfFacts:
    """Blocking: hash the file and count its pages; a file PyMuPDF cannot open is a bad request."""
    sha256 = file_sha256(path)
    try:
        with pymupdf.open(path) as doc:
            if not doc.is_pdf:
                raise BadRequest(f"{path.name} is not a PDF")
            return PdfFacts(sha256, doc.page_count)
    except (pymupdf.FileDataError, RuntimeError) as exc:
        raise BadRequest(f"{path.name} cannot be opened as a PDF: {exc}") from exc


def slugify(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.").lower()
    return slug[:128] or "document"


def _same_chunks(stored: list[Chunk], incoming: list[Chunk]) -> bool:
    def key(c: Chunk) -> tuple[str, int, str, int, int]:
        return (c.id, c.ordinal, c.text, c.page_start, c.page_end)

    return sorted(map(key, stored)) == sorted(map(key, incoming))


def _check_chunks(chunks: list[ChunkIn], page_count: int) -> None:
    seen: set[str] = set()
    ordinals: set[int] = set()
    for position, chunk in enumerate(chunks):
        if chunk.id in seen:
            raise BadRequest(f"chunks[{position}].id {chunk.id!r} appears twice")
        seen.add(chunk.id)
        ordinal = position if chunk.ordinal is None else chunk.ordinal
        if ordinal in ordinals:
            raise BadRequest(f"chunks[{position}].ordinal {ordinal} appears twice")
        ordinals.add(ordinal)
        if chunk.page_end > page_count:
            raise BadRequest(
                f"chunks[{position}] ends on page {chunk.page_end}, "
                f"but the PDF has {page_count} pages"
            )


async def upsert_document(
    session: AsyncSession, pdf_root: Path, document_id: str, body: DocumentUpsert
) -> UpsertOutcome:
    path = resolve_under_root(pdf_root, body.source_path)
    if not path.is_file():
        raise BadRequest(
            f"no PDF at source_path {body.source_path!r} under the PDF root; "
            "copy the file there first (or use `highlight-service ingest`)"
        )
    facts = await asyncio.to_thread(read_pdf_facts, path)
    _check_chunks(body.chunks, facts.page_count)

    owners = await repository.chunk_owners(session, [c.id for c in body.chunks])
    foreign = sorted(cid for cid, owner in owners.items() if owner != document_id)
    if foreign:
        raise Conflict(
            f"chunk ids already belong to another document: {', '.join(foreign[:5])}",
            details={"chunk_ids": foreign},
        )

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
    title = body.title or Path(body.source_path).stem
    source_path = path.relative_to(pdf_root.resolve()).as_posix()
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
    document.updated_at = datetime.now(UTC)
    await session.flush()
    await repository.replace_chunks(session, document, incoming)
    await session.refresh(document, ["chunks"])
    return UpsertOutcome(document, created=created, changed=True)


def _store_copy(pdf_root: Path, source: Path, sha256: str) -> str:
    """Copy a PDF into the root, named by content so re-ingesting never overwrites a file that a
    stored document still points at. Returns the path relative to the root."""
    relative = f"{UPLOAD_DIR}/{sha256}.pdf"
    target = pdf_root / relative
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".part")
        os.close(fd)
        shutil.copyfile(source, tmp)
        os.replace(tmp, target)
    return relative


def prepare_ingest(
    pdf_root: Path, pdf_path: Path, document_id: str | None
) -> tuple[str, DocumentUpsert]:
    """Blocking: chunk a PDF from anywhere on disk and make sure the file lives under the root."""
    if not pdf_path.is_file():
        raise NotFound(f"no such file: {pdf_path}")
    facts = read_pdf_facts(pdf_path)
    root = pdf_root.resolve()
    resolved = pdf_path.resolve()
    if resolved.is_relative_to(root):
        relative = resolved.relative_to(root).as_posix()
    else:
        relative = _store_copy(root, resolved, facts.sha256)
    drafts, _ = chunk_pdf(resolved)
    if not drafts:
        raise BadRequest(
            f"{pdf_path.name} has no text layer to chunk (a scan without OCR?); run OCR first"
        )
    doc_id = document_id or slugify(pdf_path.stem)
    if not re.fullmatch(ID_PATTERN, doc_id) or len(doc_id) > 128:
        raise BadRequest(
            f"document id {doc_id!r} must be at most 128 letters, digits, '.', '_', ':' or '-', "
            "starting with a letter or digit"
        )
    prefix = doc_id[: 256 - 6]
    body = DocumentUpsert(
        title=pdf_path.stem,
        source_path=relative,
        chunks=[
            ChunkIn(
                id=f"{prefix}-c{d.ordinal:04d}",
                text=d.text,
                page_start=d.page_start,
                page_end=d.page_end,
                ordinal=d.ordinal,
            )
            for d in drafts
        ],
    )
    return doc_id, body


async def ingest_pdf(
    session: AsyncSession, pdf_root: Path, pdf_path: Path, document_id: str | None = None
) -> UpsertOutcome:
    doc_id, body = await asyncio.to_thread(prepare_ingest, pdf_root, pdf_path, document_id)
    return await upsert_document(session, pdf_root, doc_id, body)


async def get_document(session: AsyncSession, document_id: str) -> Document:
    document = await repository.get_document(session, document_id)
    if document is None:
        raise NotFound(f"no document with id {document_id!r}")
    return document


async def pdf_path_of(session: AsyncSession, pdf_root: Path, document_id: str) -> Path:
    document = await get_document(session, document_id)
    path = resolve_under_root(pdf_root, document.source_path)
    if not path.is_file():
        raise NotFound(f"the PDF of document {document_id!r} is missing from the PDF root")
    return path
