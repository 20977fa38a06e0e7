"""Run Alembic from code: the schema is only ever created by the migrations in ``migrations/``.

Several processes may start at once (replicas, a migration Job beside a pod that still migrates
on start): each upgrade holds a lock for its whole run, so they never interleave DDL. PostgreSQL:
a session advisory lock taken in ``migrations/env.py`` on the connection that migrates. SQLite:
an exclusive ``flock`` on a file beside the database (the database file itself cannot be locked
that way without upsetting SQLite's own locks). The second process waits, then finds the schema
at head and does nothing.
"""

from __future__ import annotations

import fcntl
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.engine import make_url

from app.db.session import database_path

if TYPE_CHECKING:  # alembic (and mako) load when a migration runs, not with every app import
    from alembic.config import Config
    from alembic.script import ScriptDirectory

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"
# pg_advisory_lock's key: any fixed 64-bit number, the same in every release.
ADVISORY_LOCK_KEY = 0x68_6C_73_76_63_6D_69_67  # "hlsvcmig"


def alembic_config(database_url: str) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["database_url"] = database_url
    return config


@lru_cache(maxsize=1)
def _scripts() -> ScriptDirectory:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config("sqlite://"))


@lru_cache(maxsize=1)
def head_revisions() -> frozenset[str]:
    """The revisions this release's code expects the database to be at."""
    return frozenset(_scripts().get_heads())


@lru_cache(maxsize=1)
def known_revisions() -> frozenset[str]:
    """Every revision this release's migrations know. A database at a revision outside this set
    was migrated by a newer release (during a rolling update the Job runs before the old pods
    stop): migrations are written to be compatible with the release before them."""
    return frozenset(rev.revision for rev in _scripts().walk_revisions())


def sqlite_lock_path(database_url: str) -> Path | None:
    """The lock file beside a SQLite database file; None for other databases and in-memory."""
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite":
        return None
    database = database_path(url)
    if not database or database == ":memory:":
        return None
    path = Path(database).resolve()
    return path.with_name(path.name + ".migrate-lock")


@contextmanager
def _file_lock(path: Path | None) -> Iterator[None]:
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file is closed
        yield


class _AppliedSteps(logging.Filter):
    """Keeps the revisions alembic applies and drops its lines (its context, its DDL mode, one
    line per step): the caller sums them up in one line a person can read."""

    def __init__(self) -> None:
        super().__init__()
        self.applied: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        found = _STEP.search(record.getMessage())
        if found:
            self.applied.append(found.group(1))
        return record.levelno > logging.INFO


_STEP = re.compile(r"^Running upgrade .*-> (\S+?),")
_MIGRATION_LOG = logging.getLogger("alembic.runtime.migration")


def upgrade(database_url: str, revision: str = "head") -> list[str]:
    """Blocking (env.py runs its own event loop): call it from a thread inside async code.
    Returns the revisions applied, oldest first (empty: the schema was up to date)."""
    from alembic import command

    steps = _AppliedSteps()
    _MIGRATION_LOG.addFilter(steps)
    try:
        with _file_lock(sqlite_lock_path(database_url)):
            command.upgrade(alembic_config(database_url), revision)
    finally:
        _MIGRATION_LOG.removeFilter(steps)
    return steps.applied


def downgrade(database_url: str, revision: str) -> None:
    from alembic import command

    with _file_lock(sqlite_lock_path(database_url)):
        command.downgrade(alembic_config(database_url), revision)
