"""Run the app under uvicorn, with a shutdown that does not keep readers waiting.

On SIGTERM or SIGINT uvicorn stops accepting connections and waits for requests in flight; a
batch waiting on a slow LLM would hold it for the LLM's whole timeout. The service is told first,
so those batches stop waiting and answer with the lexical selector at once; whatever still runs
after ``shutdown_grace_s`` is cancelled by uvicorn.

Two things are kept out of the log: the signatures of signed links (uvicorn's access log shows
every query string; whoever reads the log could open the PDF until the link expires), and the
traceback of a start-up that failed, which the caller reports in one line instead. uvicorn's
access log is off: the request log line is the app's own (api/middleware.py).

``serve_workers`` runs N worker processes under uvicorn's ``Multiprocess`` supervisor, each
listening on the port with a socket of its own (SO_REUSEPORT, see ``_Supervisor``). Each worker
builds its own app from the settings (the factory and the settings are sent to it; nothing built
in the parent is shared): its own PDF worker pool, in-memory caches, LLM client and database
pool. What they share is outside the process: the database (SQLite's WAL and file locks, or
PostgreSQL), the PDF folder and the on-disk index cache. Each worker tells its service to stop
waiting on the LLM when uvicorn receives SIGTERM or SIGINT there, as the single process does;
the parent forwards SIGTERM to every worker and waits for them, and restarts one that dies.
Prometheus metrics of several processes need a shared folder (``PROMETHEUS_MULTIPROC_DIR``): a
fresh private one is made for the run and removed after it, unless the variable is set.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import signal
import socket
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn
from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess

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


class _StartupWatch:
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


def _begin_shutdown(app: FastAPI) -> None:
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
            _begin_shutdown(self._app)
        super().handle_exit(sig, frame)


def _uvicorn_options(settings: Settings, host: str, port: int) -> dict[str, Any]:
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
    watch = _StartupWatch(app)
    config = uvicorn.Config(watch, **_uvicorn_options(settings, host, port))
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


AppFactory = Callable[[Settings], FastAPI]
# Turns a worker's start-up exception into the one line the command prints.
Describe = Callable[[Settings, BaseException], str]
FAILURE_FILE = "start-up-failure.txt"


class _WorkerConfig(uvicorn.Config):
    """Sent to each worker process (pickled: the factory and ``describe`` by reference), where
    uvicorn's own Server calls ``configure_logging`` and then ``load_app``: the app is built
    there, from the settings, never in the parent."""

    def __init__(
        self,
        create: AppFactory,
        settings: Settings,
        setup_logging: Callable[[Settings], None],
        describe: Describe,
        run_dir: Path,
        **options: Any,
    ) -> None:
        # Before uvicorn's __init__, which already configures logging.
        self.create = create
        self.settings = settings
        self.setup_logging = setup_logging
        self.describe = describe
        self.run_dir = run_dir
        super().__init__(app=f"{create.__module__}:{create.__qualname__}", **options)

    def configure_logging(self) -> None:
        super().configure_logging()
        self.setup_logging(self.settings)
        install_log_filters()

    def load_app(self) -> Any:
        app = self.create(self.settings)
        return _StartupWatch(
            app,
            on_start=functools.partial(_shutdown_first_on_signals, app),
            on_failure=self._report_failure,
        )

    def _report_failure(self, exc: BaseException) -> None:
        try:
            said = self.describe(self.settings, exc)
        except Exception:  # the parent still says that a worker did not start
            log.debug("could not describe a start-up failure", exc_info=True)
            return
        # The first worker's reason is the one the parent prints; the others fail alike.
        try:
            with (self.run_dir / FAILURE_FILE).open("x") as out:
                out.write(said)
        except OSError:
            pass


def _shutdown_first_on_signals(app: FastAPI) -> None:
    """In a worker, once started: uvicorn's Server there has its handlers for SIGTERM and SIGINT
    installed; the service is told first, then they run."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(sig)
        if callable(previous):
            signal.signal(sig, functools.partial(_shutdown_then, app, previous))


