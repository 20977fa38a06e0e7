"""Engine and session factory. A transaction is owned by whoever opened it: services flush, never
commit, and ``transaction`` commits once at the end (or rolls back on any error).

SQLite needs two guards a server database does not. The service opens the file read-write but
never creates it (``mode=rw``): a database deleted under a running service must answer 503, not
come back as a new empty file. And each connection remembers which file (device and inode) it
opened: a pooled connection to a file that was deleted, replaced or overwritten is discarded at
checkout, and a commit is only acknowledged when the file it went to is still the database, so no
write is acknowledged and then lost with an unlinked file.

That second guard must never close a descriptor of the live database. SQLite coordinates
processes with POSIX fcntl locks, and closing *any* descriptor of a file drops *all* of the
process's locks on it ("How To Corrupt An SQLite Database File", 2.2). An earlier version opened
and closed the file at every pool checkout to read its header: a CLI ``ingest`` beside ``serve``
then believed it was alone, checkpointed and deleted the WAL the server still used, and every
write the server acknowledged afterwards was lost. So the path is checked with ``stat`` (no
descriptor), and the header is read with ``pread`` from one descriptor per file that this process
holds until the last engine using that file is disposed (``dispose_engine``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, TypeVar

from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy import event
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import (
    DisconnectionError,
)
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.pool import ConnectionPoolEntry

from app.core.errors import DatabaseUnavailable, WriteConflict
from app.db.failures import translate
from app.db.spans import trace_statements
from app.db.write_queue import WriteQueue

log = logging.getLogger(__name__)
T = TypeVar("T")
_FILE_KEY = "sqlite_file"
_MAGIC = b"SQLite format 3\x00"
FileIdentity = tuple[int, int]

# Descriptors this process holds open on database files, by identity, with how many engines use
# each. Shared between engines: closing one engine's descriptor would drop the locks of another
# engine's connections to the same file.
_held: dict[FileIdentity, list[int]] = {}  # identity -> [fd, engines]
_held_lock = threading.Lock()
_orphans: list[int] = []  # never closed, for the reason above (a race that needs two renames)
_watches: weakref.WeakKeyDictionary[Engine, SqliteFile] = weakref.WeakKeyDictionary()
_write_queues: weakref.WeakKeyDictionary[Engine, WriteQueue] = weakref.WeakKeyDictionary()
_threaded: weakref.WeakKeyDictionary[Engine, Threaded] = weakref.WeakKeyDictionary()


class SqliteFile:
    """Tells whether ``path`` still is the database file a connection opened, without ever
    closing a descriptor of a file that may be live."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._acquired: set[FileIdentity] = set()

    def identity(self) -> FileIdentity | None:
        """Device and inode of the file at ``path``, or None when it is gone or no longer starts
        like a SQLite database (overwritten in place: a WAL-mode connection would go on serving
        its cached pages and writing its WAL, unaware)."""
        try:
            stat = os.stat(self.path)
        except OSError:
            return None
        identity = (stat.st_dev, stat.st_ino)
        fd = self._descriptor(identity)
        if fd is None:
            return None
        try:
            header = os.pread(fd, len(_MAGIC), 0)
        except OSError:
            return None
        return identity if header == _MAGIC else None

    def _descriptor(self, identity: FileIdentity) -> int | None:
        with _held_lock:
            held = _held.get(identity)
            if held is not None:
                if identity not in self._acquired:
                    held[1] += 1
                    self._acquired.add(identity)
                return held[0]
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return None
            stat = os.fstat(fd)
            opened = (stat.st_dev, stat.st_ino)
            if opened == identity or opened not in _held:
                _held[opened] = [fd, 1]
                self._acquired.add(opened)
            else:
                # The path was replaced between stat and open by a file already held: closing
                # this second descriptor would drop the locks taken through the first.
                _orphans.append(fd)
            return fd if opened == identity else None

    def release(self) -> None:
        """After every connection of the engine is closed: give up this engine's descriptors."""
        with _held_lock:
            for identity in self._acquired:
                held = _held[identity]
                held[1] -= 1
                if held[1] == 0:
                    del _held[identity]
                    os.close(held[0])
            self._acquired.clear()


