"""Tracing: off unless the OTEL_* variables ask; spans into the SDK's in-memory exporter; W3C
trace context out and in; and a real OTLP/HTTP export to a local collector stand-in."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app.core import tracing
from tests.conftest import PROJECT_ROOT


@pytest.mark.parametrize(
    ("environ", "on"),
    [
        ({}, False),
        ({"OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "console,none"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        # An explicit "none" beats an endpoint set for another signal's sake.
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, False),
        ({"OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "otlp"}, True),
    ],
)
def test_only_the_standard_variables_switch_it_on(environ: dict[str, str], on: bool) -> None:
    assert tracing.requested(environ) is on


def test_off_every_span_is_the_same_inert_object() -> None:
    assert not tracing.enabled()
    with tracing.span("batch", {"a": 1}) as span:
        span.set_attribute("b", 2)
    assert span is tracing.NO_SPAN
    headers: dict[str, str] = {}
    tracing.inject(headers)
    assert headers == {}
    assert (
        tracing.extract([(b"traceparent", b"00-" + b"1" * 32 + b"-" + b"2" * 16 + b"-01")]) is None
    )
    assert not tracing.setup_from_environment({})


async def test_spans_nest_and_inject_names_the_current_one(spans: InMemorySpanExporter) -> None:
    async with tracing.async_span("db.read"):
        pass
    with tracing.span("batch", {"highlight.citations": 2}):
        with tracing.span("chat json_schema", kind="client") as client:
            headers: dict[str, str] = {}
            tracing.inject(headers)
            context = client.get_span_context()  # type: ignore[attr-defined]
    db, chat, batch = spans.get_finished_spans()
    assert (db.name, chat.name, batch.name) == ("db.read", "chat json_schema", "batch")
    assert chat.parent is not None
    assert chat.parent.span_id == batch.context.span_id
    _, trace_id, parent_id, flags = headers["traceparent"].split("-")
    assert (trace_id, parent_id) == (f"{context.trace_id:032x}", f"{context.span_id:016x}")
    assert int(flags, 16) & 1  # sampled
    assert batch.attributes == {"highlight.citations": 2}


def test_an_incoming_traceparent_is_continued(spans: InMemorySpanExporter) -> None:
    trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    incoming = [(b"traceparent", f"00-{trace_id}-{parent_id}-01".encode())]
    with tracing.span("POST", kind="server", context=tracing.extract(incoming)):
        pass
    (server,) = spans.get_finished_spans()
    assert f"{server.context.trace_id:032x}" == trace_id
    assert server.parent is not None
    assert f"{server.parent.span_id:016x}" == parent_id


class _Collector(BaseHTTPRequestHandler):
    received: list[tuple[str, bytes]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        _Collector.received.append((self.path, body))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()


EXPORTING = """
from opentelemetry import trace
from app.core import tracing
assert tracing.setup_from_environment()
with tracing.span("batch"):
    pass
trace.get_tracer_provider().shutdown()  # flushes the batch processor
"""


@pytest.mark.slow  # starts another program
def test_otlp_over_http_reaches_the_collector_with_the_service_name() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Collector.received.clear()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env |= {
            "PYTHONPATH": str(PROJECT_ROOT),
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}",
        }
        result = subprocess.run(
            [sys.executable, "-c", EXPORTING],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, result.stderr
    finally:
        server.shutdown()
        server.server_close()
    ((path, body),) = _Collector.received
    assert path == "/v1/traces"
    request = ExportTraceServiceRequest.FromString(body)
    (resource,) = request.resource_spans
    attributes = {a.key: a.value.string_value for a in resource.resource.attributes}
    assert attributes["service.name"] == "highlight-service"
    assert [s.name for scope in resource.scope_spans for s in scope.spans] == ["batch"]


ONE_SERVER_SPAN = """
import asyncio, httpx
from pathlib import Path
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from app.core import tracing
from app.main import create_app
from tests.fixtures.app import make_settings

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)  # what setup_from_environment does
tracing.use_provider(provider)
app = create_app(make_settings("sqlite+aiosqlite:///unused.db", Path("unused")))

async def scrape():
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        assert (await client.get("/metrics")).status_code == 200

asyncio.run(scrape())
print(sorted(s.name for s in exporter.get_finished_spans()))
"""


@pytest.mark.slow
def test_with_a_global_provider_a_request_gets_one_span_not_fastapis_too() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "HIGHLIGHT_"))}
    result = subprocess.run(
        [sys.executable, "-c", ONE_SERVER_SPAN],
        env=env | {"PYTHONPATH": str(PROJECT_ROOT)},
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['GET /metrics']"
