"""Queries of the highlights domain: stored highlights, cached results, and the cited chunks a
batch reads. No commits here.

The batch path's queries are synchronous, given a ``Session``: it runs each transaction whole
(app/db/threaded.py), in a thread on SQLite.

The batch path (a few queries per request, every request) uses Core statements on the tables and
selects only the columns it needs: an ORM entity costs identity-map bookkeeping, a relationship
load costs a second query, and a multi-row ``insert().values(rows)`` is compiled again for every
row count. The inserts are module constants executed with a list of rows (executemany), compiled
once per dialect and then taken from SQLAlchemy's statement cache.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, cast

from sqlalchemy import Executable, Table, bindparam, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

if TYPE_CHECKING:  # each dialect's module imported by a process that uses it, below
    from sqlalchemy.dialects import postgresql, sqlite

from app.documents.models import Chunk, Document
from app.highlights.cited import StoredChunk
from app.highlights.models import CachedResult, StoredHighlight
from app.pdfs.titles import shown_title

_chunk = cast(Table, Chunk.__table__)
_document = cast(Table, Document.__table__)
_highlight = cast(Table, StoredHighlight.__table__)
_cache = cast(Table, CachedResult.__table__)

_TABLES = {"highlight": _highlight, "result_cache": _cache}
# A highlight of a document's earlier content keeps its row without its rectangles (``data``
# FORGOTTEN): a link to it then answers "its document changed" (410), not "no such highlight".
FORGOTTEN = ""
# In StoredChunk's field order.
_CHUNK_COLUMNS = (
    _chunk.c.id,
    _chunk.c.document_id,
    _document.c.title,
    # A placed chunk's sentences are cut from the PDF's own text of its span.
    func.coalesce(_chunk.c.own_text, _chunk.c.text),
    _chunk.c.page_start,
    _chunk.c.page_end,
    _document.c.source_path,
    _document.c.sha256,
    _document.c.updated_at,
    _document.c.source_format,
    _document.c.original_name,
    _chunk.c.placement,
)
# The reads of every batch (a result-cache hit is little else), built once with their values as
# parameters: building a statement and coercing each id into it cost more CPU than the queries.
_CHUNKS_BY_ID = (
    select(*_CHUNK_COLUMNS)
    .join_from(_chunk, _document, _chunk.c.document_id == _document.c.id)
    .where(_chunk.c.id.in_(bindparam("ids", expanding=True)))
)
_CACHED_RESPONSE = select(_cache.c.response).where(
    _cache.c.key == bindparam("key"), _cache.c.created_at >= bindparam("not_before")
)
_STORED_HIGHLIGHT_IDS = select(_highlight.c.id).where(
    _highlight.c.id.in_(bindparam("ids", expanding=True)), _highlight.c.data != FORGOTTEN
)


def _insert_or_ignore(session: Session, table: str) -> Executable:
    dialect = session.get_bind().dialect.name
    return _insert_statement("postgresql" if dialect == "postgresql" else "sqlite", table)


@cache
def _insert_statement(dialect: str, table: str) -> Executable:
    """Concurrent identical batches write the same rows: the first one wins, the rest are
    no-ops. Made once per dialect and table; a dialect's module is imported only by a process
    that uses it (PostgreSQL's took a fifth of a second of the app's import)."""
    statement: postgresql.Insert | sqlite.Insert
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql as pg

        statement = pg.insert(_TABLES[table])
    else:
        from sqlalchemy.dialects import sqlite as lite

        statement = lite.insert(_TABLES[table])
    if table != "highlight":
        return statement.on_conflict_do_nothing()
    # Insert, or fill a forgotten row again (its document went back to that content). The id
    # hashes the content, chunk, offsets and rectangles, not how the text is shown: a row written
    # before display_text changed (a line-end hyphen rule) takes the new form; an identical row
    # is left alone, so a batch's rows cost no write the second time.
    return statement.on_conflict_do_update(
        index_elements=[_highlight.c.id],
        set_={"data": statement.excluded.data},
        where=(_highlight.c.data == FORGOTTEN) | (_highlight.c.data != statement.excluded.data),
    )


def stored_chunks(session: Session, chunk_ids: Sequence[str]) -> dict[str, StoredChunk]:
    """The cited chunks that are stored, with what a batch needs of their documents, in one
    query."""
    if not chunk_ids:
        return {}
    rows = session.execute(_CHUNKS_BY_ID, {"ids": list(set(chunk_ids))})
    return {row[0]: _shown(StoredChunk(*tuple(row))) for row in rows}


def _shown(chunk: StoredChunk) -> StoredChunk:
    """A document stored before placeholder titles were refused ("Microsoft Word - x.doc")
    shows its file's name instead (pdfs/titles.py)."""
    named = chunk.original_name or chunk.source_path
    title = shown_title(chunk.document_title, named, chunk.document_id)
    return chunk if title == chunk.document_title else replace(chunk, document_title=title)


