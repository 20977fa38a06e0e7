"""Engine and session factory. The request's session owns the transaction: services flush, never
commit, and the dependency commits once at the end (or rolls back on any error)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from app.core.errors import Conflict, DatabaseUnavailable


def create_engine(database_url: str) -> AsyncEngine:
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        if url.database and url.database != ":memory:":
            Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine.sync_engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _: Any) -> None:
            # SQLite ignores foreign keys unless asked, and WAL lets readers run beside a writer.
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.close()

        return engine
    return create_async_engine(url, pool_pre_ping=True)


def create_session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


@asynccontextmanager
async def transaction(factory: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
    """One transaction: committed when the block ends, rolled back on any error. A database that
    cannot be reached becomes DatabaseUnavailable (503), not an anonymous 500."""
    try:
        async with factory() as session, session.begin():
            yield session
    # asyncpg lets socket errors through unwrapped; FileNotFoundError and friends are not these.
    except (OperationalError, InterfaceError, ConnectionError, socket.gaierror) as exc:
        raise DatabaseUnavailable(f"the database is unavailable: {type(exc).__name__}") from exc
    except IntegrityError as exc:
        # Services check uniqueness first, so this is two requests racing for the same rows.
        raise Conflict("a concurrent request wrote the same rows; retry the request") from exc
