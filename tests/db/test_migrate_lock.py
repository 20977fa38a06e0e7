"""Migrations never race: concurrent upgrades (replicas starting together, a migration Job beside
a pod that still migrates on start) wait for each other and all end at head, on SQLite (a file
lock beside the database) and PostgreSQL (an advisory lock)."""

from __future__ import annotations

import asyncio
import fcntl
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import text

from app.db.migrate import ADVISORY_LOCK_KEY, head_revisions, sqlite_lock_path, upgrade
from app.db.session import create_engine, dispose_engine
from tests.fixtures.replicas import ClusterError, postgres_database

pytestmark = pytest.mark.slow  # starts processes


async def _revisions(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return {
                r[0] for r in await conn.execute(text("SELECT version_num FROM alembic_version"))
            }
    finally:
        await dispose_engine(engine)


def _migrate_processes(url: str, count: int) -> list[subprocess.CompletedProcess[str]]:
    env = {**os.environ, "HIGHLIGHT_DATABASE_URL": url, "HIGHLIGHT_LLM_PROVIDER": "none"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "app.cli", "migrate"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        results.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return results


def _waits_for(hold: threading.Event, worker: threading.Thread) -> None:
    """``worker`` is still blocked after a second with the lock held, and finishes once it is
    released: the lock is what it waited for (not slowness: an unlocked upgrade of this schema
    takes a fraction of a second)."""
    worker.start()
    worker.join(1.0)
    assert worker.is_alive(), "the upgrade did not wait for the lock"
    hold.set()
    worker.join(60)
    assert not worker.is_alive()


def test_sqlite_upgrade_waits_for_the_lock(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'locked.db'}"
    lock_path = sqlite_lock_path(url)
    assert lock_path is not None
    assert lock_path.parent == tmp_path
    errors: list[BaseException] = []

    def migrate() -> None:
        try:
            upgrade(url)
        except BaseException as exc:
            errors.append(exc)

    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        worker = threading.Thread(target=migrate)
        worker.start()
        worker.join(1.0)
        assert worker.is_alive(), "the upgrade did not wait for the lock"
        assert not (tmp_path / "locked.db").exists() or not asyncio.run(_has_version(url))
    worker.join(60)
    assert not errors
    assert not worker.is_alive()
    assert asyncio.run(_revisions(url)) == set(head_revisions())


async def _has_version(url: str) -> bool:
    try:
        return bool(await _revisions(url))
    except Exception:
        return False


def test_concurrent_sqlite_migrations_all_succeed(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'race.db'}"
    results = _migrate_processes(url, 4)
    assert [r.returncode for r in results] == [0] * 4, [r.stderr[-500:] for r in results]
    assert asyncio.run(_revisions(url)) == set(head_revisions())


@pytest.fixture
def fresh_postgres() -> Iterator[str]:
    """An empty database: no schema yet, so the upgrades below really create it."""
    try:
        with postgres_database("highlight_migrate") as url:
            yield url
    except ClusterError as exc:
        pytest.skip(str(exc))


@pytest.mark.postgres
def test_postgres_upgrade_waits_for_the_advisory_lock(fresh_postgres: str) -> None:
    plain = fresh_postgres.replace("+asyncpg", "")
    held, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def migrate() -> None:
        try:
            upgrade(fresh_postgres)
        except BaseException as exc:
            errors.append(exc)

    async def hold() -> None:
        conn = await asyncpg.connect(plain)
        try:
            await conn.execute("SELECT pg_advisory_lock($1)", ADVISORY_LOCK_KEY)
            held.set()
            while not release.is_set():
                await asyncio.sleep(0.05)
            await conn.execute("SELECT pg_advisory_unlock($1)", ADVISORY_LOCK_KEY)
        finally:
            await conn.close()

    holder = threading.Thread(target=asyncio.run, args=(hold(),))
    holder.start()
    assert held.wait(10), "could not take the advisory lock"
    _waits_for(release, threading.Thread(target=migrate))
    holder.join(10)
    assert not errors
    assert asyncio.run(_revisions(fresh_postgres)) == set(head_revisions())


@pytest.mark.postgres
def test_concurrent_postgres_migrations_all_succeed(fresh_postgres: str) -> None:
    results = _migrate_processes(fresh_postgres, 4)
    assert [r.returncode for r in results] == [0] * 4, [r.stderr[-500:] for r in results]
    assert asyncio.run(_revisions(fresh_postgres)) == set(head_revisions())
