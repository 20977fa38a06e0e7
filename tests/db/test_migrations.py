"""Alembic is the only way the schema is made: up, down and up again, on both databases."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import inspect

from app.db.base import Base
from app.db.migrate import downgrade, upgrade
from app.db.session import create_engine
from app.documents import models as _documents  # noqa: F401
from app.highlights import models as _highlights  # noqa: F401


async def _tables(url: str) -> set[str]:
    engine = create_engine(url)
    async with engine.connect() as conn:
        names = await conn.run_sync(lambda c: set(inspect(c).get_table_names()))
    await engine.dispose()
    return names - {"alembic_version"}


def test_sqlite_round_trip(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"
    upgrade(url)
    assert asyncio.run(_tables(url)) == set(Base.metadata.tables)
    downgrade(url, "base")
    assert asyncio.run(_tables(url)) == set()
    upgrade(url)
    assert asyncio.run(_tables(url)) == set(Base.metadata.tables)


@pytest.mark.postgres
def test_postgres_round_trip(postgres_url: str) -> None:
    downgrade(postgres_url, "base")
    assert asyncio.run(_tables(postgres_url)) == set()
    upgrade(postgres_url)
    assert asyncio.run(_tables(postgres_url)) == set(Base.metadata.tables)


def test_models_and_migrations_do_not_drift(tmp_path: Path) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    url = f"sqlite+aiosqlite:///{tmp_path / 'drift.db'}"
    upgrade(url)

    async def diff() -> list[object]:
        engine = create_engine(url)
        async with engine.connect() as conn:
            result: list[object] = await conn.run_sync(
                lambda c: compare_metadata(MigrationContext.configure(c), Base.metadata)
            )
        await engine.dispose()
        return result

    assert asyncio.run(diff()) == []
