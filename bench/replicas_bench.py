"""Replicas behind a real load balancer: N `highlight-service serve` processes, one PostgreSQL,
one object store, HAProxy in front; a kill -9 of one replica under load, then its restart.

    .venv/bin/python bench/replicas_bench.py                    # 3 replicas, 30 clients, 30 s
    .venv/bin/python bench/replicas_bench.py --replicas 2 --clients 8 --seconds 8

The parts are real: PostgreSQL at 127.0.0.1:5432 (a fresh database per run, dropped after);
moto's standalone S3 server over HTTP stands in for S3 or MinIO (HIGHLIGHT_STORAGE_URL=s3://...,
the standard AWS_* variables); `highlight-service migrate` runs once, then every `serve` starts
with HIGHLIGHT_MIGRATE_ON_START=false and its own PDF root, storage cache and index cache, so a
replica gets a PDF only from the object store; HAProxy (Debian's package) balances round robin,
checks /readyz every second (down after 2 failures, up after 2 successes) and retries a refused
request on another replica (scripts/deploy/haproxy.cfg.template). The LLM is the scripted
OpenAI-compatible server (tests/fixtures/llm_server.py) with a fixed delay, or none (--llm none).

Through the balancer: the PDF is uploaded (the service chunks it), then C clients for T seconds
send batches (half repeat an answer: cache hits; half are new: LLM, PDF from the object store,
locate), document and PDF reads, PUTs of an unchanged document and PUTs of new ones
(acknowledged writes). At T/3 one replica gets SIGKILL (its process group: the server and its
PDF workers), at T/2 it is started again with the same command.

Reported: requests, p50/p99, errors (a request in flight on the replica when it died, which
HAProxy answers with its own 502 naming it or drops unanswered, is the one failure allowed and
is counted apart; any other failure fails the run), writes acknowledged and lost (each must be
readable afterwards from every replica, read directly), requests per replica (HAProxy's
X-Served-By header on every answer, its stats, and each replica's own JSON access log and
/metrics), and the time until the restarted replica serves. Exit status 1 when a gate fails;
JSON in bench/results/replicas.json.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.pdfs.sample import write_sample_pdf  # noqa: E402
from tests.fixtures.haproxy import Restart, Sample, allowed_failure  # noqa: E402
from tests.fixtures.llm_server import ScriptedLLM  # noqa: E402
from tests.fixtures.load import percentile  # noqa: E402
from tests.fixtures.replicas import (  # noqa: E402
    READY_PATH,
    Cluster,
    Document,
    Replica,
    cluster,
    missing_parts,
    objects_stored,
    prepare_documents,
    requests_seen,
    verify_everywhere,
)

QUERY = "How much will the water programme cost, and who pays for running it?"
ANSWER = (
    "The programme will cost 12.5 billion shillings over three years, and each county pays one "
    "third of the running costs. The final figures show a deficit of 5.1 per cent."
)


def _batch_body(chunk_ids: list[str], rng: random.Random) -> dict[str, Any]:
    cited = rng.sample(chunk_ids, k=min(3, len(chunk_ids)))
    # Half the batches repeat an answer (the result cache, shared in PostgreSQL), half are new:
    # the LLM, the PDF fetched from the object store, the locator.
    answer = ANSWER if rng.random() < 0.5 else f"{ANSWER} Note {uuid.uuid4().hex[:8]}."
    return {"query": QUERY, "answer": answer, "citations": [{"chunk_id": c} for c in cited]}


async def _client(
    client: httpx.AsyncClient,
    t0: float,
    stop_at: float,
    docs: dict[str, Document],
    rng: random.Random,
    samples: list[Sample],
    acknowledged: dict[str, Document],
) -> None:
    sample, steady = docs["sample"], docs["steady"]
    while time.monotonic() < stop_at:
        roll = rng.random()
        new: Document | None = None
        if roll < 0.6:
            kind, expected = "batch", 200
            call = client.post("/v2/highlights/batch", json=_batch_body(sample.chunk_ids, rng))
        elif roll < 0.7:
            kind, expected = "get document", 200
            call = client.get(f"/v2/documents/{sample.id}", params={"include_text": "true"})
        elif roll < 0.8:
            kind, expected = "get pdf", 200
            call = client.get(f"/v2/documents/{sample.id}/pdf")
        elif roll < 0.9:
            kind, expected = "put unchanged", 200
            call = client.put(f"/v2/documents/{steady.id}", json=steady.body)
        else:
            kind, expected = "put new", 201
            new = steady.renamed(f"new-{uuid.uuid4().hex[:12]}")
            call = client.put(f"/v2/documents/{new.id}", json=new.body)
        started = time.monotonic() - t0
        try:
            response = await call
        except httpx.HTTPError as exc:
            ended = time.monotonic() - t0
            problem = f"{type(exc).__name__} {exc}"
            # Closed after the request was sent: a timeout or a refused connection is not this.
            dropped = isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError)
            samples.append(Sample(kind, started, ended, None, None, problem, dropped=dropped))
            continue
        ended = time.monotonic() - t0
        ok = response.status_code == expected
        samples.append(
            Sample(
                kind,
                started,
                ended,
                response.status_code,
                response.headers.get("x-served-by"),
                None if ok else f"{response.status_code} {response.text[:200]}",
                # HAProxy's error pages are HTML; every answer of the service is JSON or a PDF.
                response.headers.get("content-type", "").startswith("text/html"),
            )
        )
        if ok and new is not None:
            acknowledged[new.id] = new
        elif ok and kind == "put unchanged":
            acknowledged[steady.id] = steady


async def _kill_and_restart(
    group: Cluster, victim: Replica, t0: float, kill_at: float, restart_at: float, sample_chunk: str
) -> Restart:
    await asyncio.sleep(max(0.0, t0 + kill_at - time.monotonic()))
    # The moment of the signal, not after the wait for the process: a request can fail at once.
    restart = Restart(victim.name, time.monotonic() - t0)
    await asyncio.to_thread(victim.kill)
    await asyncio.sleep(max(0.0, t0 + restart_at - time.monotonic()))
    await asyncio.to_thread(victim.start)
    begun = time.monotonic()
    restart.restarted_at = begun - t0
    body = {"query": QUERY, "answer": ANSWER, "citations": [{"chunk_id": sample_chunk}]}
    # It must come back even when that takes longer than the load: the wait goes on past it.
    async with httpx.AsyncClient(base_url=victim.url, timeout=10) as direct:
        while time.monotonic() - begun < 120:
            try:
                if restart.ready_s is None:
                    if (await direct.get(READY_PATH)).status_code == 200:
                        restart.ready_s = time.monotonic() - begun
                if restart.up_s is None:
                    servers = await asyncio.to_thread(group.balancer.servers)
                    if servers[victim.name]["status"] == "UP":
                        restart.up_s = time.monotonic() - begun
                if restart.ready_s is not None and restart.up_s is not None:
                    if (await direct.post("/v2/highlights/batch", json=body)).status_code == 200:
                        restart.serves_s = time.monotonic() - begun
                        return restart
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    return restart


def _rows(samples: list[Sample], restart: Restart | None) -> dict[str, dict[str, Any]]:
    by_kind: dict[str, list[Sample]] = defaultdict(list)
    for s in samples:
        by_kind[s.kind].append(s)
    by_kind["all"] = samples
    rows = {}
    for kind, group in by_kind.items():
        ms = [(s.ended - s.started) * 1000 for s in group]
        failed = [s for s in group if s.problem is not None]
        allowed = [s for s in failed if allowed_failure(s, restart)]
        rows[kind] = {
            "requests": len(group),
            "p50_ms": round(statistics.median(ms), 1) if ms else 0.0,
            "p99_ms": round(percentile(ms, 0.99), 1),
            "errors": len(failed) - len(allowed),
            # In flight on the killed replica: dropped by HAProxy, or its own 502/503/504.
            "kill_dropped": sum(s.dropped for s in allowed),
            "kill_balancer_5xx": sum(not s.dropped for s in allowed),
        }
    return rows


async def run_load(
    group: Cluster, docs: dict[str, Document], clients: int, seconds: float, kill: bool
) -> tuple[list[Sample], dict[str, Document], Restart | None]:
    samples: list[Sample] = []
    acknowledged: dict[str, Document] = {}
    victim = group.replicas[-1]
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    t0 = time.monotonic()
    async with httpx.AsyncClient(base_url=group.balancer.url, timeout=120, limits=limits) as client:
        loops = [
            _client(client, t0, t0 + seconds, docs, random.Random(i), samples, acknowledged)
            for i in range(clients)
        ]
        if not kill:
            await asyncio.gather(*loops)
            return samples, acknowledged, None
        chunk = docs["sample"].chunk_ids[0]
        restarting = _kill_and_restart(group, victim, t0, seconds / 3, seconds / 2, chunk)
        *_, restart = await asyncio.gather(*loops, restarting)
    return samples, acknowledged, restart


def run(
    work: Path, replicas: int, clients: int, seconds: float, llm_delay_s: float | None, kill: bool
) -> dict[str, Any]:
    """The whole benchmark in ``work``; the result, with ``gates_failed`` (empty: passed)."""
    with ExitStack() as stack:
        llm = None
        if llm_delay_s is not None:
            llm = ScriptedLLM().start()
            llm.slow_down(llm_delay_s)
            stack.callback(llm.stop)
        group = stack.enter_context(cluster(work, replicas, llm.base_url if llm else None))
        pdf = write_sample_pdf(work / "sample-assembly.pdf")
        docs = asyncio.run(prepare_documents(group, pdf))
        started = time.monotonic()
        samples, acknowledged, restart = asyncio.run(run_load(group, docs, clients, seconds, kill))
        wall = time.monotonic() - started
        # Before the checks below, which ask each replica directly.
        seen = {r.name: requests_seen(r) for r in group.replicas}
        acknowledged.setdefault(docs["sample"].id, docs["sample"])
        pdf_sha256 = hashlib.sha256(pdf.read_bytes()).hexdigest()
        checked = asyncio.run(verify_everywhere(group, acknowledged, pdf_sha256, docs["sample"].id))
        stats = group.balancer.servers()
        backend = group.balancer.backend()
        objects = objects_stored(group.store)
    served = Counter(s.served_by for s in samples if s.problem is None)
    if restart is not None and restart.restarted_at is not None:
        after = [s.started for s in samples if s.served_by == restart.replica and
                 s.problem is None and s.started > restart.restarted_at]  # fmt: skip
        restart.first_balanced_s = min(after) - restart.restarted_at if after else None
    per_replica = {
        r.name: {
            "x_served_by": served.get(r.name, 0),
            **{f"haproxy_{k}": int(stats[r.name][k] or 0) for k in ("stot", "wretr", "wredis")},
            **seen[r.name],
        }
        for r in group.replicas
    }
    result: dict[str, Any] = {
        "replicas": replicas,
        "clients": clients,
        "seconds": round(wall, 1),
        "rps": round(len(samples) / wall, 1),
        "llm": f"scripted, {llm_delay_s} s per call" if llm_delay_s is not None else "none",
        "health_check": READY_PATH,
        "setup": group.notes,
        "migrate_s": round(group.migrate_s, 1),
        "replicas_ready_s": round(group.start_s, 1),
        "rows": _rows(samples, restart),
        "per_replica": per_replica,
        "haproxy_retries": int(backend["wretr"] or 0),
        "haproxy_redispatches": int(backend["wredis"] or 0),
        "objects_in_store": objects,
        "acknowledged_writes": len(acknowledged),
        "lost_writes": len(checked["lost"]),
        "lost_examples": checked["lost"][:10],
        "pdf_from_every_replica": checked["pdf_from_every_replica"],
        "restart": asdict(restart) if restart else None,
        "errors": [asdict(s) for s in samples if s.problem and not allowed_failure(s, restart)],
    }
    result["gates_failed"] = gates(result)
    return result


def gates(result: dict[str, Any]) -> list[str]:
    failed = []
    if result["lost_writes"]:
        failed.append(f"{result['lost_writes']} acknowledged writes lost")
    if result["rows"]["all"]["errors"]:
        failed.append(f"{result['rows']['all']['errors']} errors outside the kill window")
    idle = [name for name, row in result["per_replica"].items() if row["x_served_by"] == 0]
    if idle:
        failed.append(f"replicas that served nothing: {', '.join(idle)}")
    if not all(result["pdf_from_every_replica"].values()):
        failed.append(f"PDF not served by every replica: {result['pdf_from_every_replica']}")
    restart = result["restart"]
    if restart is not None and restart["serves_s"] is None:
        failed.append(f"restarted replica {restart['replica']} never served a batch")
    return failed


def report(result: dict[str, Any]) -> None:
    print(
        f"{result['replicas']} replicas behind HAProxy (checks {result['health_check']}), "
        f"{result['clients']} clients, {result['seconds']} s, {result['rps']} requests/s, "
        f"LLM {result['llm']}"
    )
    for note in result["setup"]:
        print(f"  {note}")
    print(
        f"  migrate once: {result['migrate_s']} s; replicas ready: {result['replicas_ready_s']} s"
    )
    print(
        "errors: anything unexpected; killed: in flight on the killed replica (dropped by HAProxy"
    )
    print("with no answer / HAProxy's own 502-504), the one failure allowed")
    print(
        f"{'':16} {'requests':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7} "
        f"{'killed: dropped':>16} {'5xx':>4}"
    )
    for kind, row in result["rows"].items():
        print(
            f"{kind:16} {row['requests']:9d} {row['p50_ms']:8.1f} {row['p99_ms']:8.1f} "
            f"{row['errors']:7d} {row['kill_dropped']:16d} {row['kill_balancer_5xx']:4d}"
        )
    rows = result["per_replica"]
    print(f"{'per replica':16} " + " ".join(f"{n:>8}" for n in rows))
    for key, label in (
        ("x_served_by", "X-Served-By"),
        ("haproxy_stot", "HAProxy sent"),
        ("haproxy_wredis", "redispatched"),
        ("logged", "its JSON log"),
        ("metrics_since_start", "its /metrics"),
    ):
        print(f"{'  ' + label:16} " + " ".join(f"{row[key]:8d}" for row in rows.values()))
    restart = result["restart"]
    if restart:
        print(
            f"kill -9 {restart['replica']} at {restart['killed_at']:.1f} s, restarted at "
            f"{restart['restarted_at']:.1f} s: ready {_s(restart['ready_s'])}, HAProxy UP "
            f"{_s(restart['up_s'])}, serves a batch {_s(restart['serves_s'])} (first request "
            f"through HAProxy {_s(restart['first_balanced_s'])}) after the restart"
        )
    print(
        f"acknowledged writes: {result['acknowledged_writes']}, lost: {result['lost_writes']} "
        f"(read back from every replica); PDF from every replica: "
        f"{all(result['pdf_from_every_replica'].values())}; in the object store: "
        f"{result['objects_in_store']['pdfs']} PDFs, {result['objects_in_store']['indexes']} "
        f"text indexes; HAProxy retries {result['haproxy_retries']}, "
        f"redispatches {result['haproxy_redispatches']}"
    )
    for error in result["errors"][:10]:
        print(f"error: {error}")
    print("gates: " + ("; ".join(result["gates_failed"]) or "passed"))


def _s(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--clients", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--llm", choices=["scripted", "none"], default="scripted")
    parser.add_argument("--llm-delay", type=float, default=0.3, metavar="S")
    parser.add_argument("--no-kill", action="store_true", help="no kill -9 and restart")
    parser.add_argument("--work", type=Path, help="keep the logs and folders here")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "replicas.json")
    args = parser.parse_args()
    if args.replicas < 2:
        parser.error("--replicas: at least 2 (one is killed)")
    missing = missing_parts()
    if missing:
        sys.exit(missing)
    with tempfile.TemporaryDirectory(prefix="replicas-bench-") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        result = run(
            work,
            args.replicas,
            args.clients,
            args.seconds,
            args.llm_delay if args.llm == "scripted" else None,
            not args.no_kill,
        )
    report(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")
    sys.exit(1 if result["gates_failed"] else 0)


if __name__ == "__main__":
    main()
