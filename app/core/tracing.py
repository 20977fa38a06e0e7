"""OpenTelemetry tracing, off unless the standard ``OTEL_*`` variables ask for it.

On when ``OTEL_TRACES_EXPORTER`` names an exporter (``otlp``, ``console``) or an OTLP endpoint
is set (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``), unless
``OTEL_SDK_DISABLED=true``. The SDK reads the rest itself: the endpoint, headers, timeout,
sampler (``OTEL_TRACES_SAMPLER``), resource attributes; the service is ``OTEL_SERVICE_NAME``,
by default ``highlight-service``. OTLP goes over HTTP/protobuf.

Off, nothing of OpenTelemetry is imported and ``span`` hands out one shared object whose
methods do nothing: the batch path pays a function call per span. The spans: the HTTP request
(api/middleware.py, continuing the caller's W3C trace context), the batch, ``choose``, the LLM
request (its ``traceparent`` is sent to the LLM server), ``locate`` and the database work
(``db.read``, ``db.write``, and a client span per SQL statement: app/db/spans.py). Names and
attributes follow OpenTelemetry's semantic conventions (HTTP server, GenAI client, database
client); a failed span has status ERROR and ``error.type`` (``set_error``). Log lines written
inside a span carry its ``trace_id`` and ``span_id`` (``current_ids``, read by core/logs.py).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, MutableMapping
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    asynccontextmanager,
    contextmanager,
)
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Tracer

log = logging.getLogger(__name__)
DEFAULT_SERVICE_NAME = "highlight-service"
INSTRUMENTATION = "app"
Kind = Literal["internal", "server", "client"]
Attributes = Mapping[str, str | bool | int | float]


class Span(Protocol):
    def set_attribute(self, key: str, value: Any) -> None: ...
    def update_name(self, name: str) -> None: ...
    def end(self) -> None: ...


class _NoSpan:
    """What ``span`` gives while tracing is off."""

    def set_attribute(self, key: str, value: Any) -> None:
        pass

    def update_name(self, name: str) -> None:
        pass

    def end(self) -> None:
        pass

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    async def __aenter__(self) -> _NoSpan:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


NO_SPAN = _NoSpan()
_tracer: Tracer | None = None


def enabled() -> bool:
    return _tracer is not None


def requested(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment asks for traces (the module docstring says how)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = _exporters(environ)
    if exporters is not None:
        return bool(exporters)
    return any(
        environ.get(name, "").strip()
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def _exporters(environ: Mapping[str, str]) -> list[str] | None:
    """The names in OTEL_TRACES_EXPORTER (``none`` removed), or None when it is not set."""
    value = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if not value:
        return None
    return [name.strip() for name in value.split(",") if name.strip() not in ("", "none")]


def setup_from_environment(environ: Mapping[str, str] = os.environ) -> bool:
    """Install the SDK (once per process) when the environment asks for traces; whether tracing
    is on. Unknown exporter names are logged and skipped."""
    if _tracer is not None:
        return True
    if not requested(environ):
        return False
    from opentelemetry import trace
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    name = environ.get("OTEL_SERVICE_NAME", "").strip() or DEFAULT_SERVICE_NAME
    # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are read by Resource.create as well.
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
    for exporter in _exporters(environ) or ["otlp"]:
        if exporter == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        elif exporter == "console":
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
        else:
            log.warning("OTEL_TRACES_EXPORTER: %r is not supported here (otlp, console)", exporter)
    trace.set_tracer_provider(provider)
    use_provider(provider)
    log.info("tracing on: service %s, exporters %s", name, _exporters(environ) or ["otlp"])
    return True


def use_provider(provider: TracerProvider) -> None:
    """Send this service's spans to ``provider`` (a test's in-memory exporter) without touching
    the process-wide provider, which can be set only once."""
    global _tracer
    _tracer = provider.get_tracer(INSTRUMENTATION)


def disable() -> None:
    global _tracer
    _tracer = None


def span(
    name: str,
    attributes: Attributes | None = None,
    *,
    kind: Kind = "internal",
    context: Context | None = None,
) -> AbstractContextManager[Span]:
    """A span around a block, current inside it (children and ``inject`` see it); records an
    exception that leaves the block."""
    if _tracer is None:
        return NO_SPAN
    return _start(_tracer, name, attributes, kind, context)


def async_span(
    name: str, attributes: Attributes | None = None
) -> AbstractAsyncContextManager[Span]:
    """``span`` for an ``async with`` that holds other asynchronous context managers (a
    transaction): ``async with async_span("db.read"), transaction(...) as session``."""
    if _tracer is None:
        return NO_SPAN
    return _async_start(name, attributes)


@asynccontextmanager
async def _async_start(name: str, attributes: Attributes | None) -> AsyncIterator[Span]:
    with span(name, attributes) as current:
        yield current


@contextmanager
def _start(
    tracer: Tracer, name: str, attributes: Attributes | None, kind: Kind, context: Context | None
) -> Iterator[Span]:
    from opentelemetry.trace import SpanKind

    with tracer.start_as_current_span(
        name, context=context, kind=SpanKind[kind.upper()], attributes=attributes
    ) as current:
        yield current


def detached_span(
    name: str, attributes: Attributes | None = None, *, kind: Kind = "internal"
) -> Span:
    """A span that is not made current (ended by ``end``): for work that spans an async
    generator's yields, where a current span would leak into the consumer's context, or that
    starts and ends in two callbacks (a database statement)."""
    if _tracer is None:
        return NO_SPAN
    from opentelemetry.trace import SpanKind

    return _tracer.start_span(name, attributes=attributes, kind=SpanKind[kind.upper()])


def set_error(span: Span, error_type: str, description: str | None = None) -> None:
    """Mark ``span`` failed as OpenTelemetry's conventions record errors: status ERROR and
    ``error.type``, a low-cardinality class of the failure (a status code, an outcome)."""
    if isinstance(span, _NoSpan):
        return
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, description))  # type: ignore[attr-defined]


def current_ids() -> tuple[str, str] | None:
    """The current span's trace and span id (hex, as W3C writes them), None outside a span or
    while tracing is off."""
    if _tracer is None:
        return None
    from opentelemetry.trace import get_current_span

    context = get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


def inject(headers: MutableMapping[str, str]) -> None:
    """Add the current trace context (``traceparent``, W3C) to outgoing ``headers``."""
    if _tracer is None:
        return
    from opentelemetry.propagate import inject as propagate

    propagate(headers)


def extract(headers: Iterable[tuple[bytes, bytes]]) -> Context | None:
    """The caller's trace context from ASGI request headers, or None when tracing is off."""
    if _tracer is None:
        return None
    from opentelemetry.propagate import extract as propagate

    carrier = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in headers}
    return propagate(carrier)
