"""Load: N concurrent clients for T seconds against the real service (uvicorn, one process), on
SQLite or PostgreSQL. Prints p50/p99 latency per request kind, throughput and errors.

    .venv/bin/python bench/load_bench.py --database sqlite --clients 50 --seconds 60
    .venv/bin/python bench/load_bench.py --database postgres --clients 50 --seconds 60
    .venv/bin/python bench/load_bench.py --database postgres --restart-postgres-at 20

The mix is what a chat frontend and an ingestion job send: mostly batches (lexical selector, no
LLM, so the service itself is measured), some document and PDF reads, and idempotent PUTs of an
unchanged document. An error is any transport failure or any status other than the expected one.
The client runs on the same 2 cores as the server, so absolute numbers are a floor.

``--restart-postgres-at S`` restarts the PostgreSQL server S seconds into the run (needs
pg_ctlcluster and the rights to use it): while it is down, a 503 ``database_unavailable`` with
Retry-After is the right answer and is counted apart; a 500 or a dropped connection is an error.
Afterwards every write acknowledged with 2xx must still be there.

``--throughput`` measures something else, in one run (load_throughput.py): 10-citation batches
through a scripted LLM that replies after 0.3 s, at 8, 32 and 64 clients, with ``serve --workers
2`` and ``--workers 1``; requests/s and p50/p99 beside the ideal (clients / LLM delay) and the CPU
ceiling (cores / server CPU-seconds per request, measured), the load generator's own CPU shown.

    .venv/bin/python bench/load_bench.py --throughput [--workers 2 1] [--levels 8 32 64]
                                         [--seconds 20] [--app-dir OTHER_CHECKOUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import load_throughput  # noqa: E402

from app.pdfs.sample import write_sample_pdf  # noqa: E402
from tests.fixtures.live import ingest_with_cli, live_service  # noqa: E402
from tests.fixtures.load import honest_outage, percentile, restart_postgres  # noqa: E402
from tests.fixtures.pdfs import write_text_pdf  # noqa: E402

DEFAULT_PDF = ROOT.parent / "shared" / "pdfs" / "pdfjs_freeculture.pdf"
PG_ADMIN = os.environ.get(
    "HIGHLIGHT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
)
QUERY = "How much will the water programme cost, and who pays for running it?"
ANSWER = (
    "The programme will cost 12.5 billion shillings over three years, and each county pays one "
    "third of the running costs. The final figures show a deficit of 5.1 per cent."
)


def _psql(sql: str) -> None:
    subprocess.run(["psql", PG_ADMIN, "-qc", sql], check=True, capture_output=True)


async def client_loop(
    client: httpx.AsyncClient,
    stop_at: float,
    chunk_ids: list[str],
    document: dict[str, Any],
    samples: dict[str, list[float]],
    errors: dict[str, int],
    rng: random.Random,
    examples: list[str],
    unavailable: dict[str, int],
    acknowledged: list[str],
) -> None:
    while time.monotonic() < stop_at:
        roll = rng.random()
        if roll < 0.7:
            kind, expected = "batch", 200
            cited = rng.sample(chunk_ids, k=min(3, len(chunk_ids)))
            body = {"query": QUERY, "answer": ANSWER, "citations": [{"chunk_id": c} for c in cited]}
            call = client.post("/v2/highlights/batch", json=body)
        elif roll < 0.8:
            kind, expected = "get document", 200
            call = client.get("/v2/documents/sample", params={"include_text": "true"})
        elif roll < 0.9:
            kind, expected = "get pdf", 200
            call = client.get("/v2/documents/sample/pdf")
        elif roll < 0.95:
            kind, expected = "put unchanged", 200
            call = client.put("/v2/documents/load-doc", json=document)
        else:
            kind, expected = "put new", 201
            new_id = f"new-{uuid.uuid4().hex[:12]}"
            body = {**document, "chunks": [{**c, "id": f"{new_id}-{i}"}
                                          for i, c in enumerate(document["chunks"])]}  # fmt: skip
            call = client.put(f"/v2/documents/{new_id}", json=body)
        started = time.perf_counter()
        try:
            response = await call
            ok = response.status_code == expected
            problem = f"{kind}: {response.status_code} {response.text[:300]}"
        except httpx.HTTPError as exc:
            response = None
            ok = False
            problem = f"{kind}: {type(exc).__name__} {exc}"
        samples[kind].append((time.perf_counter() - started) * 1000)
        if ok and kind == "put new":
            acknowledged.append(new_id)
        if response is not None and honest_outage(response):
            unavailable[kind] += 1
        elif not ok:
            errors[kind] += 1
            if len(examples) < 10:
                examples.append(problem)


async def run_load(
    url: str, clients: int, seconds: float, restart_at: float | None = None
) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url, timeout=60) as setup:
        stored = (await setup.get("/v2/documents/sample")).json()
        chunk_ids = [c["id"] for c in stored["chunks"]]
        document = {
            "source_path": stored["source_path"],
            "chunks": [
                {"id": f"load-{i}", "text": f"Load test chunk {i}.", "page_start": 1, "page_end": 1}
                for i in range(5)
            ],
        }
        created = await setup.put("/v2/documents/load-doc", json=document)
        assert created.status_code in (200, 201), created.text
    samples: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    examples: list[str] = []
    unavailable: dict[str, int] = defaultdict(int)
    acknowledged: list[str] = []
    restart_s = None

    async def restart_later() -> None:
        nonlocal restart_s
        if restart_at is not None:
            await asyncio.sleep(restart_at)
            restart_s = await asyncio.to_thread(restart_postgres)

    # The client drops idle connections long before the service does (HIGHLIGHT_KEEP_ALIVE_S),
    # as a well-configured proxy would; otherwise a reused connection can race its close.
    limits = httpx.Limits(
        max_connections=clients, max_keepalive_connections=clients, keepalive_expiry=2.0
    )
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        await asyncio.gather(
            *(
                client_loop(
                    client,
                    started + seconds,
                    chunk_ids,
                    document,
                    samples,
                    errors,
                    random.Random(i),
                    examples,
                    unavailable,
                    acknowledged,
                )
                for i in range(clients)
            ),
            restart_later(),
        )
    lost = []
    if acknowledged:
        async with httpx.AsyncClient(base_url=url, timeout=60) as check:
            for document_id in acknowledged:
                if (await check.get(f"/v2/documents/{document_id}")).status_code != 200:
                    lost.append(document_id)
    wall = time.monotonic() - started
    everything = [ms for values in samples.values() for ms in values]
    rows = {
        kind: {
            "requests": len(values),
            "p50_ms": round(statistics.median(values), 1),
            "p99_ms": round(percentile(values, 0.99), 1),
            "errors": errors[kind],
            "unavailable": unavailable[kind],
        }
        for kind, values in sorted(samples.items())
    }
    rows["all"] = {
        "requests": len(everything),
        "p50_ms": round(statistics.median(everything), 1),
        "p99_ms": round(percentile(everything, 0.99), 1),
        "errors": sum(errors.values()),
        "unavailable": sum(unavailable.values()),
    }
    return {
        "restart_s": restart_s,
        "acknowledged_writes": len(acknowledged),
        "lost_writes": len(lost),
        "clients": clients,
        "seconds": round(wall, 1),
        "rps": round(len(everything) / wall, 1),
        "rows": rows,
        "error_examples": examples,
    }


def _throughput_pdf(args: argparse.Namespace, work: Path) -> Path:
    if args.pdf is not None:
        return Path(args.pdf)
    if DEFAULT_PDF.is_file():
        return DEFAULT_PDF
    # Without ../shared/pdfs: a generated document with enough chunks to cite 10.
    paragraphs = [
        f"Section {i} of the report on copyright and culture. The author argues that the law "
        f"now regulates culture far more than ever, in {1990 + i} as in every later year. "
        f"Creators paid {i * 3} per cent more for licences, the survey said."
        for i in range(60)
    ]
    return write_text_pdf(work / "throughput.pdf", paragraphs, title="Generated report")


def _throughput(args: argparse.Namespace, work: Path, env: dict[str, str], postgres: bool) -> None:
    pdf = _throughput_pdf(args, work)
    seconds = args.seconds or 20.0
    load_throughput.print_header(pdf, args.citations, args.llm_delay, seconds)
    rows = load_throughput.run(
        work,
        env,
        pdf=pdf,
        workers=args.workers,
        levels=args.levels,
        seconds=seconds,
        llm_delay=args.llm_delay,
        citations=args.citations,
        app_dir=args.app_dir,
        postgres=postgres,
    )
    print("\n" + load_throughput.HEADER)
    for row in rows:
        load_throughput.print_row(row)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"load_bench-throughput-{args.database}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(load_throughput.as_json(rows), indent=2))
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, help="the run (default 60), or each row of it")
    parser.add_argument("--restart-postgres-at", type=float, metavar="S")
    throughput = parser.add_argument_group("--throughput")
    throughput.add_argument("--throughput", action="store_true", help="see the docstring")
    throughput.add_argument("--workers", type=int, nargs="+", default=[4, 2, 1])
    throughput.add_argument("--levels", type=int, nargs="+", default=[8, 32, 64], metavar="N")
    throughput.add_argument("--llm-delay", type=float, default=0.3, metavar="S")
    throughput.add_argument("--citations", type=int, default=10)
    throughput.add_argument("--pdf", type=Path, help=f"default {DEFAULT_PDF}")
    throughput.add_argument(
        "--app-dir", type=Path, default=ROOT, help="the checkout whose app is served"
    )
    args = parser.parse_args()
    if args.restart_postgres_at is not None and args.database != "postgres":
        parser.error("--restart-postgres-at needs --database postgres")
    if args.restart_postgres_at is not None and args.throughput:
        parser.error("--restart-postgres-at is for the mixed load, not --throughput")
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"load-bench-{uuid.uuid4().hex[:8]}"
    work.mkdir(parents=True)
    database = f"highlight_load_{uuid.uuid4().hex[:8]}"
    if args.database == "postgres":
        _psql(f'CREATE DATABASE "{database}"')
        url = f"postgresql+asyncpg://postgres@127.0.0.1:5432/{database}"
    else:
        url = f"sqlite+aiosqlite:///{work / 'load.db'}"
    env = {
        "HIGHLIGHT_DATABASE_URL": url,
        "HIGHLIGHT_PDF_ROOT": str(work / "pdfs"),
        "HIGHLIGHT_INDEX_CACHE_DIR": str(work / "cache"),
        "HIGHLIGHT_LOG_LEVEL": "WARNING",
    }
    try:
        if args.throughput:
            _throughput(args, work, env, postgres=args.database == "postgres")
            return
        pdf = write_sample_pdf(work / "sample.pdf")
        ingest_with_cli(env, pdf, "sample")
        with live_service(work, env, "serve", "--no-migrate") as service:
            result = asyncio.run(
                run_load(service.url, args.clients, args.seconds or 60, args.restart_postgres_at)
            )
            server_log = service.output()
    finally:
        if args.database == "postgres":
            _psql(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    result["database"] = args.database
    print(
        f"{args.database}: {result['clients']} clients, {result['seconds']} s, "
        f"{result['rps']} requests/s"
    )
    if result["restart_s"] is not None:
        print(
            f"PostgreSQL restarted at {args.restart_postgres_at:.0f} s "
            f"(took {result['restart_s']:.1f} s)"
        )
    print(f"{'':16} {'requests':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7} {'503':>6}")
    for kind, row in result["rows"].items():
        print(
            f"{kind:16} {row['requests']:9d} {row['p50_ms']:8.1f} {row['p99_ms']:8.1f} "
            f"{row['errors']:7d} {row['unavailable']:6d}"
        )
    print(
        f"writes acknowledged (2xx PUT of a new document): {result['acknowledged_writes']}, "
        f"lost afterwards: {result['lost_writes']}"
    )
    for example in result["error_examples"]:
        print(f"error: {example}")
    if "Traceback" in server_log or " ERROR " in server_log:
        print("the server logged errors:\n" + server_log[-3000:])
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"load_bench-{args.database}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
