"""``serve --workers N``: N worker processes under uvicorn's ``Multiprocess`` supervisor, each
listening on the port with a socket of its own (SO_REUSEPORT, see ``_Supervisor``). Each worker
builds its own app from the settings (the factory and the settings are sent to it; nothing built
in the parent is shared): its own PDF worker pool, in-memory caches, LLM client and database
pool. What they share is outside the process: the database (SQLite's WAL and file locks, or
PostgreSQL), the PDF folder and the on-disk index cache. Each worker tells its service to stop
waiting on the LLM when uvicorn receives SIGTERM or SIGINT there, as the single process does;
the parent forwards SIGTERM to every worker and waits for them, and restarts one that dies.
Prometheus metrics of several processes need a shared folder (``PROMETHEUS_MULTIPROC_DIR``): a
fresh private one is made for the run and removed after it, unless the variable is set.

The health check (uvicorn 0.54, ``supervisors/multiprocess.py``): every half second the parent
pings each worker in turn over a pipe and waits up to ``timeout_worker_healthcheck`` for the
answer; a worker that does not answer in time is killed (SIGKILL) and another started. A worker
answers from a thread that it starts only once the process is up: the spawned interpreter has
imported what the pickled config refers to (``app.main`` through the factory, the settings) and
configured logging. Its app's start-up (the lifespan) runs after that, with the thread
answering. uvicorn's 5 s default killed every worker of a busy two-core host before it had
imported the app (5.6 to 7.6 s), and the replacements alike, every 5 s, with "died" in the log:
the timeout is ``HIGHLIGHT_WORKER_HEALTHCHECK_TIMEOUT_S`` (60 s), and the log says why each
worker is replaced. The parent checks the workers one after the other, so a hung worker holds
the others' checks, and a SIGTERM's handling, for up to that long.
"""

from __future__ import annotations

import functools
import logging
import os
import pickle
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn
from fastapi import FastAPI
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess
from uvicorn.supervisors.multiprocess import Process

from app.core.config import Settings
from app.core.errors import AppError
from app.server import (
    StartupWatch,
    begin_shutdown,
    http_address,
    install_log_filters,
    uvicorn_options,
)

log = logging.getLogger(__name__)

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
        return StartupWatch(
            app,
            on_start=functools.partial(_started, app),
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


def _started(app: FastAPI) -> None:
    """In a worker, once its app has started: uvicorn's Server there has its handlers for
    SIGTERM and SIGINT installed; the service is told first, then they run."""
    log.info("worker process %d ready", os.getpid())
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
    begin_shutdown(app)
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
        """uvicorn's, but for the log: uvicorn says only "Child process [N] died", also of a
        worker it killed itself for a missed health check."""
        if self.should_exit.is_set():
            return
        for idx, process in enumerate(self.processes):
            why = _why_down(process, self.config.timeout_worker_healthcheck)
            if why is None:
                continue
            process.kill()
            process.join()
            if process.exitcode == STARTUP_FAILURE:
                # Its app could not start (the reason is in the run folder): nor would another's.
                log.error("worker process %s failed to start; stopping the service", process.pid)
                self.should_exit.set()
                return
            if self.should_exit.is_set() or self._stopping():
                return  # a worker gone because the service is stopping is not replaced
            replacement = Process(self.config, self.sockets)
            replacement.start()
            self.processes[idx] = replacement
            log.warning(
                "worker process %s %s; started worker process %s in its place",
                process.pid,
                why,
                replacement.pid,
            )
        self.close_handed()

    def _stopping(self) -> bool:
        """SIGINT or SIGTERM received and not handled yet (uvicorn's loop handles them after
        this check): a worker that exited on it (Ctrl-C, a cgroup kill) is not replaced."""
        return any(sig in (signal.SIGINT, signal.SIGTERM) for sig in self.signal_queue)

    def restart_all(self) -> None:
        super().restart_all()
        self.close_handed()

    def handle_ttin(self) -> None:
        super().handle_ttin()
        self.close_handed()


def _answers(process: Process, timeout_s: float) -> bool:
    """uvicorn's ping, but given up on as soon as the worker is gone: the parent holds both
    ends of the pipe, so a dead worker's end never reads as closed, and uvicorn's one wait of
    ``timeout_s`` kept a worker that failed to start (and the service with it) for the whole
    health-check timeout, 60 s, before saying why."""
    deadline = time.monotonic() + timeout_s
    try:
        process.parent_conn.send(b"ping")
        while not process.parent_conn.poll(min(0.25, max(0.0, deadline - time.monotonic()))):
            if not process.process.is_alive() or time.monotonic() >= deadline:
                return False
        process.parent_conn.recv()
    except (OSError, EOFError, pickle.UnpicklingError):
        return False
    return True


def _why_down(process: Process, timeout_s: float) -> str | None:
    """None while ``process`` runs and answers the health check within ``timeout_s``; else why
    it is to be replaced."""
    if process.process.is_alive():
        if _answers(process, timeout_s):
            return None
        if process.process.is_alive():  # not one that exited while the ping waited
            return (
                f"did not answer the health check within {timeout_s:g} s "
                "(HIGHLIGHT_WORKER_HEALTHCHECK_TIMEOUT_S) and was killed"
            )
    code = process.exitcode
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:  # a real-time signal has no name
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with code {code}"


def workers_line(address: str, workers: int, healthcheck_timeout_s: float, summary: str) -> str:
    """The line the parent logs once the port is known to be free."""
    return (
        f"highlight-service listening on {address} with {workers} worker processes, "
        f"each replaced if it does not answer a health check within {healthcheck_timeout_s:g} s "
        f"({summary})"
    )


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
            timeout_worker_healthcheck=settings.worker_healthcheck_timeout_s,
            **uvicorn_options(settings, host, port),
        )
        try:
            _listening_socket(host, port).close()
        except OSError as exc:
            raise AppError(f"the service did not start on {host}:{port}: {exc}") from None
        log.info(
            "%s",
            workers_line(
                http_address(host, port), workers, settings.worker_healthcheck_timeout_s, summary
            ),
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
