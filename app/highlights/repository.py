"""Queries of the highlights domain: stored highlights and cached results. No commits here."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from sqlalchemy import Executable, delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from app.highlights.models import CachedResult, StoredHighlight


def _insert_or_ignore(
    session: AsyncSession, model: type, rows: list[dict[str, object]]
) -> Executable:
    # Concurrent identical batches write the same rows: the first one wins, the rest are no-ops.
    if session.get_bind().dialect.name == "postgresql":
        return postgresql.insert(model).values(rows).on_conflict_do_nothing()
    return sqlite.insert(model).values(rows).on_conflict_do_nothing()


async def cached_response(session: AsyncSession, key: str, not_before: datetime) -> str | None:
    """The cached answer for ``key``, unless it was stored before ``not_before`` (expired rows are
    deleted lazily)."""
    row = await session.scalar(
        select(CachedResult.response).where(
            CachedResult.key == key, CachedResult.created_at >= not_before
        )
    )
    return row


async def store_response(session: AsyncSession, key: str, response: str, now: datetime) -> None:
    row: dict[str, object] = {"key": key, "response": response, "created_at": now}
    await session.execute(_insert_or_ignore(session, CachedResult, [row]))


async def prune_responses(session: AsyncSession, older_than: datetime) -> None:
    await session.execute(delete(CachedResult).where(CachedResult.created_at < older_than))


async def store_highlights(session: AsyncSession, rows: list[dict[str, object]]) -> None:
    """Insert-or-ignore (an id is a hash of everything the row holds), in id order: two batches
    storing overlapping highlights then take their row locks in the same order and cannot
    deadlock each other (on PostgreSQL they did, in request order)."""
    if rows:
        ordered = sorted(rows, key=lambda row: str(row["id"]))
        await session.execute(_insert_or_ignore(session, StoredHighlight, ordered))


async def stored_highlight_ids(session: AsyncSession, highlight_ids: Collection[str]) -> set[str]:
    rows = await session.scalars(
        select(StoredHighlight.id).where(StoredHighlight.id.in_(set(highlight_ids)))
    )
    return set(rows)


async def get_highlight(session: AsyncSession, highlight_id: str) -> StoredHighlight | None:
    return await session.get(StoredHighlight, highlight_id)


async def get_highlights(
    session: AsyncSession, highlight_ids: Sequence[str]
) -> list[StoredHighlight]:
    rows = await session.scalars(
        select(StoredHighlight).where(StoredHighlight.id.in_(set(highlight_ids)))
    )
    return list(rows)


async def forget_highlights_of(session: AsyncSession, document_id: str, keep_sha256: str) -> None:
    """Highlights of a document's previous content: their rectangles belong to another file."""
    await session.execute(
        delete(StoredHighlight).where(
            StoredHighlight.document_id == document_id,
            StoredHighlight.document_sha256 != keep_sha256,
        )
    )
