"""Engine and session factory. A transaction is owned by whoever opened it: services flush, never
commit, and ``transaction`` commits once at the end (or rolls back on any error).

SQLite needs two guards a server database does not. The service opens the file read-write but
never creates it (``mode=rw``): a database deleted under a running service must answer 503, not
come back as a new empty file. And each connection remembers which file (device and inode) it
opened: a pooled connection to a file that was deleted, replaced or overwritten is discarded at
checkout, and a commit is only acknowledged when the file it went to is still the database, so no
write is acknowledged and then lost with an unlinked file.
"""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import (
    DatabaseError,
    DisconnectionError,
    IntegrityError,
    InterfaceError,
    OperationalError,
)
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.pool import ConnectionPoolEntry

from app.core.errors import DatabaseUnavailable, WriteConflict

_FILE_KEY = "sqlite_file"
_MAGIC = b"SQLite format 3\x00"
FileIdentity = tuple[int, int]


def _identity(path: str) -> FileIdentity | None:
    """Device and inode of the database file, or None when it is gone or no longer starts like a
    SQLite database (overwritten in place: a WAL-mode connection would go on serving its cached
    pages and writing its WAL, unaware)."""
    try:
        with open(path, "rb") as handle:
            stat = os.fstat(handle.fileno())
            header = handle.read(len(_MAGIC))
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino) if header == _MAGIC else None


def _sqlite_url(url: URL, create: bool) -> tuple[URL, str | None]:
    """The URL to connect with, and the database file's path (None for an in-memory database)."""
    database = url.database or ""
    if not database or database == ":memory:" or database.startswith("file:"):
        return url, None
    path = str(Path(database).resolve())
    if create:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return url, path
    return url.set(database=f"file:{path}", query={**url.query, "mode": "rw", "uri": "true"}), path


def create_engine(database_url: str, *, create: bool = False) -> AsyncEngine:
    """``create``: allow a missing SQLite file to be created (migrations only)."""
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite":
        return create_async_engine(url, pool_pre_ping=True)
    url, path = _sqlite_url(url, create)
    engine = create_async_engine(url, connect_args={"timeout": 30})

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_conn: Any, record: ConnectionPoolEntry) -> None:
        # SQLite ignores foreign keys unless asked, and WAL lets readers run beside a writer.
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.close()
        if path is not None:
            record.info[_FILE_KEY] = (path, _identity(path))

    @event.listens_for(engine.sync_engine, "checkout")
    def _on_checkout(dbapi_conn: Any, record: ConnectionPoolEntry, proxy: Any) -> None:
        opened = record.info.get(_FILE_KEY)
        if opened is not None and (opened[1] is None or _identity(opened[0]) != opened[1]):
            # The pool retries with a fresh connection, which fails while the file is missing.
            raise DisconnectionError("the SQLite database file was deleted or replaced")

    return engine


def create_session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


async def _opened_file(session: AsyncSession) -> tuple[str, FileIdentity | None] | None:
    connection = await session.connection()
    opened: tuple[str, FileIdentity | None] | None = connection.info.get(_FILE_KEY)
    return opened


def _is_unavailable(exc: Exception) -> bool:
    if isinstance(exc, IntegrityError):
        return False
    # asyncpg lets socket errors through unwrapped; a damaged SQLite file ("file is not a
    # database", "database disk image is malformed") is a plain DatabaseError.
    return isinstance(
        exc, OperationalError | InterfaceError | ConnectionError | socket.gaierror
    ) or (type(exc) is DatabaseError)


@asynccontextmanager
async def transaction(factory: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
    """One transaction: committed when the block ends, rolled back on any error. A database that
    cannot be reached becomes DatabaseUnavailable (503), two requests racing for the same rows
    WriteConflict (409, which writers retry)."""
    try:
        async with factory() as session:
            async with session.begin():
                yield session
                opened = await _opened_file(session)
            if opened is not None and (opened[1] is None or _identity(opened[0]) != opened[1]):
                raise DatabaseUnavailable(
                    "the database file was deleted or replaced while this request ran; "
                    "nothing it wrote can be trusted to be stored, so retry it"
                )
    except IntegrityError as exc:
        # Services check uniqueness first, so this is two requests racing for the same rows.
        raise WriteConflict("a concurrent request wrote the same rows; retry the request") from exc
    except Exception as exc:
        if _is_unavailable(exc):
            raise DatabaseUnavailable(f"the database is unavailable: {type(exc).__name__}") from exc
        raise
