"""Latency of POST /v2/highlights/batch end to end, in-process, on a real PDF.

Measures, in one run: ingest (chunking + index build), the first batch on a cold index (the
baseline), warm batches with the lexical selector, warm batches through the LLM tier against
the scripted OpenAI-compatible server over real HTTP (result cache off), and the same LLM batch
answered from the result cache (a conversation reopened), with the number of LLM calls each row
made. Prints a table with ratios to the cold baseline and writes JSON under bench/results/.
``--llm-delay`` makes the scripted server take that long per reply, like a real model.

    .venv/bin/python bench/batch_bench.py [--pdf PATH] [--citations 10] [--rounds 30]
                                          [--llm-delay 0.0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.db.migrate import upgrade  # noqa: E402
from app.services import ingest_file  # noqa: E402
from tests.fixtures.app import app_client, make_settings  # noqa: E402
from tests.fixtures.llm_server import ScriptedLLM, choose_first  # noqa: E402

DEFAULT_PDF = ROOT.parent / "shared" / "pdfs" / "pdfjs_freeculture.pdf"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def timed_batches(settings: Any, request: dict[str, Any], rounds: int) -> list[float]:
    times = []
    async with app_client(settings) as client:
        for _ in range(rounds):
            started = time.perf_counter()
            response = await client.post("/v2/highlights/batch", json=request)
            times.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, response.text
    return times


async def main(pdf: Path, citations: int, rounds: int, llm_delay: float) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="batch-bench-"))
    # The result cache off for the rows that measure the work itself.
    base = make_settings(
        f"sqlite+aiosqlite:///{work / 'b.db'}", work / "pdfs", result_cache_ttl_s=0
    )
    upgrade(base.database_url)
    started = time.perf_counter()
    stored = await ingest_file(base, pdf, "bench")
    ingest_s = time.perf_counter() - started
    chunk_ids = list(stored["chunks"])  # type: ignore[call-overload]
    step = max(1, len(chunk_ids) // citations)
    request = {
        "query": "What does the author say about copyright and culture?",
        "answer": (
            "The author argues that copyright law now regulates culture far more than ever."
        ),
        "citations": [{"chunk_id": c} for c in chunk_ids[::step][:citations]],
    }
    cold = (await timed_batches(base, request, 1))[0]  # fresh app: index built on this request
    lexical = await timed_batches(base, request, rounds)
    server = ScriptedLLM().start()
    server.chooser = choose_first
    if llm_delay:
        server.slow_down(llm_delay)
    llm_settings = base.model_copy(
        update={
            "llm_provider": "vllm",
            "llm_base_url": server.base_url,
            "llm_model": "scripted",
        }
    )
    llm = await timed_batches(llm_settings, request, rounds)
    llm_calls = len(server.requests)
    cached_settings = llm_settings.model_copy(update={"result_cache_ttl_s": 3600})
    await timed_batches(cached_settings, request, 1)  # the miss that fills the cache
    before = len(server.requests)
    cached = await timed_batches(cached_settings, request, rounds)
    cache_calls = len(server.requests) - before
    server.stop()
    rows = {
        "cold index (baseline)": [cold],
        "warm, lexical": lexical,
        "warm, LLM over HTTP (scripted server)": llm,
        "result cache hit (same LLM batch)": cached,
    }
    calls = {
        "warm, LLM over HTTP (scripted server)": llm_calls,
        "result cache hit (same LLM batch)": cache_calls,
    }
    result: dict[str, Any] = {
        "pdf": pdf.name,
        "chunks": len(chunk_ids),
        "citations": len(request["citations"]),
        "ingest_s": round(ingest_s, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "rows": {},
    }
    print(
        f"{pdf.name}: {len(chunk_ids)} chunks, ingest {ingest_s:.2f} s, "
        f"{len(request['citations'])} citations per batch, {rounds} rounds"
    )
    print(f"{'':40} {'p50 ms':>9} {'p95 ms':>9} {'x cold':>8} {'LLM calls':>10}")
    for name, times in rows.items():
        p50, p95 = statistics.median(times), percentile(times, 0.95)
        result["rows"][name] = {"p50_ms": round(p50, 1), "p95_ms": round(p95, 1)}
        made = calls.get(name)
        result["rows"][name]["llm_calls"] = made
        print(
            f"{name:40} {p50:9.1f} {p95:9.1f} {p50 / cold:8.3f} {'' if made is None else made:>10}"
        )
    llm_p50 = result["rows"]["warm, LLM over HTTP (scripted server)"]["p50_ms"]
    hit_p50 = result["rows"]["result cache hit (same LLM batch)"]["p50_ms"]
    print(f"cache hit p50 / LLM path p50: {hit_p50 / llm_p50:.3f} (LLM delay {llm_delay:g} s)")
    print(f"peak RSS {result['peak_rss_mb']} MB")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pdf", type=Path, default=DEFAULT_PDF)
    parser.add_argument("--citations", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--llm-delay", type=float, default=0.0)
    args = parser.parse_args()
    if not args.pdf.is_file():
        sys.exit(f"no PDF at {args.pdf}; pass --pdf")
    out = asyncio.run(main(args.pdf, args.citations, args.rounds, args.llm_delay))
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"batch_bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(out, indent=2))
    print(f"wrote {path}")
