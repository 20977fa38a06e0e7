"""Hostile-input suite: the real service (one uvicorn process and its PDF workers, auth on, an LLM
on a scripted OpenAI-protocol server) under each attack in turn, while a prober asks /healthz
every 50 ms and a sampler reads the RSS of the service and of its whole process tree.

    .venv/bin/python bench/hostile.py                  # a gate: exit 1 on any broken bound
    .venv/bin/python bench/hostile.py --app-dir /tmp/old --no-gate   # another checkout, numbers

Per attack it prints: wall time, /healthz p50/p99/max during it, peak RSS of the service process
and of the tree (workers included), and the statuses returned. The gate: every request answered
with an expected status within the attack's bound, no 500, no traceback in the service's log,
and /healthz p99 under HEALTHZ_P99_BOUND_MS during every attack (a frozen loop takes seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.hostile_bodies import Outcome as BodyOutcome  # noqa: E402
from bench.hostile_bodies import body_of, hostile_request  # noqa: E402
from tests.fixtures import hostile_ole  # noqa: E402
from tests.fixtures.hostile_pdfs import (  # noqa: E402
    BOMB_FIRST_LINE,
    write_deep_nesting_pdf,
    write_drawing_bomb_pdf,
    write_huge_page_pdf,
    write_text_bomb_pdf,
)
from tests.fixtures.live import live_service  # noqa: E402
from tests.fixtures.llm_server import ScriptedLLM, huge_completion  # noqa: E402
from tests.fixtures.load import percentile  # noqa: E402
from tests.fixtures.pdfs import write_cyclic_page_tree_pdf, write_lying_page_count_pdf  # noqa: E402

READ, WRITE = "hostile-read-token", "hostile-write-token"
HEALTHZ_P99_BOUND_MS = 1000.0


@dataclass
class Outcome:
    name: str
    bound_s: float
    expected: set[int | str]
    statuses: Counter[int | str] = field(default_factory=Counter)
    started: float = 0.0
    ended: float = 0.0


class Sampler:
    """RSS of a process and of its descendants (psutil), every 200 ms, in a thread."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.samples: list[tuple[float, int, int]] = []  # (time, own bytes, tree bytes)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _rss(process: psutil.Process) -> int:
        try:
            return int(process.memory_info().rss)
        except psutil.Error:  # a worker that just ended
            return 0

    def _run(self) -> None:
        while not self._stop.is_set():
            children = self.process.children(recursive=True)
            own = self._rss(self.process)
            self.samples.append((time.monotonic(), own, own + sum(map(self._rss, children))))
            self._stop.wait(0.2)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def peak(self, start: float, end: float) -> tuple[float, float]:
        window = [(own, tree) for t, own, tree in self.samples if start <= t <= end + 0.2]
        if not window:
            return 0.0, 0.0
        return max(o for o, _ in window) / 2**20, max(t for _, t in window) / 2**20


def probe(url: str, samples: list[tuple[float, float]], stop: threading.Event) -> None:
    """In its own thread with its own connection: the attacks' event loop, busy sending 600 MB,
    must not delay the probe and pass for the service's own latency."""
    with httpx.Client(base_url=url, timeout=300) as client:
        while not stop.is_set():
            started = time.monotonic()
            try:
                client.get("/healthz")
            except httpx.HTTPError:
                pass
            samples.append((started, (time.monotonic() - started) * 1000))
            stop.wait(0.05)


Attack = Callable[[httpx.AsyncClient, Outcome], Awaitable[None]]


def _doc(source_path: str, chunk_id: str, text: str = BOMB_FIRST_LINE) -> dict[str, Any]:
    return {
        "source_path": source_path,
        "chunks": [{"id": chunk_id, "text": text, "page_start": 1, "page_end": 1}],
    }


def _batch(answer: str, *chunk_ids: str) -> dict[str, Any]:
    return {
        "query": "What does the page say?",
        "answer": answer,
        "citations": [{"chunk_id": c, "citation_id": str(i)} for i, c in enumerate(chunk_ids, 1)],
    }


async def _record(outcome: Outcome, request: Awaitable[httpx.Response]) -> httpx.Response | None:
    try:
        response = await request
    except httpx.TimeoutException:
        outcome.statuses["timeout"] += 1
        return None
    except httpx.TransportError as exc:
        outcome.statuses[type(exc).__name__] += 1
        return None
    outcome.statuses[response.status_code] += 1
    if response.status_code == 200 and response.headers.get("content-type", "").startswith(
        "application/json"
    ):
        for result in response.json().get("results", []):
            outcome.statuses[f"{result['status']}/{result.get('reason')}"] += 1
    return response


async def text_bomb(client: httpx.AsyncClient, outcome: Outcome) -> None:
    await _record(outcome, client.put("/v2/documents/bomb", json=_doc("bomb.pdf", "bomb-1")))
    for _ in range(2):
        await _record(
            outcome, client.post("/v2/highlights/batch", json=_batch("It says.", "bomb-1"))
        )


