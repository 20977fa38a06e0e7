"""Alembic environment: async engine, URL from HIGHLIGHT_DATABASE_URL unless the caller set one."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.core.config import get_settings
from app.db.base import Base
from app.db.migrate import ADVISORY_LOCK_KEY
from app.db.session import create_engine, dispose_engine
from app.documents import models as _documents  # noqa: F401  (registers the tables on Base.metadata)
from app.highlights import models as _highlights  # noqa: F401

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    return config.attributes.get("database_url") or get_settings().database_url


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_async() -> None:
    engine = create_engine(_url(), create=True)
    async with engine.connect() as connection:
        postgres = connection.dialect.name == "postgresql"
        if postgres:
            # Held by this session until unlocked: concurrent upgrades wait here, then find the
            # schema at head (app/db/migrate.py says why; SQLite is locked there).
            await connection.execute(
                text("SELECT pg_advisory_lock(:key)"), {"key": ADVISORY_LOCK_KEY}
            )
            await connection.commit()
        try:
            await connection.run_sync(_run)
        finally:
            if postgres:
                await connection.execute(
                    text("SELECT pg_advisory_unlock(:key)"), {"key": ADVISORY_LOCK_KEY}
                )
                await connection.commit()
    await dispose_engine(engine)


if context.is_offline_mode():
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(_run_async())
    else:
        # Called from inside an event loop (a test, an async caller): asyncio.run needs a thread.
        with ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(asyncio.run, _run_async()).result()
