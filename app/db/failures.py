"""What a database error means for the request: the database cannot serve now (503), or the
transaction lost a race to a concurrent one (409, which writers retry), or neither (a bug)."""

from __future__ import annotations

import socket

from sqlalchemy.exc import (
    DatabaseError,
    DBAPIError,
    IntegrityError,
    InterfaceError,
    OperationalError,
)
from sqlalchemy.exc import TimeoutError as PoolTimeout

from app.core.errors import DatabaseUnavailable, WriteConflict

# PostgreSQL error classes that mean "the server cannot serve now" (SQLSTATE, by prefix):
# connection exception, insufficient resources (too many connections), operator intervention
# (admin or crash shutdown, "the database system is starting up"), system error (I/O).
_UNAVAILABLE_SQLSTATES = ("08", "53", "57", "58")
# Deadlock and serialization failure: the transaction lost a race and succeeds when tried again.
_RETRY_SQLSTATES = ("40001", "40P01")


def _sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE of a driver error anywhere in the chain (asyncpg's is the cause of the
    adapter error SQLAlchemy wraps)."""
    seen: set[int] = set()
    stack: list[BaseException | None] = [exc]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        state = getattr(current, "sqlstate", None) or getattr(current, "pgcode", None)
        if isinstance(state, str):
            return state
        stack += [getattr(current, "orig", None), current.__cause__, current.__context__]
    return None


def _is_unavailable(exc: Exception) -> bool:
    if isinstance(exc, IntegrityError):
        return False
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    state = _sqlstate(exc)
    if state is not None and state.startswith(_UNAVAILABLE_SQLSTATES):
        return True
    # asyncpg lets socket errors through unwrapped; a damaged SQLite file ("file is not a
    # database", "database disk image is malformed") is a plain DatabaseError; a pool that
    # cannot hand out a connection in time is SQLAlchemy's TimeoutError.
    return isinstance(
        exc,
        OperationalError
        | InterfaceError
        | ConnectionError
        | socket.gaierror
        | TimeoutError
        | PoolTimeout,
    ) or (type(exc) is DatabaseError)


def _is_lost_race(exc: Exception) -> bool:
    state = _sqlstate(exc)
    return state is not None and state.startswith(_RETRY_SQLSTATES)


def translate(exc: Exception) -> DatabaseUnavailable | WriteConflict | None:
    """The error a failed transaction is reported as, or None: raise ``exc`` itself."""
    if isinstance(exc, IntegrityError):
        # Services check uniqueness first, so this is two requests racing for the same rows.
        return WriteConflict("a concurrent request wrote the same rows; retry the request")
    if _is_lost_race(exc):
        return WriteConflict("a concurrent request locked the same rows; retry the request")
    if _is_unavailable(exc):
        return DatabaseUnavailable(f"the database is unavailable: {type(exc).__name__}")
    return None
