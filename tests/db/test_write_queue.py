"""SQLite writers of one process wait in order, and combinable ones commit together
(app/db/write_queue.py), on a real SQLite file: every writer gets its own result or its own
error, a failing writer costs the others nothing, and a writer cancelled before its turn writes
nothing."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.session import create_engine, create_session_factory, dispose_engine, in_transaction
from app.highlights import repository
from app.highlights.models import CachedResult


@pytest.fixture
async def sqlite_factory(
    tmp_path: Path, sqlite_template: Path
) -> AsyncIterator[tuple[async_sessionmaker[AsyncSession], list[int]]]:
    """A migrated SQLite database, and a list that counts its commits."""
    path = tmp_path / "writes.db"
    shutil.copyfile(sqlite_template, path)
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    commits: list[int] = []
    event.listen(engine.sync_engine, "commit", lambda connection: commits.append(1))
    yield create_session_factory(engine), commits
    await dispose_engine(engine)


def _writer(key: str, fail: bool = False) -> Any:
    async def work(session: AsyncSession) -> str:
        await repository.store_response(session, key, "{}", datetime.now(UTC))
        if fail:
            raise ValueError(f"{key} refuses")
        return key

    return work


async def _keys(factory: async_sessionmaker[AsyncSession]) -> set[str]:
    async with factory() as session:
        return set(await session.scalars(select(CachedResult.key)))


async def test_waiting_writers_commit_together_and_each_gets_its_result(
    sqlite_factory: tuple[async_sessionmaker[AsyncSession], list[int]],
) -> None:
    factory, commits = sqlite_factory
    keys = [f"key-{i}" for i in range(20)]
    results = await asyncio.gather(
        *(in_transaction(factory, _writer(k), attempts=2, combine=True) for k in keys)
    )
    assert results == keys
    assert await _keys(factory) == set(keys)
    # The first writer found no queue; the other 19 waited behind it and went in one group.
    assert len(commits) < len(keys) / 4, commits


async def test_a_failing_writer_in_a_group_fails_alone(
    sqlite_factory: tuple[async_sessionmaker[AsyncSession], list[int]],
) -> None:
    factory, _ = sqlite_factory
    works = [_writer(f"key-{i}", fail=i == 7) for i in range(12)]
    outcomes = await asyncio.gather(
        *(in_transaction(factory, w, attempts=2, combine=True) for w in works),
        return_exceptions=True,
    )
    assert [str(o) for o in outcomes if isinstance(o, BaseException)] == ["key-7 refuses"]
    assert outcomes[:7] + outcomes[8:] == [f"key-{i}" for i in range(12) if i != 7]
    # Nothing of the failed group was kept but what each writer then committed alone.
    assert await _keys(factory) == {f"key-{i}" for i in range(12) if i != 7}


async def test_a_writer_cancelled_before_its_turn_writes_nothing(
    sqlite_factory: tuple[async_sessionmaker[AsyncSession], list[int]],
) -> None:
    factory, _ = sqlite_factory
    release = asyncio.Event()

    async def slow(session: AsyncSession) -> None:
        await session.execute(text("SELECT 1"))
        await release.wait()

    first = asyncio.create_task(in_transaction(factory, slow, attempts=1, combine=True))
    await asyncio.sleep(0.05)  # the first writer has the turn and waits inside its transaction
    cancelled = asyncio.create_task(
        in_transaction(factory, _writer("cancelled"), attempts=1, combine=True)
    )
    kept = asyncio.create_task(in_transaction(factory, _writer("kept"), attempts=1, combine=True))
    await asyncio.sleep(0.05)
    cancelled.cancel()
    release.set()
    await first
    assert await kept == "kept"
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert await _keys(factory) == {"kept"}
