"""Index speed against its floors, measured in the same run (``index_cache_bench.py`` prints it).

Build: the CPU seconds of ``build_index`` against PyMuPDF's ``page.get_text("rawdict")`` on the
same pages with the same flags (the extraction the index is made from, and nothing else). Both
run with the cyclic garbage collector paused, as ``build_index`` runs: it makes either about a
quarter faster, so pausing it in the build only would flatter the ratio.

Reload: what a restarted worker pays for a cached index, the signed blob read from the cache
folder, its signature and checksum checked and decoded (``IndexCache.get`` in a new cache, as
after a restart), against reading the blob's bytes, and against reading them plus inflating
the zlib body (the least any reader of a compressed blob does). CPU seconds: the machine is
shared and wall time would measure the neighbours.

First batch: the largest 10-K, its index built cold in the PDF workers as the first batch of a
just-uploaded document waits for it (``IndexWait`` from the default settings): ready or
``index_pending``. Wall time, one run: this is the only number here the clock decides.
"""

from __future__ import annotations

import gc
import hashlib
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pymupdf

from app.alignment.index import DocumentIndex
from app.core.config import Settings
from app.pdfs import extract, index_signing
from app.pdfs.extract import build_index
from app.pdfs.index_cache import IndexCache, IndexPending
from app.pdfs.index_codec import PREFIX_SIZE
from app.pdfs.index_signing import Binding, SigningKey, SigningKeys
from app.pdfs.indexing import IndexWait, cached_index
from app.pdfs.workers import PdfWorkers, WorkerLimits

# A sample shorter than this is repeated within one timing (a 4-page PDF builds in 10 ms).
_MIN_SAMPLE_S = 0.05


@contextmanager
def _collector_paused() -> Iterator[None]:
    # app.pdfs.extract's, copied: the floor must run the same way whichever checkout's app is
    # measured (--app-root), and older ones have none to import.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def cpu_best(
    repeat: int, run: Callable[[], object], before: Callable[[int], None] | None = None
) -> float:
    """Least CPU seconds of one ``run`` over ``repeat`` samples (each looped to 50 ms);
    ``before(n)``, untimed, readies a sample of ``n`` runs."""
    prepare = before or (lambda count: None)
    prepare(1)
    started = time.process_time()
    run()
    first = time.process_time() - started
    loops = 1 if first >= _MIN_SAMPLE_S else int(_MIN_SAMPLE_S / max(first, 1e-6)) + 1
    # A run long enough to be a sample is one (the bench's CI time is mostly these).
    times = [first] if loops == 1 else []
    while len(times) < repeat:
        prepare(loops)
        started = time.process_time()
        for _ in range(loops):
            run()
        times.append((time.process_time() - started) / loops)
    return min(times)


def rawdict(data: bytes) -> None:
    with pymupdf.open(stream=data) as doc:
        for page in doc:
            page.get_text("rawdict", flags=extract._TEXT_FLAGS)


def rawdict_floor(data: bytes) -> None:
    with _collector_paused():
        rawdict(data)


def build_row(data: bytes, repeat: int) -> tuple[dict[str, float], DocumentIndex]:
    """The build's CPU against its floors, and the index built."""
    floor = cpu_best(repeat, lambda: rawdict_floor(data))
    built: list[DocumentIndex] = []

    def build_one() -> None:
        built[:] = [build_index(data)]  # the last only: a book's index is tens of MB

    build = cpu_best(repeat, build_one)
    # For reference only: the extraction as a plain script runs it, collector on.
    collected = cpu_best(repeat, lambda: rawdict(data))
    row = {
        "floor_cpu_s": floor,
        "build_cpu_s": build,
        "build_ratio": build / floor,
        "floor_gc_cpu_s": collected,
        "build_ratio_gc": build / collected,
    }
    return row, built[-1]


