"""What one request costs the server, beside floors measured in the same run (about 40 s).

On a real ``serve`` (SQLite, one worker unless ``--workers``), with 10-citation batches over
one ingested PDF:

- latency, one client, interleaved: ``/healthz`` (the floor: HTTP, middleware, no work), a
  lexical batch that misses the result cache (a new answer each time, the same 10 chunks, as
  a conversation's follow-ups cite them), the same citing 10 chunks no batch cited before
  (nothing of them memoised: the first question on them), and a result-cache hit; p50 of each
  and the batches' ratios to ``/healthz``, and each one's server CPU per request beside
  ``/healthz``'s (CPU, unlike wall time, is not lengthened by other tenants' load);
- CPU per request at ``--clients`` (64) clients: server CPU-seconds (its whole process tree,
  psutil) per request, on the lexical path (no LLM) and on the LLM path (the tests' scripted
  OpenAI-compatible server replying after ``--llm-delay``, 0.3 s, in a process of its own);
- LLM-path throughput beside min(ideal, CPU ceiling): ideal = clients / LLM delay, ceiling =
  cores / server CPU-seconds per request; the ratio is what the service reaches of the lower;
- database round trips per batch transaction (``db_trips.py``, in-process, in a process
  importing the same checkout).

``--app-dir`` serves another checkout (e.g. the commit before a change), so before and after
are measured in one sitting; the ingest uses this checkout's CLI (same schema).

    .venv/bin/python bench/request_cpu.py [--app-dir DIR] [--seconds 8] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import load_throughput  # noqa: E402

from tests.fixtures.live import live_service, run_cli  # noqa: E402
from tests.fixtures.pdfs import write_text_pdf  # noqa: E402

DEFAULT_PDF = ROOT.parent / "shared" / "pdfs" / "pdfjs_freeculture.pdf"
QUERY = load_throughput.QUERY
HEALTHZ_RUN = 400
HIT_ANSWER = "The author argues that copyright law now regulates culture far more than ever."


async def _latencies(
    url: str,
    cited: list[dict[str, str]],
    fresh: list[list[dict[str, str]]],
    rounds: int,
    cpu: dict[str, float] | None = None,
    server: psutil.Process | None = None,
) -> dict[str, float]:
    """p50 ms of /healthz, a lexical miss, a lexical miss citing chunks no batch cited before
    (``fresh``, one list per round: nothing of them is memoised yet) and a cache hit, one
    request at a time, interleaved so that the machine's load falls on each alike. With
    ``server``, ``cpu`` gets each kind's mean server CPU ms per request (its process tree's
    CPU across each request, summed per kind; /healthz's over a run of its own): CPU time,
    which other tenants' load does not lengthen as it does wall time."""
    hit = {"query": QUERY, "answer": HIT_ANSWER, "citations": cited}
    times: dict[str, list[float]] = {"healthz": [], "lexical": [], "fresh": [], "hit": []}
    used_ms = dict.fromkeys(times, 0.0)
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        assert (await client.post("/v2/highlights/batch", json=hit)).status_code == 200
        for i in range(rounds + 3):
            miss = {"query": QUERY, "answer": f"{HIT_ANSWER} ({i})", "citations": cited}
            new = {"query": QUERY, "answer": f"{HIT_ANSWER} ({i})", "citations": fresh[i]}
            for name, send in (
                ("healthz", lambda: client.get("/healthz")),
                ("lexical", lambda m=miss: client.post("/v2/highlights/batch", json=m)),
                ("fresh", lambda m=new: client.post("/v2/highlights/batch", json=m)),
                ("hit", lambda: client.post("/v2/highlights/batch", json=hit)),
            ):
                cpu_before = load_throughput.tree_cpu_seconds(server) if server else 0.0
                started = time.perf_counter()
                response = await send()
                elapsed = (time.perf_counter() - started) * 1000
                used = (load_throughput.tree_cpu_seconds(server) - cpu_before) if server else 0.0
                assert response.status_code == 200, response.text
                if name == "hit":
                    assert response.headers["x-highlight-cache"] == "hit"
                if i >= 3:  # the first rounds warm connections and caches
                    times[name].append(elapsed)
                    used_ms[name] += used * 1000
        if server is not None and cpu is not None:
            # /healthz costs about a clock tick (10 ms, psutil's resolution) in ten requests:
            # its CPU is read over a run of them, not summed from one-request readings.
            before = load_throughput.tree_cpu_seconds(server)
            for _ in range(HEALTHZ_RUN):
                assert (await client.get("/healthz")).status_code == 200
            used_ms["healthz"] = (load_throughput.tree_cpu_seconds(server) - before) * 1000
    if cpu is not None:
        cpu.update({name: used_ms[name] / max(1, len(times[name])) for name in times})
        cpu["healthz"] = used_ms["healthz"] / HEALTHZ_RUN
    return {name: statistics.median(values) for name, values in times.items()}


