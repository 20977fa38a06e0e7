"""What on-call expects of the telemetry, in OpenTelemetry's semantic conventions: the HTTP server
span (errors on 5xx only), the LLM's GenAI client span against the scripted OpenAI-protocol
server, the database's client spans, JSON log lines that name their trace, and an upstream
failure (an object store that does not answer) logged as one warning, without a traceback."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from sqlalchemy.engine import make_url

from app.core.config import Settings
from app.core.logs import configure_logging
from tests.api.helpers import CHUNK_MAIN, ingest_sample
from tests.api.test_highlights import batch, llm_settings
from tests.api.test_observability import delta, scrape
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.live import free_port
from tests.fixtures.llm_server import ScriptedLLM


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def server_span(spans: InMemorySpanExporter, path: str) -> ReadableSpan:
    (found,) = [
        s
        for s in spans.get_finished_spans()
        if s.kind == SpanKind.SERVER and attributes(s).get("url.path") == path
    ]
    return found


async def test_a_traced_batch_follows_the_semantic_conventions(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM, spans: InMemorySpanExporter
) -> None:
    settings = llm_settings(database_url, pdf_root, scripted_llm)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        before = await scrape(client)
        response = await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))
        after = await scrape(client)
    assert response.status_code == 200
    server = server_span(spans, "/v2/highlights/batch")
    assert server.name == "POST /v2/highlights/batch"
    assert (
        attributes(server).items()
        >= {
            "http.request.method": "POST",
            "url.scheme": "http",
            "url.path": "/v2/highlights/batch",
            "http.route": "/v2/highlights/batch",
            "http.response.status_code": 200,
        }.items()
    )
    assert server.status.status_code == StatusCode.UNSET

    finished = spans.get_finished_spans()
    (chat,) = [s for s in finished if s.name == "chat scripted-model"]
    assert chat.kind == SpanKind.CLIENT
    assert (
        attributes(chat).items()
        >= {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "vllm",
            "gen_ai.request.model": "scripted-model",
            "gen_ai.usage.input_tokens": 10,
            "gen_ai.usage.output_tokens": 5,
        }.items()
    )
    # Recorded once: on the LLM span only, and once in the metrics.
    with_tokens = [s.name for s in finished if "gen_ai.usage.input_tokens" in attributes(s)]
    assert with_tokens == ["chat scripted-model"]
    prompt = "highlight_llm_tokens_total"
    assert delta(before, after, prompt, tier="json_schema", kind="prompt") == 10

    system = {"sqlite": "sqlite", "postgresql": "postgresql"}[
        make_url(database_url).get_backend_name()
    ]
    statements = [
        s
        for s in finished
        if s.kind == SpanKind.CLIENT
        and "db.system.name" in attributes(s)
        and s.context.trace_id == server.context.trace_id
    ]
    assert statements
    for statement in statements:
        found = attributes(statement)
        assert found["db.system.name"] == system
        assert found["db.namespace"]
        assert found["db.operation.name"] in {"SELECT", "INSERT", "UPDATE", "DELETE"}
        assert statement.name == f"{found['db.operation.name']} {found['db.namespace']}"
    assert {"SELECT", "INSERT"} <= {attributes(s)["db.operation.name"] for s in statements}
    for name in ("db.read", "db.write"):
        (transaction,) = [s for s in finished if s.name == name]
        assert attributes(transaction)["db.system.name"] == system
    # The SQLite file's name, not the server's folder.
    assert all(str(pdf_root.parent) not in json.dumps(attributes(s)) for s in statements)


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    stream = io.StringIO()
    configure_logging("INFO", "json", stream=stream)
    yield stream
    for handler in root.handlers:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


def log_lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


async def test_json_log_lines_name_the_span_they_were_written_in(
    sqlite_template: Path,
    tmp_path: Path,
    pdf_root: Path,
    spans: InMemorySpanExporter,
    json_log: io.StringIO,
) -> None:
    settings = _sqlite_settings(sqlite_template, tmp_path, pdf_root)
    async with app_client(settings) as client:
        assert (await client.get("/v2/documents/missing-doc")).status_code == 404
    server = server_span(spans, "/v2/documents/missing-doc")
    (line,) = [line for line in log_lines(json_log) if line["logger"] == "app.access"]
    assert line["trace_id"] == f"{server.context.trace_id:032x}"
    assert line["span_id"] == f"{server.context.span_id:016x}"


def _sqlite_settings(
    sqlite_template: Path, tmp_path: Path, pdf_root: Path, **extra: Any
) -> Settings:
    database = tmp_path / "highlight.db"
    shutil.copyfile(sqlite_template, database)
    return make_settings(f"sqlite+aiosqlite:///{database}", pdf_root, **extra)


@pytest.fixture
def dead_store(monkeypatch: pytest.MonkeyPatch) -> str:
    """An S3 object store whose endpoint is a local port where nothing listens: every request
    to it fails, as when the store is down."""
    for name, value in {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",
        "AWS_ACCESS_KEY_ID": "test-access-key",
        "AWS_SECRET_ACCESS_KEY": "test-secret-key-not-for-logs",
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
    }.items():
        monkeypatch.setenv(name, value)
    return "s3://down-bucket/pdfs"


@pytest.fixture
def dead_store_settings(
    sqlite_template: Path, tmp_path: Path, pdf_root: Path, dead_store: str
) -> Settings:
    return _sqlite_settings(
        sqlite_template,
        tmp_path,
        pdf_root,
        storage_url=dead_store,
        storage_cache_dir=tmp_path / "storage-cache",
    )


async def test_server_spans_are_errors_on_5xx_only_and_unknown_methods_are_other(
    dead_store_settings: Settings,
    sample_pdf: Path,
    spans: InMemorySpanExporter,
) -> None:
    settings = dead_store_settings
    data = sample_pdf.read_bytes()
    async with app_client(settings) as client:
        missing = await client.get("/v2/documents/missing-doc")
        odd = await client.request("BREW", "/v2/documents/teapot")
        upload = await client.put(
            "/v2/documents/sample/pdf",
            content=data,
            headers={"content-type": "application/pdf"},
            params={"sha256": hashlib.sha256(data).hexdigest()},
        )
    # A store that cannot be reached is a 503 (storage_unavailable), the service's side of 5xx.
    assert (missing.status_code, odd.status_code, upload.status_code) == (404, 405, 503)

    not_found = server_span(spans, "/v2/documents/missing-doc")
    assert not_found.status.status_code == StatusCode.UNSET  # the client's error, not ours
    assert "error.type" not in attributes(not_found)

    brewed = server_span(spans, "/v2/documents/teapot")
    assert brewed.name == "HTTP /v2/documents/{document_id}"
    assert (
        attributes(brewed).items()
        >= {
            "http.request.method": "_OTHER",
            "http.request.method_original": "BREW",
            "http.route": "/v2/documents/{document_id}",
            "http.response.status_code": 405,
        }.items()
    )

    failed = server_span(spans, "/v2/documents/sample/pdf")
    assert failed.name == "PUT /v2/documents/{document_id}/pdf"
    assert failed.status.status_code == StatusCode.ERROR
    assert attributes(failed)["error.type"] == "503"
    assert attributes(failed)["http.response.status_code"] == 503


async def test_an_upstream_failure_is_one_warning_without_a_traceback(
    dead_store_settings: Settings,
    sample_pdf: Path,
    json_log: io.StringIO,
) -> None:
    settings = dead_store_settings
    data = sample_pdf.read_bytes()
    async with app_client(settings) as client:
        upload = await client.put(
            "/v2/documents/sample/pdf",
            content=data,
            headers={"content-type": "application/pdf", "X-Request-ID": "store-down-1"},
        )
    assert upload.status_code == 503
    assert upload.json()["error"]["code"] == "storage_unavailable"
    lines = [line for line in log_lines(json_log) if line.get("request_id") == "store-down-1"]
    problems = [line for line in lines if line["level"] in ("WARNING", "ERROR", "CRITICAL")]
    (warning,) = problems
    assert warning["level"] == "WARNING"
    assert "object store" in warning["message"]
    assert not any("exception" in line or "Traceback" in line["message"] for line in lines)
    (access,) = [line for line in lines if line["logger"] == "app.access"]
    assert access["status"] == 503