def reload_row(data: bytes, index: DocumentIndex, repeat: int) -> dict[str, float]:
    sha256 = hashlib.sha256(data).hexdigest()
    keys = SigningKeys([SigningKey("bench", b"k" * 32)])

    def never() -> DocumentIndex:
        raise AssertionError("the blob was not reloaded")

    with tempfile.TemporaryDirectory() as folder:
        IndexCache(Path(folder), signing=keys).get(sha256, lambda: index)
        (blob,) = Path(folder).iterdir()
        payload = index_signing.open_blob(blob.read_bytes(), Binding(sha256, ""), keys).payload
        body_at = len(blob.read_bytes()) - len(payload) + PREFIX_SIZE

        def inflate() -> None:
            zlib.decompress(memoryview(blob.read_bytes())[body_at:])

        read = cpu_best(repeat, blob.read_bytes)
        inflated = cpu_best(repeat, inflate)
        # A new cache each time (as after a restart), made before the clock starts: a process
        # makes one, not one per PDF.
        caches: list[IndexCache] = []

        def reload_one() -> None:
            caches.pop().get(sha256, never)

        def fresh(count: int) -> None:
            caches[:] = [IndexCache(Path(folder), signing=keys) for _ in range(count)]

        reload = cpu_best(repeat, reload_one, before=fresh)
        size = blob.stat().st_size
    return {
        "blob_bytes": size,
        "read_cpu_s": read,
        "inflate_cpu_s": inflated,
        "reload_cpu_s": reload,
        "reload_ratio_read": reload / read,
        "reload_ratio_inflate": reload / inflated,
    }


def first_batch(pdf: Path) -> str:
    """One cold build in the PDF workers as a first batch waits for it: ready or pending."""
    settings = Settings.model_fields
    wait = IndexWait(
        settings["index_wait_s"].default,
        settings["index_wait_page_s"].default,
        settings["index_wait_max_s"].default,
    )
    data = pdf.read_bytes()
    sha256 = hashlib.sha256(data).hexdigest()
    workers = PdfWorkers(WorkerLimits())
    try:
        workers.run(extract.page_count, data, name=pdf.name)  # workers started, as in service
        started = time.perf_counter()
        try:
            index = cached_index(workers, IndexCache(), lambda: data, sha256, pdf.name, wait)
        except IndexPending:
            outcome = "index_pending (fell back)"
        else:
            outcome = "ready (no fallback)"
        took = time.perf_counter() - started
        pages = index.page_count if outcome.startswith("ready") else pymupdf.open(pdf).page_count
    finally:
        workers.close()
    allowed = min(max(wait.base_s, wait.max_s), wait.base_s + wait.page_s * pages)
    return (
        f"first batch on {pdf.name} ({pages} pages), index built cold in the PDF workers: "
        f"{outcome} after {took:.2f} s wall, the batch waits up to {allowed:.1f} s"
    )


def speed_table(rows: list[dict[str, object]]) -> str:
    head = (
        f"{'pdf':<44} {'pages':>5} {'rawdict s':>9} {'build s':>8} {'ratio':>6} {'(gc on)':>13}  "
        f"{'blob MB':>7} {'read ms':>7} {'+inflate':>8} {'reload ms':>9} {'/read':>6} {'/infl':>5}"
    )
    lines = [head]
    for row in rows:
        lines.append(
            f"{str(row['pdf'])[:44]:<44} {row['pages']:>5} {row['floor_cpu_s']:>9.3f} "
            f"{row['build_cpu_s']:>8.3f} {row['build_ratio']:>5.2f}x "
            f"{row['floor_gc_cpu_s']:>6.3f} {row['build_ratio_gc']:>5.2f}x  "
            f"{int(row['blob_bytes']) / 1e6:>7.2f} {float(row['read_cpu_s']) * 1e3:>7.1f} "  # type: ignore[call-overload]
            f"{float(row['inflate_cpu_s']) * 1e3:>8.1f} "  # type: ignore[arg-type]
            f"{float(row['reload_cpu_s']) * 1e3:>9.1f} "  # type: ignore[arg-type]
            f"{row['reload_ratio_read']:>5.0f}x {row['reload_ratio_inflate']:>4.2f}x"
        )
    return "\n".join(lines)
