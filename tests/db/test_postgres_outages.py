"""PostgreSQL going away under the service: connection-level failures are 503 database_unavailable
with Retry-After (never a 500 or a dropped connection), lost races are retried, and nothing
acknowledged is lost. On a44369f a restart under load gave 500 internal_error ("the database
system is starting up", "terminating connection due to administrator command" were not
recognised) and connections closed mid-request after each 500."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from app.core.errors import DatabaseUnavailable, WriteConflict
from app.db.session import create_engine, create_session_factory, dispose_engine, transaction
from tests.conftest import _pg_execute
from tests.fixtures.live import live_service
from tests.fixtures.load import Load, restart_postgres, wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


async def test_a_connection_the_server_terminates_is_503(postgres_url: str) -> None:
    """What every open connection gets when PostgreSQL shuts down: SQLSTATE 57P01."""
    engine = create_engine(postgres_url)

    async def terminated() -> None:
        async with transaction(create_session_factory(engine)) as session:
            await session.execute(text("SELECT pg_terminate_backend(pg_backend_pid())"))
            await session.execute(text("SELECT 1"))

    try:
        with pytest.raises(DatabaseUnavailable):
            await terminated()
        # The pool recovers by itself: the next transaction gets a new connection.
        async with transaction(create_session_factory(engine)) as session:
            assert (await session.execute(text("SELECT 1"))).scalar() == 1
    finally:
        await dispose_engine(engine)


async def test_a_deadlock_is_a_write_conflict_to_retry(postgres_url: str) -> None:
    plain = postgres_url.replace("+asyncpg", "")
    await _pg_execute(plain, "CREATE TABLE IF NOT EXISTS lock_pair (id int PRIMARY KEY)")
    await _pg_execute(plain, "TRUNCATE lock_pair; INSERT INTO lock_pair VALUES (1), (2)")
    engine = create_engine(postgres_url)
    factory = create_session_factory(engine)
    first_locked = [asyncio.Event(), asyncio.Event()]

    async def lock(order: tuple[int, int], me: int) -> None:
        async with transaction(factory) as session:
            lock_row = "SELECT id FROM lock_pair WHERE id = :id FOR UPDATE"
            await session.execute(text(lock_row), {"id": order[0]})
            first_locked[me].set()
            await first_locked[1 - me].wait()
            await session.execute(text(lock_row), {"id": order[1]})

    try:
        outcomes = await asyncio.gather(lock((1, 2), 0), lock((2, 1), 1), return_exceptions=True)
    finally:
        await dispose_engine(engine)
        await _pg_execute(plain, "DROP TABLE lock_pair")
    # PostgreSQL picks one victim; the other transaction commits.
    assert sorted(type(o).__name__ for o in outcomes) == ["NoneType", WriteConflict.__name__]


@pytest.mark.pg_restart
def test_a_postgres_restart_under_load_is_503_and_loses_nothing(
    postgres_url: str, tmp_path: Path, sample_pdf: Path
) -> None:
    if os.environ.get("HIGHLIGHT_TEST_PG_RESTART") != "1":
        pytest.skip("restarts the machine's PostgreSQL server: set HIGHLIGHT_TEST_PG_RESTART=1")
    if shutil.which("pg_ctlcluster") is None:
        pytest.fail("HIGHLIGHT_TEST_PG_RESTART=1 but there is no pg_ctlcluster to restart with")
    asyncio.run(
        _pg_execute(
            postgres_url.replace("+asyncpg", ""),
            "TRUNCATE chunk, document, highlight, result_cache",
        )
    )
    (tmp_path / "var" / "pdfs" / "sample").mkdir(parents=True)
    shutil.copyfile(sample_pdf, tmp_path / "var" / "pdfs" / "sample" / "sample-assembly.pdf")
    env = {
        "HIGHLIGHT_DATABASE_URL": postgres_url,
        "HIGHLIGHT_PDF_ROOT": str(tmp_path / "var" / "pdfs"),
        "HIGHLIGHT_INDEX_CACHE_DIR": str(tmp_path / "var" / "index-cache"),
    }
    with live_service(tmp_path, env, "demo") as service:
        load = Load([service.url], "pg", outage_ok=True)
        with load.running(workers=4):
            wait_until(lambda: load.requests > 30, "30 requests before the restart")
            restart_postgres()
            # Serving again on its own (the pool replaces its dead connections), then more load.
            wait_until(
                lambda: httpx.get(f"{service.url}/healthz", timeout=5).status_code == 200,
                "/healthz ok after the restart",
            )
            after = load.requests
            wait_until(lambda: load.requests > after + 30, "30 requests after the restart")
        assert not load.failures, load.failures[:5]
        lost = [
            d
            for d in load.acknowledged
            if httpx.get(f"{service.url}/v2/documents/{d}", timeout=30).status_code != 200
        ]
        assert not lost, f"{len(lost)} of {len(load.acknowledged)} acknowledged PUTs lost"
        dead = [
            h
            for h in sorted(load.highlight_ids)
            if httpx.get(f"{service.url}/v2/highlights/{h}", timeout=30).status_code != 200
        ]
        assert not dead, f"{len(dead)} answered highlight ids are not stored"
    assert "Traceback" not in service.output()
