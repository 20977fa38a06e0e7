"""Log lines: JSON objects (or text for a terminal) with the request id and extra fields, and
never a secret or one of the server's folders."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import SecretStr

from app.core import tracing
from app.core.config import Settings
from app.core.logs import (
    HANDLER_NAME,
    REQUEST_ID,
    JsonFormatter,
    Redactor,
    TextFormatter,
    configure_logging,
    redaction_of,
)
from tests.conftest import PROJECT_ROOT


def _record(message: str, *args: object, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("app.test", logging.WARNING, __file__, 1, message, args, None)
    record.__dict__.update(extra)
    return record


@pytest.fixture
def restore_root() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in root.handlers:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


def test_a_json_line_has_the_fields_the_request_id_and_the_extras() -> None:
    token = REQUEST_ID.set("req-1")
    try:
        line = JsonFormatter().format(_record("%d citations", 3, route="/v2/x/{id}", status=200))
    finally:
        REQUEST_ID.reset(token)
    data = json.loads(line)
    assert data["message"] == "3 citations"
    assert (data["level"], data["logger"], data["request_id"]) == ("WARNING", "app.test", "req-1")
    assert (data["route"], data["status"]) == ("/v2/x/{id}", 200)
    assert data["time"].endswith("+00:00")
    assert "\n" not in line


def test_an_exception_stays_on_one_json_line() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = _record("failed")
        record.exc_info = sys.exc_info()
    line = JsonFormatter().format(record)
    assert "\n" not in line
    assert "ValueError: boom" in json.loads(line)["exception"]


def test_outside_a_request_there_is_no_request_id() -> None:
    assert "request_id" not in json.loads(JsonFormatter().format(_record("idle")))
    assert "[" not in TextFormatter().format(_record("idle"))


def test_a_json_line_names_the_span_it_is_written_in(spans: InMemorySpanExporter) -> None:
    assert "trace_id" not in json.loads(JsonFormatter().format(_record("outside")))
    with tracing.span("batch"):
        inside = json.loads(JsonFormatter().format(_record("inside")))
    (batch,) = spans.get_finished_spans()
    assert inside["trace_id"] == f"{batch.context.trace_id:032x}"
    assert inside["span_id"] == f"{batch.context.span_id:016x}"


def test_tracing_off_adds_no_ids() -> None:
    with tracing.span("batch"):
        assert "trace_id" not in json.loads(JsonFormatter().format(_record("untraced")))


def test_a_text_line_names_the_request() -> None:
    token = REQUEST_ID.set("abc123")
    try:
        line = TextFormatter().format(_record("hello"))
    finally:
        REQUEST_ID.reset(token)
    assert line.endswith("WARNING app.test [abc123]: hello")


def test_secrets_query_credentials_and_folders_are_replaced() -> None:
    redact = Redactor(
        secrets=["sk-live-123456", "abc"],
        paths={"/srv/pdfs": "pdf_root", "/srv": "cwd", "/app": "cwd"},
    )
    assert redact("key sk-live-123456 used") == "key [redacted] used"
    assert redact("GET /p?expires=1&signature=XYZ&page=2") == (
        "GET /p?expires=1&signature=[redacted]&page=2"
    )
    assert redact("the PDF /srv/pdfs/a.pdf and /srv/db") == "the PDF <pdf_root>/a.pdf and <cwd>/db"
    assert (
        redact("sqlite:///file%3A/srv/pdfs/h.db?mode=rw")
        == "sqlite:///file%3A<pdf_root>/h.db?mode=rw"
    )
    # Whole names only, and too-short "secrets" left alone.
    assert redact("/apple /x/app and abc") == "/apple /x/app and abc"


def test_the_settings_secrets_and_folders_are_what_is_redacted(tmp_path: Path) -> None:
    settings = Settings(
        _env_file=None,
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'db' / 'h.db'}",
        pdf_root=tmp_path / "pdfs",
        llm_api_key=SecretStr("sk-the-api-key"),
        auth_read_tokens=[SecretStr("read-token-xyz")],
        auth_write_tokens=[SecretStr("write-token-xyz")],
    )
    secrets, folders = redaction_of(settings)
    assert {"sk-the-api-key", "read-token-xyz", "write-token-xyz"} <= set(secrets)
    assert folders[str(tmp_path / "pdfs")] == "pdf_root"
    assert folders[str(tmp_path / "db")] == "database_dir"
    password = redaction_of(
        Settings(_env_file=None, database_url="postgresql+asyncpg://u:pw-TOPSECRET@h/db")
    )[0]
    assert "pw-TOPSECRET" in password


@pytest.mark.usefixtures("restore_root")
def test_configuring_again_replaces_only_its_own_handler() -> None:
    other = logging.StreamHandler(io.StringIO())
    logging.getLogger().addHandler(other)
    first, second = io.StringIO(), io.StringIO()
    configure_logging("INFO", "json", stream=first)
    configure_logging("INFO", "json", stream=second, secrets=["hunter2-secret"])
    ours = [h for h in logging.getLogger().handlers if h.get_name() == HANDLER_NAME]
    assert len(ours) == 1
    assert other in logging.getLogger().handlers
    logging.getLogger("app.test").info("password is hunter2-secret")
    assert first.getvalue() == ""
    assert json.loads(second.getvalue())["message"] == "password is [redacted]"


@pytest.mark.usefixtures("restore_root")
def test_auto_is_text_on_a_terminal_and_json_elsewhere() -> None:
    primary, secondary = os.openpty()  # a real terminal
    with open(secondary, "w") as terminal, open(primary, "rb", buffering=0) as screen:
        configure_logging("INFO", "auto", stream=terminal)
        logging.getLogger("app.test").info("on a terminal")
        terminal.flush()
        assert b"INFO app.test: on a terminal" in screen.read(4096)
    piped = io.StringIO()
    configure_logging("INFO", "auto", stream=piped)
    logging.getLogger("app.test").info("in a pipe")
    assert json.loads(piped.getvalue())["message"] == "in a pipe"


@pytest.mark.slow  # starts another program
def test_the_cli_logs_json_lines_without_the_database_folder(
    tmp_path: Path, sample_pdf: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIGHLIGHT_")}
    env |= {
        "PYTHONPATH": str(PROJECT_ROOT),
        "HIGHLIGHT_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'h.db'}",
        "HIGHLIGHT_LOG_LEVEL": "INFO",
        "HIGHLIGHT_LOG_FORMAT": "json",
    }
    result = subprocess.run(
        # ingest, not migrate: migrate answers on stdout and logs nothing when all is well.
        [sys.executable, "-m", "app.cli", "ingest", str(sample_pdf)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert lines, "ingest logged nothing at INFO"
    assert (
        lines[0]["message"]
        == "database SQLite h.db migrated to 0005 (0001, 0002, 0003, 0004, 0005)"
    )
    # Alembic's own lines (its plugins, its context, one per step) are summed up in that one.
    assert not [line for line in lines if line["logger"].startswith("alembic")]
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    assert str(tmp_path) not in result.stderr
