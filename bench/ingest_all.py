"""`highlight-service ingest` on every PDF of a corpus, as a user runs it (one process per PDF, one
fresh SQLite database for the run): exit code, seconds, pages and chunks per PDF.

A PDF either ingests (exit 0, its chunks printed as JSON), or is refused with exactly one line on
stderr and exit 1 (``error: ...``), never a traceback. A refusal is a failure unless the PDF is
known to be unusable (``EXPECT_REFUSED``, with words its reason must contain). The generated
PDFs of the tests run too, so the bench means something without ../shared/pdfs.

    .venv/bin/python bench/ingest_all.py [PDF_DIR ...] [--json bench/results/ingest_all.json]
        [--index-cache EMPTY_DIR] [--jobs N]

``--index-cache``: the text indexes the ingests build are left in this folder (empty at the
start, so every ingest still builds its own): scripts/bench.sh hands it to the benches that
ingest the same FinanceBench filings afterwards (filings.py), which then build none.

``--jobs``: how many ingests run at once (default: one per core, at most 2). They share the
database and the index folder, as a user's parallel ingests do; each one's seconds are then wall
time beside another ingest, so compare seconds between runs of the same ``--jobs`` only.

Exit status 1 when any PDF failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures.pdfs import write_generated_corpus  # noqa: E402

SHARED = ROOT.parent / "shared" / "pdfs"
# PDFs ingest must refuse with a one-line reason: no text (a blank picture OCR finds nothing
# in), a broken page tree. The corpus's scan without a text layer is read by OCR and ingests
# when Tesseract is installed (as CI does), and is refused, saying OCR is off, when it is not.
EXPECT_REFUSED = {
    "scan-no-text.pdf": "no text layer",
    "page-count-lies.pdf": "cannot be indexed",
    "page-count-invalid.pdf": "cannot be indexed",
    "cyclic-page-tree.pdf": "cannot be indexed",
    "text-bomb.pdf": "cannot be processed by this service: page 1 holds",
    # MuPDF's nesting limit refuses the page dictionary: the page has no content it can read.
    "deep-nesting.pdf": "no text layer",
}
if shutil.which("tesseract") is None:
    EXPECT_REFUSED["ocrmypdf_linn_scan-no-text.pdf"] = "OCR is off"


@dataclass
class Outcome:
    pdf: str
    exit_code: int
    seconds: float
    pages: int | None
    chunks: int | None
    message: str
    ok: bool


def ingest(pdf: Path, env: dict[str, str], n: int) -> Outcome:
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "ingest", str(pdf), "--document-id", f"doc-{n}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    seconds = time.perf_counter() - started
    # Logging goes to stderr too; the error line is the one the command prints last.
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    pages = chunks = None
    if result.returncode == 0:
        data = json.loads(result.stdout)
        pages, chunks = data["pages"], len(data["chunks"])
        message = ""
        ok = pdf.name not in EXPECT_REFUSED
    else:
        message = errors[-1] if errors else result.stderr.strip().splitlines()[-1:][0]
        one_line = len(errors) == 1 and "Traceback" not in result.stderr
        expected = EXPECT_REFUSED.get(pdf.name)
        ok = one_line and result.returncode == 1 and expected is not None and expected in message
    return Outcome(pdf.name, result.returncode, seconds, pages, chunks, message[:160], ok)


def corpus(dirs: list[Path], generated: Path) -> list[Path]:
    pdfs = sorted(write_generated_corpus(generated))
    for folder in dirs:
        pdfs += sorted(folder.glob("*.pdf")) + sorted(folder.glob("*/*.pdf"))
    return pdfs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="*", type=Path, help="default: ../shared/pdfs if present")
    parser.add_argument("--json", type=Path, default=ROOT / "bench/results/ingest_all.json")
    parser.add_argument("--index-cache", type=Path, help="an empty folder to keep the indexes in")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args()
    if (
        args.index_cache is not None
        and args.index_cache.exists()
        and any(args.index_cache.iterdir())
    ):
        parser.error(
            f"{args.index_cache} is not empty: its indexes would spare ingests their build"
        )
    dirs = args.dirs or ([SHARED] if SHARED.is_dir() else [])
    work = Path(tempfile.mkdtemp(prefix="ingest-all-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIGHLIGHT_")}
    env.update(
        HIGHLIGHT_DATABASE_URL=f"sqlite+aiosqlite:///{work / 'ingest.db'}",
        HIGHLIGHT_PDF_ROOT=str(work / "pdfs"),
        HIGHLIGHT_INDEX_CACHE_DIR=str(args.index_cache or work / "index-cache"),
        PYTHONPATH=str(ROOT),
    )
    pdfs = corpus(dirs, work / "generated")
    # Most of a small PDF's ingest is the command's start-up (imports, migrations check), so two
    # at a time halve the gate's time on two cores; results come back in the corpus's order.
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        outcomes = list(pool.map(ingest, pdfs, [env] * len(pdfs), range(len(pdfs))))
    print(f"{'pdf':<52} {'exit':>4} {'s':>6} {'pages':>5} {'chunks':>6}  result")
    for o in outcomes:
        verdict = "ok" if o.ok else "FAILED"
        detail = f" ({o.message})" if o.message else ""
        print(
            f"{o.pdf[:52]:<52} {o.exit_code:>4} {o.seconds:>6.1f} {o.pages or '-':>5} "
            f"{o.chunks or '-':>6}  {verdict}{detail}"
        )
    failed = [o for o in outcomes if not o.ok]
    total = sum(o.seconds for o in outcomes)
    print(
        f"\n{len(outcomes)} PDFs, {len(failed)} failures, {total:.0f} s in all, "
        f"{sum(o.pages or 0 for o in outcomes)} pages, {sum(o.chunks or 0 for o in outcomes)} "
        "chunks"
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
