"""Logging: one JSON object per line for a log pipeline, or plain text for a terminal, every line
of a request carrying its request id; secrets and the server's own directories never written.

While tracing is on (core/tracing.py), a JSON line written inside a span also carries its
``trace_id`` and ``span_id``, so a log pipeline links the line to its trace.

The request id lives in a context variable set by the HTTP middleware (api/middleware.py), so
any layer below (the LLM client sends it on) reads it without it being passed along, and a
worker thread started with ``asyncio.to_thread`` inherits it.

What a line must not show: credentials (the LLM API key, the bearer tokens, a database
password, a query parameter that looks like one) and absolute paths of the server's folders
(the PDF root, caches, the database file's folder, the working directory), which name its
layout to whoever reads the logs. Both are replaced at format time, in messages, tracebacks and
extra fields; callers log route templates and paths relative to the PDF root in the first place.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from app.core import tracing

if TYPE_CHECKING:
    from app.core.config import Settings

REQUEST_ID: ContextVar[str | None] = ContextVar("request_id", default=None)
LogFormat = Literal["auto", "json", "text"]
HANDLER_NAME = "highlight-service"
# Shorter strings are not redacted: replacing every "abc" would garble the log, and a credential
# that short guards nothing anyway.
MIN_SECRET_CHARS = 6
# Query parameters whose values are credentials (the same rule as app/server.py's access log).
_SECRET_PARAMETER = re.compile(
    r"(?i)([?&](?:signature|sig|[a-z_]*token|api_?key|key|password|secret)=)[^&#\s\"]*"
)
# Attributes every LogRecord has (and uvicorn's colour copy of its message): not extra fields.
_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
    "color_message",
    "request_id",
}


def current_request_id() -> str | None:
    return REQUEST_ID.get()


class Redactor:
    """Replaces secrets with ``[redacted]`` and private folders with their names, e.g.
    ``/srv/highlight/pdfs/a.pdf`` -> ``<pdf_root>/a.pdf``."""

    def __init__(self, secrets: Iterable[str] = (), paths: Mapping[str, str] | None = None) -> None:
        self._secrets = sorted(
            {s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True
        )
        self._names = {p.rstrip("/"): name for p, name in (paths or {}).items() if p.rstrip("/")}
        # Longest first: a cache folder inside the working directory keeps its own name. Whole
        # names only: /app is not replaced inside /apple or /x/app; but it is after a colon
        # URL-encoded (sqlite+aiosqlite:///file%3A/srv/db/h.db).
        alternatives = "|".join(re.escape(p) for p in sorted(self._names, key=len, reverse=True))
        self._paths = (
            re.compile(rf"(?:(?<![\w.-])|(?<=%3A))({alternatives})(?![\w.-])")
            if alternatives
            else None
        )

    def __call__(self, text: str) -> str:
        text = _SECRET_PARAMETER.sub(r"\1[redacted]", text)
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, "[redacted]")
        if self._paths is not None:
            text = self._paths.sub(lambda found: f"<{self._names[found.group(1)]}>", text)
        return text


def _request_id_of(record: logging.LogRecord) -> str | None:
    explicit = getattr(record, "request_id", None)
    return explicit if isinstance(explicit, str) else REQUEST_ID.get()


class JsonFormatter(logging.Formatter):
    """One object per line: time (UTC, ISO 8601), level, logger, message, request_id (when in a
    request), trace_id and span_id (when in a span), the record's extra fields, and exception
    (a traceback) when there is one."""

    def __init__(self, redact: Redactor | None = None) -> None:
        super().__init__()
        self._redact = redact or Redactor()

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": self._redact(record.getMessage()),
        }
        request_id = _request_id_of(record)
        if request_id:
            out["request_id"] = request_id
        ids = tracing.current_ids()
        if ids is not None:
            out["trace_id"], out["span_id"] = ids
        for key, value in record.__dict__.items():
            if key not in _RECORD_FIELDS and not key.startswith("_"):
                out[key] = self._redact(value) if isinstance(value, str) else value
        if record.exc_info:
            out["exception"] = self._redact(self.formatException(record.exc_info))
        if record.stack_info:
            out["stack"] = self._redact(self.formatStack(record.stack_info))
        return json.dumps(out, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """``time LEVEL logger [request id]: message`` for a person at a terminal."""

    def __init__(self, redact: Redactor | None = None) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s%(_request_tag)s: %(message)s")
        self._redact = redact or Redactor()

    def format(self, record: logging.LogRecord) -> str:
        request_id = _request_id_of(record)
        record._request_tag = f" [{request_id}]" if request_id else ""
        return self._redact(super().format(record))


def redaction_of(settings: Settings) -> tuple[list[str], dict[str, str]]:
    """What the log must not show for these settings: the secrets, and the server's folders by
    the name shown instead (both the absolute and the resolved spelling of each)."""
    from sqlalchemy.engine import make_url

    secrets = [settings.llm_api_key.get_secret_value()]
    secrets += [
        t.get_secret_value() for t in settings.auth_read_tokens + settings.auth_write_tokens
    ]
    # An index signing key is "id:secret": the id may be shown, the secret never.
    secrets += [k.get_secret_value().partition(":")[2] for k in settings.index_signing_keys]
    url = make_url(settings.database_url)
    secrets += [url.password or "", os.environ.get("AWS_SECRET_ACCESS_KEY", "")]
    folders: dict[str, Path | None] = {
        "home": Path.home(),
        "cwd": Path.cwd(),
        "pdf_root": settings.pdf_root,
        "index_cache_dir": settings.index_cache_dir,
        "storage_cache_dir": settings.storage_cache_dir,
    }
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        folders["database_dir"] = Path(url.database).parent
    paths: dict[str, str] = {}
    for name, folder in folders.items():  # later, more specific names win for the same folder
        if folder is not None:
            paths[str(folder.absolute())] = name
            paths[str(folder.resolve())] = name
    return [s for s in secrets if s], paths


def resolve_format(log_format: LogFormat, stream: TextIO) -> Literal["json", "text"]:
    if log_format != "auto":
        return log_format
    isatty = getattr(stream, "isatty", None)
    return "text" if callable(isatty) and isatty() else "json"


def configure_logging(
    level: str,
    log_format: LogFormat = "auto",
    *,
    stream: TextIO | None = None,
    secrets: Iterable[str] = (),
    private_paths: Mapping[str, str] | None = None,
) -> logging.Handler:
    """The root logger writes to ``stream`` (stderr) at ``level`` in ``log_format`` (auto: JSON
    unless the stream is a terminal). Calling it again replaces the handler it installed, not
    others (a test's capture). ``private_paths``: absolute folder -> the name shown instead."""
    stream = stream or sys.stderr
    redact = Redactor(secrets, private_paths)
    handler = logging.StreamHandler(stream)
    handler.set_name(HANDLER_NAME)
    formatter: logging.Formatter = (
        JsonFormatter(redact)
        if resolve_format(log_format, stream) == "json"
        else TextFormatter(redact)
    )
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    return handler
