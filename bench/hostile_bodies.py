"""Hostile bodies: does the event loop stall, and does memory grow, while clients without a
token send big bodies? Prints numbers; not a test.

    .venv/bin/python bench/hostile_bodies.py                      # 20 anonymous 30 MB batches
    .venv/bin/python bench/hostile_bodies.py --clients 20 --mb 30 --writer

The real service (`highlight-service serve`, one uvicorn process, SQLite, auth on) runs in its
own process. While ``--clients`` raw sockets each send a ``--mb`` MB JSON batch without a token
(Content-Length declared, body sent as fast as the server takes it), another client asks
``/healthz`` one request after the other: its latency is how long the event loop was stalled.
The server's RSS is sampled every 20 ms. ``--writer`` sends the bodies with the write token as
``PUT /v2/documents/…`` instead: what a trusted client can cost (up to the chunk limit).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures.live import live_service  # noqa: E402
from tests.fixtures.load import percentile  # noqa: E402

READ, WRITE = "bench-read-token", "bench-write-token"


@dataclass(frozen=True)
class Outcome:
    status: str
    sent: int
    seconds: float


def body_of(megabytes: float, writer: bool) -> bytes:
    """Valid JSON, so a server that reads it also parses all of it. A batch made of many small
    objects is the costliest kind to parse (about a million dicts per 30 MB); a writer's
    document has 2 KB chunks, as an ingestion job sends them."""
    size = int(megabytes * 1_000_000)
    if writer:
        text = "word " * 400
        chunk = {"id": "", "text": text, "page_start": 1, "page_end": 1}
        count = max(1, size // (len(json.dumps(chunk)) + 10))
        chunks = [{**chunk, "id": f"c-{i:06d}"} for i in range(count)]
        return json.dumps({"source_path": "missing.pdf", "chunks": chunks}).encode()
    citation = '{"chunk_id":"c-0000000"},'
    citations = (citation * (size // len(citation))).rstrip(",")
    return f'{{"query":"q","answer":"a","citations":[{citations}]}}'.encode()


def hostile_request(
    port: int, method: str, path: str, body: bytes, token: str | None, results: list[Outcome]
) -> None:
    """Send the headers, then the body as fast as the server takes it; record the status line
    (or how the connection ended) and how many body bytes went out before the answer."""
    started = time.perf_counter()
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n{auth}\r\n"
    ).encode()
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        sock.sendall(head)
        view = memoryview(body)
        try:
            while sent < len(body):
                sent += sock.send(view[sent : sent + 256 * 1024])
        except OSError:
            pass  # the server answered and closed without reading the rest
        try:
            status = sock.recv(4096).split(b"\r\n", 1)[0].decode(errors="replace")
        except OSError as exc:
            status = type(exc).__name__
    results.append(Outcome(status or "closed", sent, time.perf_counter() - started))


def watch_rss(pid: int, stop: threading.Event, peak: list[float]) -> None:
    process = psutil.Process(pid)
    while not stop.is_set():
        try:
            peak[0] = max(peak[0], process.memory_info().rss / 2**20)
        except psutil.Error:
            return
        time.sleep(0.02)


def watch_health(url: str, stop: threading.Event, latencies: list[float]) -> None:
    with httpx.Client(timeout=120) as client:
        while not stop.is_set():
            started = time.perf_counter()
            client.get(f"{url}/healthz")
            latencies.append((time.perf_counter() - started) * 1000)


def run(clients: int, megabytes: float, writer: bool) -> None:
    body = body_of(megabytes, writer)
    with tempfile.TemporaryDirectory() as work:
        env = {
            "HIGHLIGHT_DATABASE_URL": f"sqlite+aiosqlite:///{work}/bench.db",
            "HIGHLIGHT_PDF_ROOT": f"{work}/pdfs",
            "HIGHLIGHT_INDEX_CACHE_DIR": f"{work}/cache",
            "HIGHLIGHT_AUTH_READ_TOKENS": json.dumps([READ]),
            "HIGHLIGHT_AUTH_WRITE_TOKENS": json.dumps([WRITE]),
            "HIGHLIGHT_LOG_LEVEL": "WARNING",
        }
        with live_service(Path(work), env, "serve") as service:
            port = int(service.url.rsplit(":", 1)[1])
            idle = [psutil.Process(service.process.pid).memory_info().rss / 2**20]
            quiet: list[float] = []
            stop_quiet = threading.Event()
            timer = threading.Timer(2.0, stop_quiet.set)
            timer.start()
            watch_health(service.url, stop_quiet, quiet)
            stop = threading.Event()
            peak = [idle[0]]
            latencies: list[float] = []
            results: list[Outcome] = []
            watchers = [
                threading.Thread(target=watch_rss, args=(service.process.pid, stop, peak)),
                threading.Thread(target=watch_health, args=(service.url, stop, latencies)),
            ]
            for thread in watchers:
                thread.start()
            time.sleep(0.5)
            started = time.perf_counter()
            method, path, token = (
                ("PUT", "/v2/documents/bench-doc", WRITE)
                if writer
                else ("POST", "/v2/highlights/batch", None)
            )
            attackers = [
                threading.Thread(
                    target=hostile_request, args=(port, method, path, body, token, results)
                )
                for _ in range(clients)
            ]
            for thread in attackers:
                thread.start()
            for thread in attackers:
                thread.join()
            attack_s = time.perf_counter() - started
            time.sleep(0.5)
            stop.set()
            for thread in watchers:
                thread.join()
    who = "write-token PUTs" if writer else "anonymous batches"
    print(f"{clients} {who} of {len(body) / 1e6:.1f} MB each, all answered in {attack_s:.2f} s")
    for status in sorted({r.status for r in results}):
        these = [r for r in results if r.status == status]
        print(
            f"  {len(these)} x {status}: answered after {min(r.seconds for r in these):.2f}-"
            f"{max(r.seconds for r in these):.2f} s, with {min(r.sent for r in these) / 1e6:.2f}-"
            f"{max(r.sent for r in these) / 1e6:.2f} MB of the body sent"
        )
    print(
        f"/healthz quiet:  p50 {statistics.median(quiet):.1f} ms, "
        f"p99 {percentile(quiet, 0.99):.1f} ms ({len(quiet)} requests)"
    )
    print(
        f"/healthz attack: p50 {statistics.median(latencies):.1f} ms, "
        f"p99 {percentile(latencies, 0.99):.1f} ms, max {max(latencies):.1f} ms "
        f"({len(latencies)} requests)"
    )
    print(f"server RSS: idle {idle[0]:.0f} MiB, peak {peak[0]:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--mb", type=float, default=30.0)
    parser.add_argument("--writer", action="store_true", help="PUT with the write token")
    args = parser.parse_args()
    run(args.clients, args.mb, args.writer)


if __name__ == "__main__":
    main()
