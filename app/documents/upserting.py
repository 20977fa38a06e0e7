"""The write of ``PUT /v2/documents/{id}``: a document and all its chunks, placed in its PDF
(``placing.py``), in one transaction. Re-sending the same document is a no-op (what was
stored is compared with what would be: texts, pages, placements and the PDF's own text)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.formats import SourceFormat
from app.documents import repository
from app.documents.errors import ChunkIdsTaken, InvalidChunks
from app.documents.models import Chunk, Document
from app.documents.placing import Placed
from app.documents.schemas import ChunkIn, DocumentUpsert
from app.documents.sources import Origin
from app.pdfs.storage import PdfFacts, PdfStorage
from app.pdfs.titles import name_title


@dataclass(frozen=True)
class UpsertOutcome:
    document: Document
    created: bool
    changed: bool
    # How the chunks were placed in the PDF: the given pages' offset, why none were checked.
    page_offset: int | None = None
    unchecked: str | None = None


def _same_chunks(stored: list[Chunk], incoming: list[Chunk]) -> bool:
    def key(c: Chunk) -> tuple[object, ...]:
        return (
            c.id,
            c.ordinal,
            c.text,
            c.page_start,
            c.page_end,
            c.given_page_start,
            c.given_page_end,
            c.placement,
            c.placed_share,
            c.source_start,
            c.source_end,
        )

    return sorted(map(key, stored), key=repr) == sorted(map(key, incoming), key=repr)


def check_chunks(chunks: list[ChunkIn], page_count: int) -> None:
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
        if chunk.page_end is not None and chunk.page_end > page_count:
            raise InvalidChunks(
                f"chunks[{position}] ends on page {chunk.page_end}, "
                f"but the PDF has {page_count} pages"
            )


def _incoming(document_id: str, body: DocumentUpsert, placed: Placed) -> list[Chunk]:
    return [
        Chunk(
            id=c.id,
            document_id=document_id,
            ordinal=i if c.ordinal is None else c.ordinal,
            text=c.text,
            page_start=where.page_start,
            page_end=where.page_end,
            source_start=where.start,
            source_end=where.end,
            own_text=where.offered,
            placement=where.status.value,
            placed_share=where.share,
            given_page_start=c.page_start,
            given_page_end=c.page_end,
        )
        for i, (c, where) in enumerate(zip(body.chunks, placed.chunks, strict=True))
    ]


async def upsert(
    session: AsyncSession,
    storage: PdfStorage,
    document_id: str,
    body: DocumentUpsert,
    facts: PdfFacts,
    origin: Origin | None,
    placed: Placed,
) -> UpsertOutcome:
    owners = await repository.chunk_owners(session, [c.id for c in body.chunks])
    foreign = sorted(cid for cid, owner in owners.items() if owner != document_id)
    if foreign:
        raise ChunkIdsTaken(foreign)
    incoming = _incoming(document_id, body, placed)
    title = body.title or facts.title or name_title(body.source_path, document_id)
    source_path = storage.normalize(body.source_path)
    document = await repository.get_document(session, document_id, with_text=True)
    created = document is None
    if document is None:
        document = Document(id=document_id, created_at=datetime.now(UTC))
        session.add(document)
    if origin is None:
        # A PUT names no file: the document keeps what it was made from while its PDF is the
        # same content, and is a plain PDF once it is another.
        same = document.sha256 == facts.sha256 if not created else False
        origin = origin_of(document) if same else Origin()
    recorded = origin_of(document)
    # Documents stored before names were recorded have none: the same file again fills it
    # in, which is no change (their highlights stay valid).
    unnamed = document.original_name is None and origin.original_name is not None
    if unnamed:
        recorded = replace(recorded, original_name=origin.original_name)
    if (
        not created
        and (document.title, document.source_path, document.sha256, recorded)
        == (title, source_path, facts.sha256, origin)
        and _same_chunks(document.chunks, incoming)
        and document.reading_text == placed.text
    ):
        if unnamed:
            document.original_name = origin.original_name
        return UpsertOutcome(document, created=False, changed=False)

    document.source_format = origin.source_format.value
    document.original_name = origin.original_name
    document.original_sha256 = origin.original_sha256
    document.original_path = origin.original_path
    document.title = title
    document.source_path = source_path
    document.sha256 = facts.sha256
    document.page_count = facts.page_count
    document.text_blocks = None  # a PDF's blocks are its own text's paragraphs
    document.reading_text = placed.text
    document.updated_at = datetime.now(UTC)
    await session.flush()
    await repository.replace_chunks(session, document, incoming)
    await session.refresh(document, ["chunks"])
    return UpsertOutcome(document, created=created, changed=True)


def origin_of(document: Document) -> Origin:
    return Origin(
        SourceFormat(document.source_format or SourceFormat.pdf),
        document.original_name,
        document.original_sha256,
        document.original_path,
    )
