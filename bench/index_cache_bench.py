"""Index speed and cache formats: the cold build's CPU against PyMuPDF's rawdict extraction,
a reload's CPU against reading the blob (``index_speed.py``), whether the first batch on the
largest 10-K waits out its build; then the size and load time of a cached index as the pickle
files the cache used to write against the data-only blobs it writes now (zlib and plain).

    .venv/bin/python bench/index_cache_bench.py [PDF ...] [--repeat 5] [--json out.json]
        [--app-root DIR] [--no-first-batch]

Default PDFs: the 352-page book, the two-column paper, the largest 10-K and the Chinese bill
from ../shared/pdfs, or the generated sample when that corpus is absent. Times are the best of
``--repeat`` runs (the machine is shared; the minimum is the least disturbed). ``--app-root``
measures another checkout's ``app`` (e.g. the commit before a change) with this bench. The
pickles are made and loaded here, from this process's own index, only to measure the old format.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
if "--app-root" in sys.argv:  # before anything imports app
    sys.path.insert(0, str(Path(sys.argv[sys.argv.index("--app-root") + 1]).resolve()))

from index_speed import build_row, first_batch, reload_row, speed_table  # noqa: E402

from app.pdfs.index_codec import decode_index, encode_index  # noqa: E402
from app.pdfs.sample import write_sample_pdf  # noqa: E402

SHARED = ROOT.parent / "shared" / "pdfs"
DEFAULT = [
    "pdfjs_freeculture.pdf",
    "pdfjs_tracemonkey.pdf",
    "financebench/AMERICANEXPRESS_2022_10K.pdf",  # the largest 10-K: 260 pages
    "twly_bill_LCEWA01_080202_00016_zh-hant.pdf",  # Traditional Chinese
]
LARGEST_10K = "financebench/AMERICANEXPRESS_2022_10K.pdf"


def best(repeat: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def measure(pdf: Path, repeat: int) -> dict[str, object]:
    data = pdf.read_bytes()
    speed, index = build_row(data, repeat)
    pickled = pickle.dumps(index, protocol=pickle.HIGHEST_PROTOCOL)
    row: dict[str, object] = {
        "pdf": pdf.name,
        "pages": index.page_count,
        "chars": len(index.chars),
        **speed,
        **reload_row(data, index, repeat),
        "build_s": speed["build_cpu_s"],
        "pickle_bytes": len(pickled),
        "pickle_load_s": best(repeat, lambda: pickle.loads(pickled)),
    }
    for name, compress in (("zlib", True), ("plain", False)):
        blob = encode_index(index, compress=compress)
        row[f"{name}_bytes"] = len(blob)
        row[f"{name}_encode_s"] = best(repeat, partial(encode_index, index, compress=compress))
        row[f"{name}_load_s"] = best(repeat, partial(decode_index, blob))
    return row


def table(rows: list[dict[str, object]]) -> str:
    columns = [
        ("pdf", "pdf", "{}"),
        ("pages", "pages", "{}"),
        ("build_s", "build s", "{:.2f}"),
        ("pickle_bytes", "pickle MB", "{:.2f}"),
        ("pickle_load_s", "load ms", "{:.1f}"),
        ("zlib_bytes", "blob MB", "{:.2f}"),
        ("zlib_encode_s", "write ms", "{:.1f}"),
        ("zlib_load_s", "load ms", "{:.1f}"),
        ("plain_bytes", "plain MB", "{:.2f}"),
        ("plain_encode_s", "write ms", "{:.1f}"),
        ("plain_load_s", "load ms", "{:.1f}"),
    ]

    def cell(row: dict[str, object], key: str, fmt: str) -> str:
        value = row[key]
        if key.endswith("_bytes") and isinstance(value, int):
            return fmt.format(value / 1e6)
        if key.endswith("_s") and key != "build_s" and isinstance(value, float):
            return fmt.format(value * 1000)
        return fmt.format(value)

    lines = [[title for _, title, _ in columns]]
    lines += [[cell(row, key, fmt) for key, _, fmt in columns] for row in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(columns))]
    return "\n".join(
        "  ".join(
            text.ljust(w) if i == 0 else text.rjust(w)
            for i, (text, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in lines
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pdfs", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--app-root", type=Path, help="measure this checkout's app instead")
    parser.add_argument("--no-first-batch", action="store_true")
    args = parser.parse_args()
    pdfs: list[Path] = args.pdfs
    if not pdfs:
        if (SHARED / "MANIFEST.tsv").is_file():
            pdfs = [SHARED / name for name in DEFAULT]
        else:
            print(f"{SHARED} not found: measuring the generated sample only", file=sys.stderr)
            pdfs = [write_sample_pdf(Path(tempfile.mkdtemp()) / "sample.pdf")]
    rows = [measure(pdf, args.repeat) for pdf in pdfs]
    print("Cold build: CPU s of build_index against PyMuPDF's rawdict on the same pages and flags")
    print('(both with the garbage collector paused, as the build runs; goal <= 1.5x; "(gc on)":')
    print("rawdict with the collector on, as a plain script runs it, and the build against it).")
    print("Reload: CPU ms of a new IndexCache loading the signed blob, against reading its bytes")
    print("and against reading + inflating them (goal <= 3x). Best of", args.repeat, "runs.\n")
    print(speed_table(rows))
    largest = SHARED / LARGEST_10K
    if not args.no_first_batch and largest.is_file():
        print("\n" + first_batch(largest))
    print("\npickle = the old cache files; blob = index_codec with zlib (what the cache writes);")
    print(
        "plain = index_codec uncompressed; build s = CPU, as above. Best of",
        args.repeat,
        "runs.\n",
    )
    print(table(rows))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
