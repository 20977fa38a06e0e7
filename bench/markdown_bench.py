"""Markdown sources: how much of the CommonMark spec the service serves as a browser shows it,
how extraction grows on hostile input, and what a Markdown bomb costs a running service. Prints
numbers; the gates are tests (tests/browser/test_commonmark_spec.py,
tests/documents/test_markdown_growth.py, tests/api/test_markdown_sources.py).

    .venv/bin/python bench/markdown_bench.py                  # 1x = 1 KB (16x = 16 KB)
    .venv/bin/python bench/markdown_bench.py --size 65536     # 16x = 1 MB of each bomb

1. CommonMark 0.31.2: the spec's 652 examples uploaded to the service as ``example.md``, the text
   it serves against what Chromium shows of each example's expected HTML (the measure of
   tests/fixtures/commonmark.py). Skipped, saying so, without Chromium or Playwright.
2. Extraction of every bomb of tests/fixtures/markdown_bombs.py at 1x, 4x and 16x ``--size``:
   the CPU time of the thread that extracts (best of ``--repeat``, garbage collector off; the
   spec's uploads run meanwhile, from another process) and the ratios 4x/1x and 16x/4x
   (linear: 4).
3. A real ``highlight-service serve`` (one process, SQLite): the upload of a 60 KB and a 1 MB
   ``_a `` bomb (``PUT /v2/documents/{id}/file``), and meanwhile ``/healthz`` asked one request
   after the other: its worst latency is how long the event loop was held.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.documents.markdown_text import markdown_to_text  # noqa: E402
from tests.fixtures import commonmark  # noqa: E402
from tests.fixtures.live import live_service  # noqa: E402
from tests.fixtures.markdown_bombs import BOMBS  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
UPLOADS = {"60 KB": 60_000, "1 MB": 1_000_000}


def spec_figure(url: str) -> list[str]:
    """The CommonMark lines to print."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return ["CommonMark: skipped (the playwright package is not installed)"]
    if not os.path.exists(CHROMIUM):
        return [f"CommonMark: skipped (no Chromium at {CHROMIUM}: apt-get install chromium)"]
    examples = commonmark.examples()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        shown = commonmark.shown_texts(browser.new_page(), [e.html for e in examples])
        browser.close()

    async def served() -> list[str]:
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            return await commonmark.served_texts(client, [e.markdown for e in examples], at_once=8)

    outcomes = commonmark.compare(examples, asyncio.run(served()), shown)
    equal = sum(o.equal for o in outcomes)
    lines = [
        f"CommonMark 0.31.2: {equal}/{len(outcomes)} examples served as Chromium shows them "
        f"({100 * equal / len(outcomes):.1f}%)"
    ]
    lines += [
        f"  not equal: example {o.example.number} ({o.example.section})"
        for o in outcomes
        if not o.equal
    ]
    return lines


def cpu_seconds(source: str, repeat: int) -> float:
    """This thread's CPU time, the cyclic garbage collector off (its passes fall where they
    fall)."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        start = time.thread_time()
        markdown_to_text(source)
        best = min(best, time.thread_time() - start)
        gc.enable()
    return best


def growth(size: int, repeat: int) -> None:
    markdown_to_text("warm *up*")
    print(f"\nExtraction CPU time (best of {repeat}), 1x = {size:,} characters; linear: 4")
    print(f"{'bomb':32} {'1x s':>7} {'4x s':>7} {'16x s':>7} {'4x/1x':>6} {'16x/4x':>6}")
    worst = 0.0
    for name, bomb in BOMBS.items():
        times = [cpu_seconds(bomb(size * k), repeat) for k in (1, 4, 16)]
        up, up_again = (times[1] / max(times[0], 1e-4), times[2] / max(times[1], 1e-4))
        worst = max(worst, up, up_again)
        print(
            f"{name:32} {times[0]:7.3f} {times[1]:7.3f} {times[2]:7.3f} {up:6.1f} {up_again:6.1f}"
        )
    print(f"worst ratio {worst:.1f} (tests/documents/test_markdown_growth.py fails above 8)")


def probe(url: str, stop: threading.Event, worst: list[float]) -> None:
    with httpx.Client(base_url=url, timeout=120) as client:
        while not stop.is_set():
            start = time.perf_counter()
            client.get("/healthz").raise_for_status()
            worst[0] = max(worst[0], time.perf_counter() - start)
            time.sleep(0.01)


def uploads(url: str) -> None:
    print("\nA real service (serve, SQLite): upload of a `_a ` bomb, /healthz meanwhile")
    for label, size in UPLOADS.items():
        stop, worst = threading.Event(), [0.0]
        prober = threading.Thread(target=probe, args=(url, stop, worst))
        prober.start()
        start = time.perf_counter()
        response = httpx.put(
            f"{url}/v2/documents/bomb-{size}/file",
            params={"filename": "bomb.md", "chunk": "true"},
            content=BOMBS["_a "](size).encode(),
            headers={"content-type": "text/markdown"},
            timeout=600,
        )
        took = time.perf_counter() - start
        stop.set()
        prober.join()
        response.raise_for_status()
        print(f"  {label:>6}: uploaded in {took:5.2f} s, worst /healthz {1000 * worst[0]:6.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1024, help="1x, in characters")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        env = {
            "HIGHLIGHT_DATABASE_URL": f"sqlite+aiosqlite:///{work}/bench.db",
            "HIGHLIGHT_PDF_ROOT": f"{work}/pdfs",
            "HIGHLIGHT_INDEX_CACHE_DIR": f"{work}/cache",
            "HIGHLIGHT_LLM_PROVIDER": "none",
            "HIGHLIGHT_LOG_LEVEL": "WARNING",
        }
        with live_service(Path(work), env, "serve") as service, ProcessPoolExecutor(1) as pool:
            # The spec's uploads (a process of their own: its client holds no lock of this one)
            # keep the service busy while this process times the bombs.
            started = time.perf_counter()
            spec = pool.submit(spec_figure, service.url)
            growth(args.size, args.repeat)
            print(f"(extraction: {time.perf_counter() - started:.0f} s)")
            print("\n" + "\n".join(spec.result()))
            print(f"(CommonMark and extraction: {time.perf_counter() - started:.0f} s)")
            uploads(service.url)


if __name__ == "__main__":
    main()
