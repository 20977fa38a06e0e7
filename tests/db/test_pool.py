"""The server's connection pool is sized by its settings (HIGHLIGHT_DB_POOL_SIZE and
HIGHLIGHT_DB_MAX_OVERFLOW), on SQLite and PostgreSQL: a burst may open connections beyond the
pool, and those are closed when returned, while the pool's own stay open for the next burst."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from app.main import create_app
from app.services import Services
from tests.fixtures.app import make_settings


async def test_the_pool_keeps_its_size_and_closes_a_bursts_extra_connections(
    database_url: str, pdf_root: Path
) -> None:
    app = create_app(make_settings(database_url, pdf_root, db_pool_size=3, db_max_overflow=2))
    async with app.router.lifespan_context(app):
        state: Services = app.state.services
        pool = state.engine.pool
        burst = [await state.engine.connect() for _ in range(5)]
        for connection in burst:
            assert (await connection.execute(text("SELECT 1"))).scalar() == 1
        assert pool.checkedout() == 5  # type: ignore[attr-defined]
        for connection in burst:
            await connection.close()
        # The two opened past the pool's size were closed; its three wait for the next burst.
        assert pool.checkedin() == 3  # type: ignore[attr-defined]
        assert pool.size() == 3  # type: ignore[attr-defined]