def document_texts(
    session: Session, document_ids: Collection[str]
) -> dict[str, list[tuple[str, str]]]:
    """Every chunk of each document, (id, text) in order: what its term statistics are counted
    over, and its text (highlights/sources.py)."""
    if not document_ids:
        return {}
    rows = session.execute(
        select(_chunk.c.document_id, _chunk.c.id, _chunk.c.text)
        .where(_chunk.c.document_id.in_(set(document_ids)))
        .order_by(_chunk.c.document_id, _chunk.c.ordinal)
    )
    texts: dict[str, list[tuple[str, str]]] = {}
    for document_id, chunk_id, text in rows:
        texts.setdefault(document_id, []).append((chunk_id, text))
    return texts


def own_texts(
    session: Session, document_ids: Collection[str]
) -> dict[str, tuple[str, dict[str, int]]]:
    """The own text of each PDF whose chunks were placed in it, and where each placed chunk
    starts there: the text its selectors index (highlights/sources.py)."""
    if not document_ids:
        return {}
    rows = session.execute(
        select(_document.c.id, _document.c.reading_text).where(
            _document.c.id.in_(set(document_ids)), _document.c.reading_text.is_not(None)
        )
    )
    texts: dict[str, tuple[str, dict[str, int]]] = {doc: (text, {}) for doc, text in rows}
    if texts:
        placed = session.execute(
            select(_chunk.c.document_id, _chunk.c.id, _chunk.c.source_start).where(
                _chunk.c.document_id.in_(set(texts)), _chunk.c.source_start.is_not(None)
            )
        )
        for document_id, chunk_id, start in placed:
            texts[document_id][1][chunk_id] = start
    return texts


def cached_response(session: Session, key: str, not_before: datetime) -> str | None:
    """The cached answer for ``key``, unless it was stored before ``not_before`` (expired rows are
    deleted lazily)."""
    row: str | None = session.scalar(_CACHED_RESPONSE, {"key": key, "not_before": not_before})
    return row


async def store_response(session: AsyncSession, key: str, response: str, now: datetime) -> None:
    await session.run_sync(put_response, key, response, now)


def put_response(session: Session, key: str, response: str, now: datetime) -> None:
    row: dict[str, object] = {"key": key, "response": response, "created_at": now}
    session.execute(_insert_or_ignore(session, "result_cache"), [row])


async def prune_responses(session: AsyncSession, older_than: datetime) -> None:
    await session.execute(delete(CachedResult).where(CachedResult.created_at < older_than))


def store_highlights(session: Session, rows: list[dict[str, object]]) -> None:
    """Insert, or update a forgotten row or one whose shown form changed, in id order: two
    batches storing overlapping highlights then take their row locks in the same order and
    cannot deadlock each other (on PostgreSQL they did, in request order)."""
    if rows:
        ordered = sorted(rows, key=lambda row: str(row["id"]))
        session.execute(_insert_or_ignore(session, "highlight"), ordered)


def stored_highlight_ids(session: Session, highlight_ids: Collection[str]) -> set[str]:
    """The ids that are stored with their rectangles (forgotten ones are not)."""
    rows = session.scalars(_STORED_HIGHLIGHT_IDS, {"ids": list(set(highlight_ids))})
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
    """Highlights of a document's previous content: their rectangles belong to another file,
    so they go; the row stays (a few dozen bytes), so a link to it can say why it is gone."""
    await session.execute(
        update(StoredHighlight)
        .where(
            StoredHighlight.document_id == document_id,
            StoredHighlight.document_sha256 != keep_sha256,
            StoredHighlight.data != FORGOTTEN,
        )
        .values(data=FORGOTTEN)
    )