async def huge_page_previews(client: httpx.AsyncClient, outcome: Outcome) -> None:
    await _record(outcome, client.put("/v2/documents/huge", json=_doc("huge.pdf", "huge-1")))
    previews = [
        client.get("/v2/documents/huge/pages/1.png", params={"scale": s}) for s in (1, 1.5, 2, 3)
    ]
    await asyncio.gather(*(_record(outcome, p) for p in previews))


async def drawing_bomb_previews(client: httpx.AsyncClient, outcome: Outcome) -> None:
    await _record(outcome, client.put("/v2/documents/drawing", json=_doc("drawing.pdf", "draw-1")))
    previews = [
        client.get("/v2/documents/drawing/pages/1.png", params={"scale": 3}) for _ in range(4)
    ]
    await asyncio.gather(*(_record(outcome, p) for p in previews))


async def broken_page_trees(client: httpx.AsyncClient, outcome: Outcome) -> None:
    for name in ("deep", "lying", "cyclic"):
        put = client.put(f"/v2/documents/{name}", json=_doc(f"{name}.pdf", f"{name}-1"))
        if (response := await _record(outcome, put)) is not None and response.status_code < 300:
            batch = client.post("/v2/highlights/batch", json=_batch("It says.", f"{name}-1"))
            await _record(outcome, batch)


async def adversarial_chunks(client: httpx.AsyncClient, outcome: Outcome) -> None:
    texts = {
        "dots": "x. " * 33_333,
        "spaces": "The ferry" + " " * 40_000 + "runs daily.",
        "contents": "".join(f"Section {i} {'.' * 60} {i}\n" for i in range(1, 420)),
        "periods": "." * 99_000 + " end.",
    }
    for name, text in texts.items():
        put = client.put(f"/v2/documents/adv-{name}", json=_doc("huge.pdf", f"adv-{name}", text))
        await _record(outcome, put)
    batch = _batch("The ferry runs daily.", *(f"adv-{name}" for name in texts))
    await _record(outcome, client.post("/v2/highlights/batch", json=batch))


async def adversarial_answer(client: httpx.AsyncClient, outcome: Outcome) -> None:
    batch = _batch(("x. " * 6_666)[:19_999], "huge-1")
    await asyncio.gather(
        *(_record(outcome, client.post("/v2/highlights/batch", json=batch)) for _ in range(3))
    )


async def anonymous_bodies(client: httpx.AsyncClient, outcome: Outcome) -> None:
    """bench/hostile_bodies.py's attack: 20 raw sockets, each a 30 MB batch without a token."""
    assert client.base_url.port
    body = body_of(30, writer=False)
    results: list[BodyOutcome] = []
    with ThreadPoolExecutor(20) as senders:
        loop = asyncio.get_running_loop()
        send = partial(
            hostile_request, client.base_url.port, "POST", "/v2/highlights/batch", body, None
        )
        await asyncio.gather(*(loop.run_in_executor(senders, send, results) for _ in range(20)))
    for result in results:
        parts = result.status.split()
        # A server that closes with the body unread makes its kernel send a reset, which can
        # drop the 401 before this side reads it: the refusal, not seen.
        outcome.statuses[int(parts[1]) if parts[:1] == ["HTTP/1.1"] else "reset"] += 1


async def hostile_ole_files(client: httpx.AsyncClient, outcome: Outcome) -> None:
    """Legacy Office uploads whose OLE container loops or claims what it has not (a reader
    that believed them would not finish), and 45 MB of directory, three at once."""
    files = {
        "ole-fat-loop": hostile_ole.looping_fat_list(),
        "ole-directory-loop": hostile_ole.looping_directory(),
        "ole-tree-loop": hostile_ole.looping_tree(),
        "ole-slides-loop": hostile_ole.looping_slides(),
    }
    wide = hostile_ole.wide_directory(45)
    files.update({f"ole-wide-{i}": wide for i in range(3)})
    uploads = [
        client.put(
            f"/v2/documents/{name}/file",
            params={"filename": f"{name}.doc", "chunk": "true"},
            content=data,
            headers={"content-type": "application/msword"},
        )
        for name, data in files.items()
    ]
    await asyncio.gather(*(_record(outcome, u) for u in uploads))


def huge_llm_replies(llm: ScriptedLLM) -> Attack:
    async def attack(client: httpx.AsyncClient, outcome: Outcome) -> None:
        llm.handler = lambda body: huge_completion(10 * 1024 * 1024)
        try:
            batches = [
                client.post(
                    "/v2/highlights/batch", json=_batch(f"The bomb page begins {i}.", "huge-1")
                )
                for i in range(30)
            ]
            await asyncio.gather(*(_record(outcome, b) for b in batches))
        finally:
            llm.handler = llm.honour_schema

    return attack


