"""Run the app under uvicorn, with a shutdown that does not keep readers waiting.

On SIGTERM or SIGINT uvicorn stops accepting connections and waits for requests in flight; a
batch waiting on a slow LLM would hold it for the LLM's whole timeout. The service is told first,
so those batches stop waiting and answer with the lexical selector at once; whatever still runs
after ``shutdown_grace_s`` is cancelled by uvicorn.

Two things are kept out of the log: the signatures of signed links (uvicorn's access log shows
every query string; whoever reads the log could open the PDF until the link expires), and the
traceback of a start-up that failed, which the caller reports in one line instead.
"""

from __future__ import annotations

import logging
import re
from types import FrameType

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


def install_log_redaction() -> None:
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, RedactQuerySecrets) for f in access.filters):
        access.addFilter(RedactQuerySecrets())


class _StartupWatch:
    """Passes everything to the app; keeps the exception a failing lifespan start-up raised,
    and its traceback out of uvicorn's error log (logged at DEBUG instead)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.error: BaseException | None = None

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
            await send(message)

        try:
            await self.app(scope, receive, send_quietly)
        except BaseException as exc:
            if failed:
                self.error = exc
                log.debug("start-up failed", exc_info=exc)
            raise


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app: FastAPI) -> None:
        super().__init__(config)
        self._app = app

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        services = getattr(self._app.state, "services", None)
        if services is not None and not self.should_exit:
            log.info("shutting down: abandoning LLM waits of requests in flight")
            services.highlights.begin_shutdown()
        super().handle_exit(sig, frame)


def serve(app: FastAPI, settings: Settings, host: str, port: int) -> None:
    """Runs until shut down. A start-up that fails raises: the lifespan's own exception, or
    AppError when the port cannot be had (uvicorn logged why in one line)."""
    install_log_redaction()
    watch = _StartupWatch(app)
    config = uvicorn.Config(
        watch,
        host=host,
        port=port,
        log_config=None,
        timeout_graceful_shutdown=settings.shutdown_grace_s,
        timeout_keep_alive=settings.keep_alive_s,
    )
    server = _Server(config, app)
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
