"""Throughput of the LLM path against the CPU it costs: ``load_bench.py --throughput``.

Each client sends 10-citation batches, one after another, each with a new answer (a result-cache
miss, so every request asks the LLM and is stored), to a real ``serve`` whose LLM is the tests'
scripted OpenAI-compatible server replying after ``--llm-delay`` (0.3 s). For every worker count
and every client count it prints requests/s and p50/p99 beside two limits:

- the ideal: clients / the scripted LLM's delay, what the service would do if it cost nothing;
- the CPU ceiling: CPU cores / server CPU-seconds per request, measured over the same run from
  the server's whole process tree (workers, PDF workers) with psutil, and on PostgreSQL the
  database server's (the same machine's cores run it).

The load generator (this process) and the scripted LLM (a process of its own, as a model server
is) run on the same cores as the server; their CPU is measured too, and the ceiling is printed
both ways: with all cores, and with the cores they left (cores minus their CPU-seconds per
second). The LLM-in-flight bound
is lifted (``HIGHLIGHT_LLM_MAX_IN_FLIGHT``) so that every batch waits for the LLM: the bench
measures the service's CPU, not the bound's policy.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

from tests.fixtures.live import LiveService, live_service, run_cli
from tests.fixtures.llm_server import ScriptedLLM, choose_first
from tests.fixtures.load import percentile

ROOT = Path(__file__).resolve().parent.parent
QUERY = "What does the author say about copyright and culture?"
ANSWER = "The author argues that copyright law now regulates culture far more than ever ({n})."


@dataclass
class Level:
    workers: int
    clients: int
    seconds: float
    requests: int
    errors: int
    by_llm: int
    rps: float
    p50_ms: float
    p99_ms: float
    ideal_rps: float
    server_cpu_ms_per_request: float
    server_cpu_cores: float
    client_cpu_cores: float
    # Busy CPU of the whole machine that is neither the server nor this process: other tenants
    # of a shared machine.
    other_cpu_cores: float
    ceiling_all_cores: float
    ceiling_left_cores: float
    # Halfway through: the clients' connections held by each worker process, busiest first.
    connections_per_worker: list[int]

    @property
    def of_ceiling(self) -> tuple[float, float]:
        return self.rps / self.ceiling_all_cores, self.rps / self.ceiling_left_cores


def _cpu_seconds(process: psutil.Process) -> float:
    """CPU time of a process and of its children that have exited (and were waited for)."""
    try:
        t = process.cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return t.user + t.system + t.children_user + t.children_system


def _machine_busy_seconds() -> float:
    """CPU time of everything on the machine, all cores, steal included (a hypervisor's other
    guests); guest time is already in user time."""
    t = psutil.cpu_times()
    fields = ("user", "nice", "system", "irq", "softirq", "steal")
    return float(sum(getattr(t, name, 0.0) for name in fields))


def tree_cpu_seconds(root: psutil.Process) -> float:
    """CPU time of ``root`` and everything below it: the uvicorn workers, the PDF workers."""
    try:
        below = root.children(recursive=True)
    except psutil.NoSuchProcess:
        return 0.0
    return sum(_cpu_seconds(p) for p in [root, *below])


async def _client(
    client: httpx.AsyncClient,
    stop_at: float,
    citations: list[dict[str, str]],
    counter: Iterator[int],
    samples: list[float],
    outcome: dict[str, int],
) -> None:
    while time.monotonic() < stop_at:
        body = {"query": QUERY, "answer": ANSWER.format(n=next(counter)), "citations": citations}
        started = time.perf_counter()
        try:
            response = await client.post("/v2/highlights/batch", json=body)
        except httpx.HTTPError:
            outcome["errors"] += 1
            continue
        samples.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            outcome["errors"] += 1
        elif b'"method":"llm"' in response.content:
            outcome["llm"] += 1


async def _level(
    url: str,
    clients: int,
    seconds: float,
    citations: list[dict[str, str]],
    counter: Iterator[int],
    split: Callable[[], list[int]],
) -> tuple[list[float], dict[str, int], float, list[int]]:
    samples: list[float] = []
    connections: list[int] = []

    async def look_halfway() -> None:
        await asyncio.sleep(seconds / 2)
        connections.extend(await asyncio.to_thread(split))

    outcome = {"errors": 0, "llm": 0}
    limits = httpx.Limits(
        max_connections=clients, max_keepalive_connections=clients, keepalive_expiry=2.0
    )
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        started = time.monotonic()
        await asyncio.gather(
            *(
                _client(client, started + seconds, citations, counter, samples, outcome)
                for _ in range(clients)
            ),
            look_halfway(),
        )
        wall = time.monotonic() - started
    return samples, outcome, wall, connections


def database_cpu(postgres: bool) -> Callable[[], float]:
    """CPU seconds so far of the PostgreSQL server (its postmaster, its processes, and those that
    exited: the pool's overflow connections come and go), or nothing for SQLite, whose work is in
    the server's own processes. All of the cluster: others using it during the run count too."""

    def cluster() -> float:
        if not postgres:
            return 0.0
        for process in psutil.process_iter(["name"]):
            try:
                if process.info["name"] == "postgres" and process.parent().name() != "postgres":
                    return tree_cpu_seconds(process)
            except psutil.Error:
                continue
        return 0.0

    return cluster


def measure_level(
    service_pid: int,
    url: str,
    workers: int,
    clients: int,
    seconds: float,
    llm_delay: float,
    citations: list[dict[str, str]],
    counter: Iterator[int],
    db_cpu: Callable[[], float] = lambda: 0.0,
    split: Callable[[], list[int]] = list,
    llm: psutil.Process | None = None,
) -> Level:
    """``llm``: the scripted LLM's process, whose CPU is counted as the load generator's."""
    server = psutil.Process(service_pid)
    me = [psutil.Process(), *([llm] if llm else [])]
    cores = len(os.sched_getaffinity(0))
    server_before = tree_cpu_seconds(server) + db_cpu()
    me_before = sum(map(_cpu_seconds, me))
    machine_before = _machine_busy_seconds()
    samples, outcome, wall, connections = asyncio.run(
        _level(url, clients, seconds, citations, counter, split)
    )
    server_cpu = tree_cpu_seconds(server) + db_cpu() - server_before
    client_cores = (sum(map(_cpu_seconds, me)) - me_before) / wall
    machine_cores = (_machine_busy_seconds() - machine_before) / wall
    requests = len(samples)
    per_request = server_cpu / max(requests, 1)
    return Level(
        workers=workers,
        clients=clients,
        seconds=round(wall, 1),
        requests=requests,
        errors=outcome["errors"],
        by_llm=outcome["llm"],
        rps=round(requests / wall, 1),
        p50_ms=round(statistics.median(samples), 1) if samples else 0.0,
        p99_ms=round(percentile(samples, 0.99), 1),
        ideal_rps=round(clients / llm_delay, 1),
        server_cpu_ms_per_request=round(per_request * 1000, 2),
        server_cpu_cores=round(server_cpu / wall, 2),
        client_cpu_cores=round(client_cores, 2),
        other_cpu_cores=round(max(machine_cores - client_cores - server_cpu / wall, 0.0), 2),
        ceiling_all_cores=round(cores / per_request, 1),
        ceiling_left_cores=round(max(cores - client_cores, 0.01) / per_request, 1),
        connections_per_worker=connections,
    )


class _Forgetful(list[Any]):
    def append(self, item: Any) -> None:
        pass


def _serve_scripted_llm(delay_s: float) -> None:
    """In the scripted LLM's own process: serve until killed, printing the base URL first."""
    server = ScriptedLLM()
    # Like a real model server, not like the tests' fixture: connections kept alive (HTTP/1.1;
    # the fixture's replies carry content-length) and a listen backlog that a burst of 64 calls
    # does not overflow (socketserver's is 5: a dropped SYN costs the caller 1 s, then 2 s).
    server._server.RequestHandlerClass.protocol_version = "HTTP/1.1"  # type: ignore[attr-defined]
    server._server.socket.listen(1024)
    server.chooser = choose_first
    server.slow_down(delay_s)
    # Keep no request bodies: a long run would hold every prompt it was sent.
    server.requests = _Forgetful()
    print(server.base_url, flush=True)
    server._server.serve_forever(poll_interval=0.05)


@contextmanager
def scripted_llm(delay_s: float) -> Iterator[tuple[str, psutil.Process]]:
    """The scripted OpenAI-compatible server in a process of its own, as a model server is: in
    this process its 64 threads and the load generator's event loop took turns on one GIL, and
    every reply and every response waited for the other (the clients saw 60 ms more than the
    service's own request span). Yields its base URL and its process (whose CPU the bench
    counts with the load generator's)."""
    code = (
        "import sys; from bench.load_throughput import _serve_scripted_llm; "
        "_serve_scripted_llm(float(sys.argv[1]))"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code, str(delay_s)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        if not base_url:
            raise RuntimeError("the scripted LLM did not start")
        yield base_url, psutil.Process(process.pid)
    finally:
        process.kill()
        process.wait()


def ingest(env: dict[str, str], pdf: Path, citations: int) -> list[dict[str, str]]:
    """Ingest ``pdf`` with the CLI; ``citations`` chunk ids spread over the document."""
    result = run_cli(env, "ingest", str(pdf), "--document-id", "throughput")
    chunks = json.loads(result.stdout)["chunks"]
    step = max(1, len(chunks) // citations)
    return [{"chunk_id": c} for c in chunks[::step][:citations]]


def run(
    work: Path,
    env: dict[str, str],
    *,
    pdf: Path,
    workers: list[int],
    levels: list[int],
    seconds: float,
    llm_delay: float,
    citations: int,
    app_dir: Path,
    postgres: bool = False,
) -> list[Level]:
    """``postgres``: the PostgreSQL server's CPU is counted as the service's."""
    db_cpu = database_cpu(postgres)
    rows: list[Level] = []
    counter = iter(range(10**12))
    with scripted_llm(llm_delay) as (llm_url, llm):
        env = {
            **env,
            "HIGHLIGHT_LLM_PROVIDER": "vllm",
            "HIGHLIGHT_LLM_BASE_URL": llm_url,
            "HIGHLIGHT_LLM_MODEL": "scripted",
            "HIGHLIGHT_LLM_MAX_IN_FLIGHT": "1024",
        }
        cited = ingest(env, pdf, citations)
        for n in workers:
            # Only when asked for: a checkout from before --workers existed runs with 1.
            extra = ("--workers", str(n)) if n != 1 else ()
            with live_service(work, env, "serve", "--no-migrate", *extra, app_dir=app_dir) as svc:

                def split(svc: LiveService = svc, n: int = n) -> list[int]:
                    # The parent of --workers N binds the port but serves nothing.
                    held = svc.connections_by_process()
                    serving = [
                        len(p) for pid, p in held.items() if n == 1 or pid != svc.process.pid
                    ]
                    return sorted(serving, reverse=True)

                # Every worker loads its text index and opens its connections before the clock.
                measure_level(svc.process.pid, svc.url, n, 4 * n, 3.0, llm_delay, cited, counter)
                for clients in levels:
                    row = measure_level(
                        svc.process.pid,
                        svc.url,
                        n,
                        clients,
                        seconds,
                        llm_delay,
                        cited,
                        counter,
                        db_cpu,
                        split,
                        llm,
                    )
                    rows.append(row)
                    print_row(row, flush=True)
                log = svc.output()
            if "Traceback" in log or " ERROR " in log:
                print("the server logged errors:\n" + log[-3000:])
    return rows


HEADER = (
    f"{'workers':>7} {'clients':>7} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6} "
    f"{'llm %':>6} {'ideal':>7} {'CPU ms':>7} {'server':>6} {'client':>6} {'others':>6} "
    f"{'ceiling':>8} {'ceil-cl':>8} {'of ceil':>7} {'of c-cl':>7}  conns"
)


def print_header(pdf: Path, citations: int, llm_delay: float, seconds: float) -> None:
    cores = len(os.sched_getaffinity(0))
    print(
        f"throughput: {citations} citations per batch from {pdf.name}, each a result-cache miss; "
        f"scripted LLM replying after {llm_delay:g} s; {seconds:g} s per row; {cores} CPU cores "
        "shared by the server and this load generator (with the scripted LLM)"
    )
    print(
        "ideal = clients / LLM delay; CPU ms = server CPU per request (its processes, and "
        "the PostgreSQL server's); server, client = cores used by them and by "
        "this process; others = the rest of the machine's "
        "busy cores (other tenants); ceiling = cores / server CPU-s per request; ceil-cl = "
        "(cores - client) / server CPU-s per request; conns = the clients' connections each worker "
        "held halfway through"
    )
    print(HEADER)


def print_row(row: Level, flush: bool = False) -> None:
    of_all, of_left = row.of_ceiling
    llm = 100 * row.by_llm / max(row.requests, 1)
    print(
        f"{row.workers:7d} {row.clients:7d} {row.rps:7.1f} {row.p50_ms:7.1f} {row.p99_ms:7.1f} "
        f"{row.errors:6d} {llm:6.1f} {row.ideal_rps:7.1f} {row.server_cpu_ms_per_request:7.2f} "
        f"{row.server_cpu_cores:6.2f} {row.client_cpu_cores:6.2f} {row.other_cpu_cores:6.2f} "
        f"{row.ceiling_all_cores:8.1f} {row.ceiling_left_cores:8.1f} {of_all:7.2f} {of_left:7.2f}  "
        + "/".join(map(str, row.connections_per_worker)),
        flush=flush,
    )


def as_json(rows: list[Level]) -> list[dict[str, Any]]:
    return [{**asdict(r), "of_ceiling": r.of_ceiling} for r in rows]
