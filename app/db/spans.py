"""A client span per SQL statement, while tracing is on, in OpenTelemetry's database conventions.

Named ``{db.operation.name} {db.namespace}`` (``SELECT highlight``), with ``db.system.name``
(``sqlite``, ``postgresql``), ``db.namespace`` (PostgreSQL's database; for SQLite the file's
name, never its folder, which would name the server's layout), ``db.operation.name`` (the
statement's first keyword), ``db.query.text`` (SQLAlchemy sends parameters apart, so the text
holds no values) and, for PostgreSQL, ``server.address`` and ``server.port``. A statement that
fails ends its span with status ERROR and ``error.type`` (the driver error's class).

The hooks are installed only when tracing is on as the engine is made (``create_app`` sets
tracing up before the lifespan opens the engine): off, a statement pays nothing, not even an
event dispatch. The ``db.read``/``db.write`` spans around transactions carry the same system and
namespace (``transaction_attributes``).
"""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from sqlalchemy import event
from sqlalchemy.engine import URL, Engine

from app.core import tracing

if TYPE_CHECKING:
    from sqlalchemy.engine.interfaces import ExceptionContext
    from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

_SPAN = "_highlight_span"
_ATTRIBUTES = "_highlight_db_attributes"


def database_attributes(url: URL) -> dict[str, str | int]:
    """What names the database on every span: its system and namespace (and the server)."""
    backend = url.get_backend_name()
    system = {"postgresql": "postgresql", "sqlite": "sqlite"}.get(backend, "other_sql")
    attributes: dict[str, str | int] = {"db.system.name": system}
    database = url.database or ""
    if backend == "sqlite":
        # "file:/srv/db/h.db" (a URI) or "/srv/db/h.db": the name without the folder.
        name = PurePath(database.removeprefix("file:")).name if database else ""
        attributes["db.namespace"] = name or ":memory:"
    elif database:
        attributes["db.namespace"] = database
    if backend != "sqlite" and url.host:
        attributes["server.address"] = url.host
        if url.port:
            attributes["server.port"] = url.port
    return attributes


def trace_statements(engine: Engine, url: URL) -> None:
    """Install the per-statement span hooks on ``engine`` (the async engine's ``sync_engine``)
    when tracing is on."""
    attributes = database_attributes(url)
    setattr(engine, _ATTRIBUTES, attributes)
    if not tracing.enabled():
        return
    namespace = attributes.get("db.namespace")

    def before(
        conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        if context is None or not tracing.enabled():
            return
        operation = _operation(statement)
        name = f"{operation} {namespace}" if operation and namespace else operation
        span_attributes = {**attributes, "db.query.text": statement}
        if operation:
            span_attributes["db.operation.name"] = operation
        span = tracing.detached_span(
            name or str(attributes["db.system.name"]), span_attributes, kind="client"
        )
        setattr(context, _SPAN, span)

    def after(
        conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        span = getattr(context, _SPAN, None)
        if span is not None:
            delattr(context, _SPAN)
            span.end()

    def failed(exception_context: ExceptionContext) -> None:
        context = exception_context.execution_context
        span = getattr(context, _SPAN, None)
        if span is not None:
            delattr(context, _SPAN)
            # The class only: a driver's message can quote the row's values.
            tracing.set_error(span, type(exception_context.original_exception).__name__)
            span.end()

    event.listen(engine, "before_cursor_execute", before)
    event.listen(engine, "after_cursor_execute", after)
    event.listen(engine, "handle_error", failed)


def transaction_attributes(
    factory: async_sessionmaker[AsyncSession],
) -> dict[str, str | int] | None:
    """The database's attributes for a span around a transaction; None while tracing is off
    (nothing to compute)."""
    if not tracing.enabled():
        return None
    bind = factory.kw.get("bind")
    engine = getattr(bind, "sync_engine", None)
    found: dict[str, str | int] | None = getattr(engine, _ATTRIBUTES, None)
    return found


def _operation(statement: str) -> str | None:
    """The statement's first keyword (SELECT, INSERT, ...), or None when it does not start
    with one."""
    head = statement.lstrip()[:16].split(None, 1)
    word = head[0].upper() if head else ""
    return word if word.isalpha() else None