def database_path(url: URL) -> str:
    """The database part of a URL without SQLite's URI form ("file:" and its query), so the
    URL a user wrote and the one the engine is built with give the same path."""
    return (url.database or "").removeprefix("file:").split("?", 1)[0]


def describe_database(url: str | URL) -> str:
    """Kind and name, as a person reads them: "SQLite highlight.db", "PostgreSQL highlight".
    Never a password, a host or a server path: logs are shipped, and the SQLite URL the engine
    is built with is a URL-encoded URI of the absolute path."""
    url = make_url(url)
    backend = url.get_backend_name()
    kind = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}.get(backend, backend)
    name = database_path(url)
    if backend == "sqlite":
        name = "in memory" if name in ("", ":memory:") else PurePath(name).name
    return f"{kind} {name}" if name else kind


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


def create_engine(
    database_url: str, *, create: bool = False, pool_size: int = 5, max_overflow: int = 10
) -> AsyncEngine:
    """``create``: allow a missing SQLite file to be created (migrations only). ``pool_size``,
    ``max_overflow``: connections kept, and opened beyond them for a burst (the server passes
    its settings; SQLAlchemy's defaults otherwise). Dispose the engine with ``dispose_engine``."""
    url = make_url(database_url)
    pool = {"pool_size": pool_size, "max_overflow": max_overflow}
    if url.get_backend_name() != "sqlite":
        engine = create_async_engine(url, pool_pre_ping=True, **pool)
        trace_statements(engine.sync_engine, url)
        return engine
    named = url
    url, path = _sqlite_url(url, create)
    if path is None:
        # In memory (or a file: URI passed as is): SQLAlchemy may choose StaticPool, one
        # shared connection, which takes no size.
        pool = {}
    engine = create_async_engine(url, connect_args={"timeout": 30}, **pool)
    trace_statements(engine.sync_engine, named)
    watch = SqliteFile(path) if path is not None else None
    if watch is not None:
        _watches[engine.sync_engine] = watch
    _guard_sqlite(engine.sync_engine, watch)
    if path is not None and not create:
        # The same file through the standard driver, for whole transactions run in a thread
        # (threaded.py), with the same guards. Connections move between that pool's threads,
        # one thread at a time (the pool hands each to one session).
        # No overflow: only pool_size threads ever check a connection out.
        sync = create_sync_engine(
            url.set(drivername="sqlite+pysqlite"),
            connect_args={"timeout": 30, "check_same_thread": False},
            **{**pool, "max_overflow": 0},
        )
        trace_statements(sync, named)
        _guard_sqlite(sync, watch)
        _threaded[engine.sync_engine] = Threaded(
            sync, ThreadPoolExecutor(max_workers=pool_size, thread_name_prefix="sqlite")
        )
    return engine


@dataclass(frozen=True)
class Threaded:
    """A SQLite database's synchronous engine and the threads its transactions run in."""

    engine: Engine
    threads: ThreadPoolExecutor


def threaded_engine(factory: async_sessionmaker[AsyncSession]) -> Threaded | None:
    """The synchronous twin of the factory's SQLite file database (threaded.py), or None: a
    server database, or SQLite in memory."""
    bind = factory.kw.get("bind")
    return _threaded.get(bind.sync_engine) if isinstance(bind, AsyncEngine) else None


