"""Run the app under uvicorn, with a shutdown that does not keep readers waiting.

On SIGTERM or SIGINT uvicorn stops accepting connections and waits for requests in flight; a
batch waiting on a slow LLM would hold it for the LLM's whole timeout. The service is told first,
so those batches stop waiting and answer with the lexical selector at once; whatever still runs
after ``shutdown_grace_s`` is cancelled by uvicorn.

Two things are kept out of the log: the signatures of signed links (uvicorn's access log shows
every query string; whoever reads the log could open the PDF until the link expires), and the
traceback of a start-up that failed, which the caller reports in one line instead. uvicorn's
access log is off: the request log line is the app's own (api/middleware.py).

``serve --workers N`` is ``server_workers.py``: the same app and shutdown in each worker process.
"""

from __future__ import annotations

import logging
import re
import socket
from collections.abc import Callable
from types import FrameType
from typing import Any

import uvicorn
from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.config import Settings
from app.core.errors import AppError

log = logging.getLogger(__name__)
# Query parameters whose values are credentials: the links' signature, and whatever a client
# may put a token or key in.
_SECRET_PARAMETER = re.compile(
    r"(?i)([?&](?:signature|sig|[a-z_]*token|api_?key|key|password|secret)=)[^&#\s\"]*"
)


def redact(text: str) -> str:
    return _SECRET_PARAMETER.sub(r"\1[redacted]", text)


class RedactQuerySecrets(logging.Filter):
    """For uvicorn's access log: ``'%s - "%s %s HTTP/%s" %d'`` with the path and query string
    among its arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        return True


# uvicorn's start-up lines, which the one "ready" line replaces (it names the address too),
# and its lifespan's shutdown steps; "Shutting down" stays.
_START_UP_NOISE = (
    "Started server process",
    "Started parent process",
    "Waiting for application startup.",
    "Application startup complete.",
    "Uvicorn running on",
    "Waiting for application shutdown.",
    "Application shutdown complete.",
    "Finished server process",
)


class QuietStartup(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            record.levelno == logging.INFO
            and isinstance(record.msg, str)
            and record.msg.startswith(_START_UP_NOISE)
        )


def install_log_filters() -> None:
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, RedactQuerySecrets) for f in access.filters):
        access.addFilter(RedactQuerySecrets())
    errors = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, QuietStartup) for f in errors.filters):
        errors.addFilter(QuietStartup())


def http_address(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class StartupWatch:
    """Passes everything to the app; keeps the exception a failing lifespan start-up raised,
    and its traceback out of uvicorn's error log (logged at DEBUG instead). ``on_start``: called
    once the start-up has completed; ``on_failure``: with the exception of one that failed."""

    def __init__(
        self,
        app: ASGIApp,
        on_start: Callable[[], None] | None = None,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.app = app
        self.error: BaseException | None = None
        self._on_start = on_start
        self._on_failure = on_failure

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        failed = False

        async def send_quietly(message: Message) -> None:
            nonlocal failed
            if message["type"] == "lifespan.startup.failed":
                failed = True
                message = {**message, "message": ""}
            elif message["type"] == "lifespan.startup.complete" and self._on_start is not None:
                self._on_start()
            await send(message)

        try:
            await self.app(scope, receive, send_quietly)
        except BaseException as exc:
            if failed:
                self.error = exc
                log.debug("start-up failed", exc_info=exc)
                if self._on_failure is not None:
                    self._on_failure(exc)
            raise


def begin_shutdown(app: FastAPI) -> None:
    """Tell the service first: batches waiting on the LLM answer lexically at once."""
    services = getattr(app.state, "services", None)
    if services is not None and not getattr(app.state, "shutdown_begun", False):
        app.state.shutdown_begun = True
        log.info("shutting down: abandoning LLM waits of requests in flight")
        services.highlights.begin_shutdown()


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app: FastAPI, summary: str) -> None:
        super().__init__(config)
        self._app = app
        self._summary = summary

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        # Only now is the port bound: a lifespan that started on a port another process holds
        # would otherwise have said "ready" before failing.
        if self.started:
            bound = self.servers[0].sockets[0].getsockname() if self.servers else None
            port = bound[1] if bound else self.config.port
            where = http_address(self.config.host, port)
            log.info("highlight-service ready on %s (%s)", where, self._summary)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if not self.should_exit:
            begin_shutdown(self._app)
        super().handle_exit(sig, frame)


def uvicorn_options(settings: Settings, host: str, port: int) -> dict[str, Any]:
    return {
        "host": host,
        "port": port,
        "log_config": None,
        # h11, also where httptools is installed: httptools took a request head of any size
        # (a 1 MB header was served), h11 refuses one past its bound with a 400.
        "http": "h11",
        # The app logs each request itself (api/middleware.py), as JSON when asked.
        "access_log": False,
        "timeout_graceful_shutdown": settings.shutdown_grace_s,
        "timeout_keep_alive": settings.keep_alive_s,
    }


def serve(app: FastAPI, settings: Settings, host: str, port: int, summary: str = "") -> None:
    """Runs until shut down. A start-up that fails raises: the lifespan's own exception, or
    AppError when the port cannot be had (uvicorn logged why in one line). Once the port is
    bound, one line says where the service is and ``summary`` (database, LLM, auth)."""
    install_log_filters()
    watch = StartupWatch(app)
    config = uvicorn.Config(watch, **uvicorn_options(settings, host, port))
    server = _Server(config, app, summary)
    try:
        server.run()
    except SystemExit:  # uvicorn's way of saying it could not start
        if server.started:
            raise
        if watch.error is not None:
            raise watch.error from None
        raise AppError(
            f"the service did not start on {host}:{port} (the log line above says why)"
        ) from None