def _shutdown_then(
    app: FastAPI,
    previous: Callable[[int, FrameType | None], Any],
    sig: int,
    frame: FrameType | None,
) -> None:
    _begin_shutdown(app)
    previous(sig, frame)


def _listening_socket(host: str, port: int) -> socket.socket:
    """Bound to ``host:port`` with SO_REUSEPORT (the workers' sockets share the port); the
    worker listens on it. Raises OSError when the port cannot be had."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class _Supervisor(Multiprocess):
    """uvicorn's supervisor, with a listening socket of its own for each worker, all on one port
    (SO_REUSEPORT): the kernel spreads new connections evenly over them. With one shared socket
    the worker whose loop woke first accepted a whole burst (asyncio accepts every pending
    connection at once): 64 connections opened together went 51 and 13, and the busier worker,
    at one core, set the pace for all. The parent closes its copy of a worker's socket as soon as
    the worker is started: a worker that dies then takes its socket, and the connections the
    kernel would give it, along."""

    def __init__(self, config: uvicorn.Config) -> None:
        self._handed: list[socket.socket] = []
        super().__init__(config, sockets=[])

    @property
    def sockets(self) -> list[socket.socket]:
        # Read by uvicorn once per worker, just before starting it: the one before has its copy.
        self.close_handed()
        sock = _listening_socket(self.config.host, self.config.port)
        self._handed.append(sock)
        return [sock]

    @sockets.setter
    def sockets(self, value: list[socket.socket]) -> None:
        pass  # uvicorn's __init__ stores the list it was given; each worker gets its own

    def close_handed(self) -> None:
        for sock in self._handed:
            sock.close()
        self._handed.clear()

    # Where uvicorn starts workers: once they have their sockets, the parent lets go of them.
    def init_processes(self) -> None:
        super().init_processes()
        self.close_handed()

    def keep_subprocess_alive(self) -> None:
        super().keep_subprocess_alive()
        self.close_handed()

    def restart_all(self) -> None:
        super().restart_all()
        self.close_handed()

    def handle_ttin(self) -> None:
        super().handle_ttin()
        self.close_handed()


@contextmanager
def _run_folder() -> Iterator[Path]:
    """A private folder for this run (the workers' start-up failure, and the metrics of every
    worker unless PROMETHEUS_MULTIPROC_DIR is set), removed afterwards."""
    run_dir = Path(tempfile.mkdtemp(prefix="highlight-serve-"))
    own_metrics = "PROMETHEUS_MULTIPROC_DIR" not in os.environ
    if own_metrics:
        (run_dir / "metrics").mkdir()
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(run_dir / "metrics")
    try:
        yield run_dir
    finally:
        if own_metrics:
            os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
        shutil.rmtree(run_dir, ignore_errors=True)


def serve_workers(
    create: AppFactory,
    settings: Settings,
    host: str,
    port: int,
    workers: int,
    *,
    setup_logging: Callable[[Settings], None],
    describe: Describe,
    summary: str = "",
) -> None:
    """``workers`` processes, each with its own app built by ``create(settings)`` (a module-level
    function: it is sent by reference), until SIGTERM or SIGINT. A worker that fails to start
    stops them all, and AppError says why in one line (``describe``'s)."""
    install_log_filters()
    with _run_folder() as run_dir:
        config = _WorkerConfig(
            create,
            settings,
            setup_logging,
            describe,
            run_dir,
            workers=workers,
            **_uvicorn_options(settings, host, port),
        )
        try:
            _listening_socket(host, port).close()
        except OSError as exc:
            raise AppError(f"the service did not start on {host}:{port}: {exc}") from None
        log.info(
            "highlight-service listening on %s with %d worker processes (%s)",
            http_address(host, port),
            workers,
            summary,
        )
        supervisor = _Supervisor(config)
        try:
            supervisor.run()
        finally:
            supervisor.close_handed()
        failure = run_dir / FAILURE_FILE
        if failure.exists():
            raise AppError(failure.read_text(errors="replace"))
        if any(p.exitcode == STARTUP_FAILURE for p in supervisor.processes):
            raise AppError(f"a worker process did not start on {host}:{port} (the log says why)")
