"""`serve --workers N`: N uvicorn worker processes sharing the port, each with its own app.

Which process served a connection is read from the operating system (psutil: the sockets each
process holds), not from anything the service says about itself. A shutdown must tell every
worker's service first, so batches waiting on a slow LLM answer lexically at once, and stop all
of them within the grace period. A worker is replaced only when it exits or stops answering the
supervisor's health check, and the log says which and why, also on a host whose cores are busy.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import psutil
import pytest
from fastapi import FastAPI

from app.cli import _parser
from app.core.config import Settings
from app.core.errors import AppError
from app.server_workers import serve_workers
from tests.api.helpers import CHUNK_MAIN
from tests.api.test_highlights import batch
from tests.fixtures.app import make_settings
from tests.fixtures.live import LiveService, free_port, ingest_with_cli, live_service
from tests.fixtures.llm_server import ScriptedLLM

SLOW_LLM_S = 30.0
GRACE_S = 5


def _env(tmp_path: Path, llm: ScriptedLLM) -> dict[str, str]:
    return {
        "HIGHLIGHT_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'live.db'}",
        "HIGHLIGHT_PDF_ROOT": str(tmp_path / "pdfs"),
        "HIGHLIGHT_INDEX_CACHE_DIR": str(tmp_path / "cache"),
        "HIGHLIGHT_LLM_PROVIDER": "vllm",
        "HIGHLIGHT_LLM_BASE_URL": llm.base_url,
        "HIGHLIGHT_LLM_MODEL": "scripted-model",
        "HIGHLIGHT_LLM_TIMEOUT_S": "120",
        "HIGHLIGHT_BATCH_DEADLINE_S": "120",
        "HIGHLIGHT_SHUTDOWN_GRACE_S": str(GRACE_S),
    }


def _connect(service: LiveService) -> http.client.HTTPConnection:
    """A kept-alive connection on which one request has been answered (so it was accepted)."""
    connection = http.client.HTTPConnection("127.0.0.1", service.port, timeout=90)
    connection.request("GET", "/livez")
    response = connection.getresponse()
    assert response.status == 200, response.read()
    response.read()
    return connection


def _one_connection_per_worker(
    service: LiveService, workers: int, timeout_s: float = 60
) -> tuple[dict[int, http.client.HTTPConnection], list[http.client.HTTPConnection]]:
    """Connections opened until each of ``workers`` processes has accepted one (the kernel
    hands a connection to whichever worker accepts first): one per worker PID, and all opened."""
    opened: list[http.client.HTTPConnection] = []
    by_worker: dict[int, http.client.HTTPConnection] = {}
    deadline = time.monotonic() + timeout_s
    while len(by_worker) < workers and time.monotonic() < deadline:
        opened.append(_connect(service))
        owners = service.connections_by_process()
        for connection in opened:
            assert connection.sock is not None
            port = connection.sock.getsockname()[1]
            holders = [pid for pid, ports in owners.items() if port in ports]
            assert len(holders) == 1, (port, owners)
            by_worker.setdefault(holders[0], connection)
    assert len(by_worker) == workers, (
        f"{len(opened)} connections were all accepted by {sorted(by_worker)}:\n" + service.output()
    )
    return by_worker, opened


@pytest.mark.slow
def test_two_workers_each_answer_and_a_sigterm_stops_them_all_at_once(
    tmp_path: Path, scripted_llm: ScriptedLLM, sample_pdf: Path
) -> None:
    scripted_llm.slow_down(SLOW_LLM_S)
    env = _env(tmp_path, scripted_llm)
    ingest_with_cli(env, sample_pdf, "sample")
    with live_service(tmp_path, env, "serve", "--workers", "2") as service:
        by_worker, opened = _one_connection_per_worker(service, 2)
        parent = psutil.Process(service.process.pid)
        workers = [psutil.Process(pid) for pid in by_worker]
        # The parent made each worker's socket and let go of it once the worker had it: it holds
        # none (one left there would take its share of new connections and answer none of them
        # once its worker died).
        assert service.process.pid not in service.connections_by_process()
        assert {w.ppid() for w in workers} == {parent.pid}
        # A batch in flight on each worker, both waiting on the 30 s LLM.
        replies: dict[int, tuple[int, bytes]] = {}

        def ask(pid: int, connection: http.client.HTTPConnection) -> None:
            body = json.dumps(batch(CHUNK_MAIN, answer=f"{pid}: one third of the running costs"))
            connection.request(
                "POST", "/v2/highlights/batch", body, {"Content-Type": "application/json"}
            )
            response = connection.getresponse()
            replies[pid] = (response.status, response.read())

        threads = [threading.Thread(target=ask, args=item) for item in by_worker.items()]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while len(scripted_llm.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(scripted_llm.requests) == 2, service.output()
        stopped_at = time.monotonic()
        service.process.send_signal(signal.SIGTERM)
        code = service.process.wait(timeout=60)
        stopped_in = time.monotonic() - stopped_at
        for thread in threads:
            thread.join(timeout=10)
        for connection in opened:
            connection.close()
    assert code in (0, -signal.SIGTERM), service.output()
    # Not a speed target: proof that neither worker waited for the 30 s reply.
    assert stopped_in < GRACE_S + 5, (stopped_in, service.output())
    assert not [w.pid for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]
    assert sorted(replies) == sorted(by_worker)
    for status, body in replies.values():
        assert status == 200, body
        (result,) = json.loads(body)["results"]
        assert (result["status"], result["reason"]) == ("highlighted", "llm_unavailable")
        assert "shutting down" in result["message"]
    assert "Traceback" not in service.output()


@pytest.mark.slow
def test_one_worker_is_one_process_serving_itself(
    tmp_path: Path, scripted_llm: ScriptedLLM, sample_pdf: Path
) -> None:
    env = _env(tmp_path, scripted_llm)
    ingest_with_cli(env, sample_pdf, "sample")
    with live_service(tmp_path, env, "serve", "--workers", "1", "--no-migrate") as service:
        connection = _connect(service)
        assert connection.sock is not None
        port = connection.sock.getsockname()[1]
        # No supervisor: the process started is the one that accepted the connection.
        assert service.connections_by_process() == {service.process.pid: {port}}
        connection.close()


def test_the_worker_count_is_checked_before_anything_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for bad in ("0", "65", "two"):
        with pytest.raises(SystemExit) as exited:
            _parser().parse_args(["serve", "--workers", bad])
        assert exited.value.code == 2
        assert "number of workers from 1 to 64" in capsys.readouterr().err
    assert _parser().parse_args(["serve", "--workers", "3"]).workers == 3
    assert _parser().parse_args(["serve"]).workers is None  # then HIGHLIGHT_WORKERS


# Sent to the worker processes by reference, so module-level.
def failing_app(settings: Settings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Where the worker's metrics go: the test checks it is gone afterwards.
        raise ConnectionRefusedError(111, os.environ["PROMETHEUS_MULTIPROC_DIR"])
        yield

    return FastAPI(lifespan=lifespan)


def describe(settings: Settings, exc: BaseException) -> str:
    return f"worker said: {exc.strerror if isinstance(exc, OSError) else exc}"


def quiet(settings: Settings) -> None:
    pass


@pytest.mark.slow
def test_a_worker_that_cannot_start_stops_the_service_with_its_reason(tmp_path: Path) -> None:
    settings = make_settings(f"sqlite+aiosqlite:///{tmp_path / 'unused.db'}", tmp_path)
    assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ
    with pytest.raises(AppError) as failed:
        serve_workers(
            failing_app,
            settings,
            "127.0.0.1",
            free_port(),
            2,
            setup_logging=quiet,
            describe=describe,
        )
    said = failed.value.message
    assert said.startswith("worker said: "), said
    metrics_dir = Path(said.removeprefix("worker said: "))
    # A private folder made for the run, removed with the variable afterwards.
    assert metrics_dir.name == "metrics"
    assert metrics_dir.parent.name.startswith("highlight-serve-")
    assert not metrics_dir.parent.exists()
    assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ


@pytest.mark.slow
def test_a_worker_killed_is_replaced_and_its_share_of_connections_goes_elsewhere(
    tmp_path: Path, scripted_llm: ScriptedLLM
) -> None:
    """Each worker listens with a socket of its own (SO_REUSEPORT): the kernel hashes each new
    connection to one of them. The parent must not keep a dead worker's socket open, or the
    connections hashed to it would wait there for nobody."""
    env = _env(tmp_path, scripted_llm)
    with live_service(tmp_path, env, "serve", "--workers", "2") as service:
        by_worker, opened = _one_connection_per_worker(service, 2)
        for connection in opened:
            connection.close()
        # The worker started last: the parent made its socket last.
        kept, killed = sorted(by_worker, key=lambda pid: psutil.Process(pid).create_time())
        os.kill(killed, signal.SIGKILL)
        time.sleep(1)
        for _ in range(20):  # short timeouts: a connection left in a dead socket never answers
            connection = http.client.HTTPConnection("127.0.0.1", service.port, timeout=5)
            connection.request("GET", "/livez")
            assert connection.getresponse().status == 200
            connection.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            workers = set(service.connections_by_process()) - {service.process.pid}
            if len(workers) == 2 and killed not in workers:
                break
            time.sleep(0.2)
        assert len(workers) == 2, workers
        assert kept in workers
        assert killed not in workers
        (replacement,) = workers - {kept}
        said = service.output()
        assert (
            f"worker process {killed} was killed by SIGKILL; "
            f"started worker process {replacement} in its place"
        ) in said, said


@pytest.mark.slow
def test_a_request_head_of_a_megabyte_is_refused(tmp_path: Path) -> None:
    # uvicorn uses httptools whenever it is installed, and httptools served a 1 MB header;
    # serve pins h11, which refuses it (server.py).
    env = {
        "HIGHLIGHT_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'live.db'}",
        "HIGHLIGHT_PDF_ROOT": str(tmp_path / "pdfs"),
    }
    with live_service(tmp_path, env, "serve") as service:
        for size, status in ((1_000, b"200"), (1_000_000, b"400")):
            with socket.create_connection(("127.0.0.1", service.port), timeout=10) as sock:
                sock.sendall(
                    b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * size + b"\r\n\r\n"
                )
                assert sock.recv(64).split(b" ")[1] == status, size


@contextmanager
def _one_busy_core(hogs: int) -> Iterator[None]:
    """``hogs`` busy processes on one core, and every process this thread starts meanwhile (the
    service and its workers inherit the core): a host whose CPU is taken. There uvicorn's 5 s
    health check killed each worker before it had imported the app, and its replacement alike."""
    before = os.sched_getaffinity(0)
    core = max(before)
    os.sched_setaffinity(0, {core})  # this thread only: the threads of the test run elsewhere
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(hogs)]
    try:
        yield
    finally:
        for hog in busy:
            hog.kill()
        for hog in busy:
            hog.wait()
        os.sched_setaffinity(0, before)


class _WorkerCensus:
    """Every uvicorn worker process this test's service ever had (the processes spawned by
    multiprocessing among this process's descendants), sampled until stopped: what the operating
    system says, so a worker killed and replaced shows as a third PID.

    A process a worker forks (the PDF workers' fork server, a program it runs) carries the
    worker's command line until it execs: it is told apart by its parent, itself a worker. Counted
    as a worker, it failed this test once in three runs on a quiet machine."""

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.05):
            for child in me.children(recursive=True):
                try:
                    if _spawned(child) and not _spawned(child.parent()):
                        self.seen.add(child.pid)
                except psutil.Error:  # exited meanwhile
                    continue

    def stop(self) -> set[int]:
        self._stop.set()
        self._thread.join(timeout=10)
        return self.seen


def _spawned(process: psutil.Process | None) -> bool:
    """A process multiprocessing's spawn started (or a fork of one that has not exec'd yet)."""
    return process is not None and "spawn_main" in " ".join(process.cmdline())


@pytest.mark.slow
def test_two_workers_come_up_and_stay_up_on_a_busy_core(
    tmp_path: Path, scripted_llm: ScriptedLLM
) -> None:
    env = _env(tmp_path, scripted_llm)
    census = _WorkerCensus()
    try:
        with (
            _one_busy_core(hogs=4),
            # Generous bounds that only guard against a hang: on one core shared with four busy
            # processes a worker takes several times its idle start-up, and its stop (the
            # service is stopped while the hogs still run: 30 s was once too little in CI).
            live_service(
                tmp_path, env, "serve", "--workers", "2", startup_s=180, stop_s=180
            ) as service,
        ):
            by_worker, opened = _one_connection_per_worker(service, 2, timeout_s=180)
            for connection in opened:
                connection.close()
            said = service.output()
    finally:
        seen = census.stop()
    # Each worker served, and they are the only two there ever were: none was killed for a
    # missed health check (nor replaced for any other reason).
    assert seen == set(by_worker), (sorted(seen), sorted(by_worker), said)
    assert "health check within 60 s" in said  # the start-up line says how long a worker has
    assert "did not answer the health check" not in said
    for pid in by_worker:
        assert f"worker process {pid} ready" in said, said


@pytest.mark.slow
def test_a_worker_that_stops_answering_is_killed_and_the_log_says_why(
    tmp_path: Path, scripted_llm: ScriptedLLM
) -> None:
    env = {**_env(tmp_path, scripted_llm), "HIGHLIGHT_WORKER_HEALTHCHECK_TIMEOUT_S": "20"}
    with live_service(tmp_path, env, "serve", "--workers", "2") as service:
        by_worker, opened = _one_connection_per_worker(service, 2)
        for connection in opened:
            connection.close()
        assert "health check within 20 s" in service.output()
        stopped, kept = sorted(by_worker)
        # Stopped, it answers nothing, as a worker stuck in a loop that holds the GIL would.
        os.kill(stopped, signal.SIGSTOP)
        expected = f"worker process {stopped} did not answer the health check within 20 s"
        deadline = time.monotonic() + 120
        while expected not in service.output() and time.monotonic() < deadline:
            time.sleep(0.2)
        said = service.output()
        assert expected in said, said
        assert "HIGHLIGHT_WORKER_HEALTHCHECK_TIMEOUT_S" in said
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            workers = set(service.connections_by_process()) - {service.process.pid}
            if len(workers) == 2 and stopped not in workers:
                break
            time.sleep(0.2)
        assert len(workers) == 2, workers
        assert kept in workers
        assert stopped not in workers