def _guard_sqlite(engine: Engine, watch: SqliteFile | None) -> None:
    """Foreign keys and WAL on every connection, and the file-identity guard at checkout."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, record: ConnectionPoolEntry) -> None:
        # SQLite ignores foreign keys unless asked, and WAL lets readers run beside a writer.
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.close()
        if watch is not None:
            record.info[_FILE_KEY] = (watch, watch.identity())

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_conn: Any, record: ConnectionPoolEntry, proxy: Any) -> None:
        opened = record.info.get(_FILE_KEY)
        if opened is not None and not _still_the_database(opened):
            # The pool retries with a fresh connection, which fails while the file is missing.
            raise DisconnectionError("the SQLite database file was deleted or replaced")


def _still_the_database(opened: tuple[SqliteFile, FileIdentity | None]) -> bool:
    watch, identity = opened
    return identity is not None and watch.identity() == identity


async def dispose_engine(engine: AsyncEngine) -> None:
    """Close every pooled connection, then the descriptors kept to watch the SQLite file."""
    await engine.dispose()
    threaded = _threaded.pop(engine.sync_engine, None)
    if threaded is not None:
        # After the transactions still running in its threads; their connections close too.
        await asyncio.to_thread(threaded.threads.shutdown, wait=True)
        threaded.engine.dispose()
    _write_queues.pop(engine.sync_engine, None)
    watch = _watches.pop(engine.sync_engine, None)
    if watch is not None:
        watch.release()


def create_session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


async def _opened_file(
    session: AsyncSession,
) -> tuple[SqliteFile, FileIdentity | None] | None:
    connection = await session.connection()
    opened: tuple[SqliteFile, FileIdentity | None] | None = connection.info.get(_FILE_KEY)
    return opened


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
            if opened is not None and not _still_the_database(opened):
                raise DatabaseUnavailable(
                    "the database file was deleted or replaced while this request ran; "
                    "nothing it wrote can be trusted to be stored, so retry it"
                )
    except Exception as exc:
        translated = translate(exc)
        if translated is None:
            raise
        raise translated from exc


def _write_queue(factory: async_sessionmaker[AsyncSession]) -> WriteQueue | None:
    """This process's queue of writers to the factory's SQLite database (write_queue.py); None
    for a server database, which has row locks."""
    bind = factory.kw.get("bind")
    if not isinstance(bind, AsyncEngine) or bind.dialect.name != "sqlite":
        return None
    with _held_lock:
        return _write_queues.setdefault(bind.sync_engine, WriteQueue())


async def retried(attempts: int, run: Callable[[], Awaitable[T]]) -> T:
    """``run()`` (one transaction), run again (at most ``attempts`` times in all) when it raises
    WriteConflict; the last WriteConflict is raised."""
    for attempt in range(1, attempts + 1):
        try:
            return await run()
        except WriteConflict:
            if attempt == attempts:
                raise
            log.info("a concurrent transaction won; retrying (%d of %d)", attempt, attempts)
            await asyncio.sleep(0.02 * attempt)
    raise AssertionError("unreachable")


async def in_transaction(
    factory: async_sessionmaker[AsyncSession],
    work: Callable[[AsyncSession], Awaitable[T]],
    *,
    attempts: int,
    combine: bool = False,
) -> T:
    """``work`` in one transaction, run again (at most ``attempts`` times in all) when it loses
    a race to a concurrent transaction: a duplicate insert, a deadlock or a serialization
    failure (WriteConflict). The other transaction went through, so this one goes through when
    tried again; the last WriteConflict is raised. On SQLite, after this process's writers
    before it; ``combine``: possibly in one transaction with theirs (write_queue.py: only for
    work that touches nothing but the session)."""

    async def alone(work: Callable[[AsyncSession], Awaitable[T]]) -> T:
        async def once() -> T:
            async with transaction(factory) as session:
                return await work(session)

        return await retried(attempts, once)

    async def together(works: list[Callable[[AsyncSession], Awaitable[Any]]]) -> list[Any]:
        async with transaction(factory) as session:
            return [await each(session) for each in works]

    queue = _write_queue(factory)
    if queue is None:
        return await alone(work)
    return await queue.run(work, combine=combine, alone=alone, together=together)