def write_pdfs(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    write_text_bomb_pdf(root / "bomb.pdf")
    write_huge_page_pdf(root / "huge.pdf")
    write_drawing_bomb_pdf(root / "drawing.pdf")
    write_deep_nesting_pdf(root / "deep.pdf")
    write_lying_page_count_pdf(root / "lying.pdf")
    write_cyclic_page_tree_pdf(root / "cyclic.pdf")


async def run(
    url: str, sampler: Sampler, attacks: list[tuple[Outcome, Attack]]
) -> list[tuple[float, float]]:
    samples: list[tuple[float, float]] = []
    stop = threading.Event()
    prober = threading.Thread(target=probe, args=(url, samples, stop), daemon=True)
    prober.start()
    headers = {"Authorization": f"Bearer {WRITE}"}
    await asyncio.sleep(1.0)  # a baseline before the first attack
    async with httpx.AsyncClient(base_url=url, headers=headers) as client:
        for outcome, attack in attacks:
            client.timeout = httpx.Timeout(outcome.bound_s)
            outcome.started = time.monotonic()
            try:
                await asyncio.wait_for(attack(client, outcome), outcome.bound_s * 2)
            except TimeoutError:
                outcome.statuses["attack over its bound"] += 1
            outcome.ended = time.monotonic()
            await asyncio.sleep(0.5)
    stop.set()
    prober.join()
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--app-dir", type=Path, default=ROOT, help="checkout whose app/ to run")
    parser.add_argument("--no-gate", action="store_true", help="print numbers, never fail")
    args = parser.parse_args()
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"hostile-{uuid.uuid4().hex[:8]}"
    write_pdfs(work / "pdfs")
    llm = ScriptedLLM().start()
    env = {
        "HIGHLIGHT_DATABASE_URL": f"sqlite+aiosqlite:///{work / 'hostile.db'}",
        "HIGHLIGHT_PDF_ROOT": str(work / "pdfs"),
        "HIGHLIGHT_INDEX_CACHE_DIR": str(work / "cache"),
        "HIGHLIGHT_AUTH_READ_TOKENS": f'["{READ}"]',
        "HIGHLIGHT_AUTH_WRITE_TOKENS": f'["{WRITE}"]',
        "HIGHLIGHT_LLM_PROVIDER": "vllm",
        "HIGHLIGHT_LLM_BASE_URL": llm.base_url,
        "HIGHLIGHT_LLM_MODEL": "scripted-model",
        "HIGHLIGHT_LLM_MAX_RETRIES": "0",
        "HIGHLIGHT_LOG_LEVEL": "WARNING",
    }
    ok = {200, 201}
    attacks: list[tuple[Outcome, Attack]] = [
        (Outcome("text bomb (3M glyphs, 31 KB)", 120, ok), text_bomb),
        (Outcome("huge page previews x4", 60, ok | {503}), huge_page_previews),
        (Outcome("drawing bomb previews x4", 120, ok | {422, 503}), drawing_bomb_previews),
        (Outcome("broken/deep page trees", 60, ok | {422}), broken_page_trees),
        (Outcome("adversarial chunk texts", 120, ok), adversarial_chunks),
        (Outcome("20k-char answer of 'x. ' x3", 120, ok), adversarial_answer),
        (Outcome("20 anonymous 30 MB bodies", 120, {401, 413, "reset"}), anonymous_bodies),
        (Outcome("looping OLE files, 45 MB directory x3", 60, {415, 422}), hostile_ole_files),
        (Outcome("30 x 10 MB LLM replies", 120, ok), huge_llm_replies(llm)),
    ]
    try:
        with live_service(work, env, "serve", app_dir=args.app_dir) as service:
            sampler = Sampler(service.process.pid).start()
            try:
                samples = asyncio.run(run(service.url, sampler, attacks))
            finally:
                sampler.stop()
            output = service.output()
            log = service.log
    finally:
        llm.stop()
    failures = []
    print(f"{'attack':34} {'wall s':>7} {'hz n':>5} {'hz p50':>7} {'hz p99':>7} {'hz max':>7} "
          f"{'RSS MB':>7} {'tree MB':>8}  statuses")  # fmt: skip
    for outcome, _ in attacks:
        window = [ms for t, ms in samples if outcome.started <= t <= outcome.ended]
        own, tree = sampler.peak(outcome.started, outcome.ended)
        p99 = percentile(window, 0.99)
        statuses = dict(sorted(outcome.statuses.items(), key=str))
        print(
            f"{outcome.name:34} {outcome.ended - outcome.started:7.1f} {len(window):5d} "
            f"{statistics.median(window) if window else 0:7.0f} {p99:7.0f} "
            f"{max(window, default=0):7.0f} {own:7.0f} {tree:8.0f}  {statuses}"
        )
        unexpected = [s for s in outcome.statuses if isinstance(s, int) or not str(s).count("/")]
        wrong = [s for s in unexpected if s not in outcome.expected]
        if wrong:
            failures.append(f"{outcome.name}: unexpected {wrong}")
        if p99 > HEALTHZ_P99_BOUND_MS:
            failures.append(f"{outcome.name}: /healthz p99 {p99:.0f} ms")
    tracebacks = output.count("Traceback")
    print(f"service log: {tracebacks} tracebacks, {output.count(' 500 ')} lines with a 500")
    if tracebacks:
        failures.append(f"{tracebacks} tracebacks in the service log ({log})")
    for failure in failures:
        print("FAILED:", failure)
    return 0 if args.no_gate or not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
