"""Whole SQLite transactions in a thread (app/db/threaded.py), on a real SQLite file: the same
guarantees as the async path. A file deleted under a write is a 503 and is not created again;
sync and async writers in one process are never grouped into one transaction; a cancelled
writer's transaction ends before the next writer's turn; engine disposal leaves no thread."""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session

from app.core.errors import DatabaseUnavailable
from app.db.session import (
    create_engine,
    create_session_factory,
    dispose_engine,
    in_transaction,
    threaded_engine,
)
from app.db.threaded import in_thread_transaction, run_in_thread, run_transaction

INSERT = "insert into result_cache(key, response, created_at) values (:k, 'r', '2020-01-01')"
KEYS = "select key from result_cache order by key"


@pytest.fixture
async def factory(
    tmp_path: Path, sqlite_template: Path
) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    path = tmp_path / "threaded.db"
    shutil.copyfile(sqlite_template, path)
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    yield create_session_factory(engine)
    await dispose_engine(engine)


def _keys(session: Session) -> list[str]:
    return list(session.execute(text(KEYS)).scalars())


async def test_a_file_deleted_under_a_write_is_unavailable_and_never_created_again(
    factory: async_sessionmaker[AsyncSession], tmp_path: Path
) -> None:
    path = tmp_path / "threaded.db"

    def work(session: Session) -> str:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        session.execute(text(INSERT), {"k": "lost"})
        return "acknowledged"

    with pytest.raises(DatabaseUnavailable):
        await in_thread_transaction(factory, work, attempts=2, combine=True)
    with pytest.raises(DatabaseUnavailable):
        await run_transaction(factory, lambda s: s.execute(text("select 1")).scalar())
    assert not path.exists()


async def test_sync_and_async_writers_are_never_grouped(
    factory: async_sessionmaker[AsyncSession],
) -> None:
    def slow(session: Session) -> str:
        time.sleep(0.2)  # holds the turn, so the two below wait behind it
        session.execute(text(INSERT), {"k": "sync-0"})
        return "sync-0"

    def sync_work(session: Session) -> str:
        session.execute(text(INSERT), {"k": "sync-1"})
        return "sync-1"

    async def async_work(session: AsyncSession) -> str:
        await session.execute(text(INSERT), {"k": "async"})
        return "async"

    first = asyncio.create_task(in_thread_transaction(factory, slow, attempts=2, combine=True))
    await asyncio.sleep(0.05)
    results = await asyncio.gather(
        first,
        in_thread_transaction(factory, sync_work, attempts=2, combine=True),
        in_transaction(factory, async_work, attempts=2, combine=True),
    )
    assert list(results) == ["sync-0", "sync-1", "async"]
    assert await run_transaction(factory, _keys) == ["async", "sync-0", "sync-1"]


async def test_a_cancelled_writer_holds_its_turn_until_its_transaction_ends(
    factory: async_sessionmaker[AsyncSession],
) -> None:
    events: list[str] = []
    started = threading.Event()

    def slow(session: Session) -> None:
        started.set()
        time.sleep(0.3)
        session.execute(text(INSERT), {"k": "slow"})
        events.append("slow committed")

    def next_one(session: Session) -> None:
        events.append("next began")
        session.execute(text(INSERT), {"k": "next"})

    task = asyncio.create_task(in_thread_transaction(factory, slow, attempts=1))
    await asyncio.to_thread(started.wait, 10)
    task.cancel()
    following = asyncio.create_task(in_thread_transaction(factory, next_one, attempts=1))
    with pytest.raises(asyncio.CancelledError):
        await task
    await following
    # Handed to its thread, the transaction ran to its end, and only then came the next turn.
    assert events == ["slow committed", "next began"]
    assert await run_transaction(factory, _keys) == ["next", "slow"]


async def test_disposal_leaves_no_database_thread(tmp_path: Path, sqlite_template: Path) -> None:
    path = tmp_path / "dispose.db"
    shutil.copyfile(sqlite_template, path)
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    factory = create_session_factory(engine)
    assert await run_transaction(factory, lambda s: s.execute(text("select 1")).scalar()) == 1
    threaded = threaded_engine(factory)  # as a request that took it just before shutdown
    assert threaded is not None
    await dispose_engine(engine)
    assert not [t for t in threading.enumerate() if t.name.startswith("sqlite")]
    # Its transaction is refused with a 503, not a RuntimeError (a 500).
    with pytest.raises(DatabaseUnavailable, match="shutting down"):
        await run_in_thread(threaded, lambda: 1)