def _trips(app_dir: Path, work: Path, cited: list[dict[str, str]]) -> str:
    """db_trips.py's lines, run in a process that imports ``app_dir``'s app, on a copy of the
    bench's database."""
    where = [str(work / name) for name in ("bench.db", "pdfs", "cache")]
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "db_trips.py"),
            *where,
            *(c["chunk_id"] for c in cited),
        ],
        env={**os.environ, "PYTHONPATH": str(app_dir), "HIGHLIGHT_LOG_LEVEL": "WARNING"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if result.returncode != 0:
        return "db_trips.py failed:\n" + result.stderr[-2000:]
    return result.stdout.rstrip()


def main(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="request-cpu-"))
    env = {
        "HIGHLIGHT_DATABASE_URL": f"sqlite+aiosqlite:///{work / 'bench.db'}",
        "HIGHLIGHT_PDF_ROOT": str(work / "pdfs"),
        "HIGHLIGHT_INDEX_CACHE_DIR": str(work / "cache"),
        "HIGHLIGHT_LOG_LEVEL": "WARNING",
    }
    pdf = args.pdf
    if not pdf.is_file():  # without ../shared/pdfs: a generated report with enough chunks
        paragraphs = [
            f"Section {i} of the report on copyright and culture. The author argues that the law "
            f"now regulates culture far more than ever, in {1990 + i} as in every later year. "
            f"Creators paid {i * 3} per cent more for licences, the survey said."
            for i in range(60)
        ]
        pdf = write_text_pdf(work / "generated.pdf", paragraphs, title="Generated report")
    chunks = json.loads(run_cli(env, "ingest", str(pdf), "--document-id", "bench").stdout)["chunks"]
    step = max(1, len(chunks) // 10)
    cited = [{"chunk_id": c} for c in chunks[::step][:10]]
    # Per latency round, 10 chunks cited by no batch before (fewer on a short document).
    others = [{"chunk_id": c} for c in chunks if {"chunk_id": c} not in cited] or cited
    fresh = [
        [others[(r * 10 + k) % len(others)] for k in range(10)] for r in range(args.rounds + 3)
    ]
    counter = itertools.count()
    cores = len(os.sched_getaffinity(0))
    print(
        f"app: {args.app_dir}; {pdf.name}, 10 citations per batch; {cores} cores shared "
        f"with the load generator; {args.clients} clients, {args.seconds:g} s per load row"
    )
    out: dict[str, Any] = {}
    with live_service(work, env, "serve", "--no-migrate", app_dir=args.app_dir) as svc:
        load_throughput.measure_level(svc.process.pid, svc.url, 1, 4, 2.0, 1.0, cited, counter)
        cpu: dict[str, float] = {}
        server = psutil.Process(svc.process.pid)
        p50 = asyncio.run(_latencies(svc.url, cited, fresh, args.rounds, cpu, server))
        lexical = load_throughput.measure_level(
            svc.process.pid, svc.url, 1, args.clients, args.seconds, 1.0, cited, counter
        )
    out["latency_p50_ms"] = p50
    out["lexical_cpu_ms"] = lexical.server_cpu_ms_per_request
    out["cpu_ms_per_request"] = cpu
    print(f"/healthz p50 {p50['healthz']:.2f} ms (the floor)")
    for name, label in (
        ("lexical", "lexical batch (miss)"),
        ("fresh", "lexical batch (miss), chunks cited for the first time"),
        ("hit", "result-cache hit"),
    ):
        ratio = p50[name] / p50["healthz"]
        out[f"{name}_ratio"] = round(ratio, 2)
        print(
            f"{label} p50 {p50[name]:.2f} ms, {ratio:.2f}x /healthz; server CPU "
            f"{cpu[name]:.2f} ms per request, {cpu[name] / max(cpu['healthz'], 1e-9):.2f}x "
            f"/healthz's {cpu['healthz']:.2f} ms"
        )
    print(
        f"lexical path at {args.clients} clients: {lexical.server_cpu_ms_per_request:.2f} ms "
        f"server CPU per request, {lexical.rps:.1f} req/s, p50 {lexical.p50_ms:.1f} ms, "
        f"errors {lexical.errors}"
    )
    best: load_throughput.Level | None = None
    with load_throughput.scripted_llm(args.llm_delay) as (llm_url, llm):
        llm_env = {
            **env,
            "HIGHLIGHT_LLM_PROVIDER": "vllm",
            "HIGHLIGHT_LLM_BASE_URL": llm_url,
            "HIGHLIGHT_LLM_MODEL": "scripted",
            "HIGHLIGHT_LLM_MAX_IN_FLIGHT": "1024",
        }
        for n in args.workers:
            extra = ("--workers", str(n)) if n != 1 else ()
            with live_service(
                work, llm_env, "serve", "--no-migrate", *extra, app_dir=args.app_dir
            ) as svc:
                pid = svc.process.pid
                load_throughput.measure_level(
                    pid, svc.url, n, 4 * n, 2.0, args.llm_delay, cited, counter
                )
                row = load_throughput.measure_level(
                    pid, svc.url, n, args.clients, args.seconds, args.llm_delay, cited, counter,
                    llm=llm,
                )  # fmt: skip
            bound = min(row.ideal_rps, row.ceiling_all_cores)
            # The cores the load generator, the scripted LLM and other tenants left the server.
            left = max(cores - row.client_cpu_cores - row.other_cpu_cores, 0.01)
            bound_left = min(row.ideal_rps, left * 1000 / row.server_cpu_ms_per_request)
            print(
                f"LLM path, {n} worker(s): {row.server_cpu_ms_per_request:.2f} ms server CPU per "
                f"request; {row.rps:.1f} req/s of min(ideal {row.ideal_rps:.0f}, CPU ceiling "
                f"{row.ceiling_all_cores:.1f}) = {bound:.1f}: {row.rps / bound:.2f}; of the "
                f"ceiling on the {left:.2f} cores the client and others left, "
                f"{bound_left:.1f}: {row.rps / bound_left:.2f}; p50 {row.p50_ms:.0f} ms, "
                f"LLM-answered {row.by_llm}/{row.requests}, errors {row.errors}"
            )
            out[f"llm_workers_{n}"] = {
                **load_throughput.as_json([row])[0],
                "bound": bound,
                "bound_left": bound_left,
            }
            if best is None or row.rps / bound > best.rps / min(
                best.ideal_rps, best.ceiling_all_cores
            ):
                best = row
    if best is not None:
        out["llm_cpu_ms"] = best.server_cpu_ms_per_request
    print(_trips(args.app_dir, work, cited))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--app-dir", type=Path, default=ROOT, help="the checkout served")
    parser.add_argument("--pdf", type=Path, default=DEFAULT_PDF)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=8.0, help="per load row")
    parser.add_argument("--rounds", type=int, default=40, help="latency samples per kind")
    parser.add_argument("--workers", type=int, nargs="+", default=[2])
    parser.add_argument("--llm-delay", type=float, default=0.3)
    main(parser.parse_args())
