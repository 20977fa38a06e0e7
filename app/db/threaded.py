"""Transactions whose work is synchronous: on a SQLite file, run whole in a worker thread through
the standard driver, one hand-over from the event loop and one back; elsewhere, in the async
session (``run_sync``), with the same guarantees as ``session.transaction``.

Through aiosqlite every step of a transaction is a trip from the event loop to the connection's
thread and back: the checkout, ``BEGIN``, each cursor, each execute, each fetch, each close, the
commit. A lexical batch's two transactions took 18 such trips, and under load each waited its
turn on a busy loop: the write transaction held SQLite's file lock for all of them. Here the
loop hands the thread the whole transaction (the reads, the cache key, the inserts, the commit,
the file-identity check after it) and waits once.

The guarantees are ``session.transaction``'s: committed when the work returns, rolled back on
any error; a commit is acknowledged only when the file it went to is still the database (the
pool's checkout guard and ``SqliteFile`` are installed on this engine too, session.py); errors
are translated alike (failures.py); writers wait in the same per-process queue and may be
combined (write_queue.py). On PostgreSQL the work runs in the async session as before: asyncpg
has no synchronous connection to hand a thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session

from app.core.errors import DatabaseUnavailable
from app.db.failures import translate
from app.db.session import (
    _FILE_KEY,
    Threaded,
    _still_the_database,
    _write_queue,
    retried,
    threaded_engine,
    transaction,
)

T = TypeVar("T")
Work = Callable[[Session], T]


async def run_in_thread(threaded: Threaded, call: Callable[[], T]) -> T:
    """``call()`` in one of the database's threads, with this task's context (the request id in
    log lines, the trace span statements nest under)."""
    context = contextvars.copy_context()
    loop = asyncio.get_running_loop()
    try:
        future = loop.run_in_executor(threaded.threads, functools.partial(context.run, call))
    except RuntimeError as exc:  # the engine was disposed under a late request (shutdown)
        raise DatabaseUnavailable(
            "the service is shutting down and its database is closed; retry the request"
        ) from exc
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        # A transaction handed to its thread runs to its end whatever the caller does: wait
        # for it, so a writer's turn in the queue (and SQLite's lock) is given up only then.
        await asyncio.wait([future])
        raise


def _transaction(threaded: Threaded, work: Work[T]) -> T:
    """In a database thread: ``work`` in one transaction, as ``session.transaction`` runs it."""
    try:
        with Session(threaded.engine, expire_on_commit=False) as session:
            with session.begin():
                result = work(session)
                opened = session.connection().info.get(_FILE_KEY)
            if opened is not None and not _still_the_database(opened):
                raise DatabaseUnavailable(
                    "the database file was deleted or replaced while this request ran; "
                    "nothing it wrote can be trusted to be stored, so retry it"
                )
        return result
    except Exception as exc:
        translated = translate(exc)
        if translated is None:
            raise
        raise translated from exc


async def run_transaction(factory: async_sessionmaker[AsyncSession], work: Work[T]) -> T:
    """``work`` (synchronous, given a ``Session``) in one transaction: committed when it
    returns, rolled back on any error; errors as ``session.transaction`` raises them."""
    threaded = threaded_engine(factory)
    if threaded is None:
        async with transaction(factory) as session:
            return await session.run_sync(work)
    return await run_in_thread(threaded, functools.partial(_transaction, threaded, work))


async def in_thread_transaction(
    factory: async_sessionmaker[AsyncSession],
    work: Work[T],
    *,
    attempts: int,
    combine: bool = False,
) -> T:
    """``session.in_transaction`` for synchronous work: tried again (at most ``attempts`` times
    in all) after a lost race; on SQLite after this process's writers before it, and with
    ``combine`` possibly in one transaction with theirs (only work that touches nothing but the
    session)."""

    async def alone(work: Work[T]) -> T:
        return await retried(attempts, lambda: run_transaction(factory, work))

    async def together(works: list[Work[Any]]) -> list[Any]:
        return await run_transaction(factory, lambda session: [each(session) for each in works])

    queue = _write_queue(factory)
    if queue is None:
        return await alone(work)
    return await queue.run(work, combine=combine, alone=alone, together=together, kind="sync")
