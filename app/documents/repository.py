"""Queries for documents and chunks. No commits here: the caller's transaction decides."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import selectinload, undefer

from app.documents.models import Chunk, Document


async def get_document(
    session: AsyncSession, document_id: str, *, with_blocks: bool = False, with_text: bool = False
) -> Document | None:
    """The document with its chunks; ``with_blocks``: and a text source's stored blocks;
    ``with_text``: and a PDF's own text."""
    query = select(Document).where(Document.id == document_id)
    query = query.options(selectinload(Document.chunks))
    if with_blocks:
        query = query.options(undefer(Document.text_blocks))
    if with_text:
        query = query.options(undefer(Document.reading_text))
    return await session.scalar(query)


async def get_document_row(session: AsyncSession, document_id: str) -> Document | None:
    """The document without its chunks."""
    return await session.get(Document, document_id)


async def chunk_owners(session: AsyncSession, chunk_ids: Sequence[str]) -> dict[str, str]:
    rows = await session.execute(
        select(Chunk.id, Chunk.document_id).where(Chunk.id.in_(set(chunk_ids)))
    )
    return {row.id: row.document_id for row in rows}


async def replace_chunks(session: AsyncSession, document: Document, chunks: list[Chunk]) -> None:
    # Delete then insert in one flush order: the (document_id, ordinal) unique constraint would
    # trip on an in-place renumbering.
    await session.execute(delete(Chunk).where(Chunk.document_id == document.id))
    await session.flush()
    session.expire(document, ["chunks"])
    session.add_all(chunks)
    await session.flush()
