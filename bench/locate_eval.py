"""Evaluate app.alignment.locate against ground truth from a different extractor.

Quotes are sentences taken from poppler's ``pdftotext -bbox-layout -cropbox`` output (its
word boxes are the ground truth), perturbed the way LLMs misquote (clean; lightly edited:
dropped word, curly quotes, case change, changed word; elided "first ... last"), CJK quotes
normalised the way NFKC pipelines hand them over (``cjk_compat``), sentences whose text recurs
in the document quoted with their chunk text and offset (``repeated``), plus negative quotes
taken from other documents. Generated PDFs add layouts the shared corpus lacks: IRS-style
columns with bullets and sidebars drawn out of reading order (``columns``, gen_irs.py), table
cells (``table``, gen_cells.py), and a CJK page for ``cjk_compat``; with an empty PDF_DIR the
run uses these alone. Every quote is searched in the whole document unless ``--page-hint``.
PyMuPDF's ``page.search_for`` is measured in the same run as the baseline.

A quote is a *hit* when at least 80% of its ground-truth words have their centre inside a
returned rectangle on the right page; *wrong place* when it was found but fewer than half of
the words under the returned rectangles are ground-truth words; negatives that come back
"found" are *false positives*.

    .venv/bin/python bench/locate_eval.py [PDF_DIR] [--per-kind N] [--seed S] [--no-baseline]
        [--negatives N] [--only SUBSTRING] [--page-hint] [--no-generated] [--then-page-hint]
        [--misses KINDS]

``--misses clean,repeated`` (or ``all``) prints every non-hit of those kinds after the tables:
the quote, its true pages and what the locator returned (the JSON holds the same list).

``--then-page-hint`` reports the run, then the same quotes on the same indexes with the page
hint and without the baseline: what a second run with ``--page-hint --no-baseline`` reports,
without reading the corpus and building its indexes twice (scripts/bench.sh).

The pieces: ``eval_quotes.py`` builds the quotes, ``eval_scoring.py`` judges and reports.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pymupdf
from eval_quotes import Quote, Word, corpus
from eval_scoring import Outcome, baseline, judge, print_misses, report, result_rects
from gen_cells import make_cjk, make_tables
from gen_irs import make_columns, make_repeated

from app.alignment.index import DocumentIndex
from app.alignment.locate import ChunkHint, LocateResult, locate
from app.alignment.text import normalize_text
from app.pdfs.extract import build_index

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PDFS = ROOT.parent / "shared" / "pdfs"
RESULTS = ROOT / "bench" / "results"
BOOK = "pdfjs_freeculture.pdf"


def page_hint(quote: Quote, page_count: int) -> tuple[int, int]:
    """The service passes the cited chunk's pages: here the true pages widened by one each
    side (negatives get a window derived from their text, so the run stays deterministic)."""
    if quote.words:
        pages = [w.page for w in quote.words]
        return max(1, min(pages) - 1), min(page_count, max(pages) + 1)
    first = 1 + sum(map(ord, quote.text)) % page_count
    return first, min(page_count, first + 2)


def _locate(index: DocumentIndex, quote: Quote, pages: tuple[int, int] | None) -> LocateResult:
    """As the service calls it: repeated sentences come with their chunk text and offset."""
    hint = ChunkHint(quote.chunk, quote.chunk_start) if quote.chunk else None
    return locate(index, quote.text, pages, hint)


def generated(folder: Path, per_kind: int, seed: int) -> dict[str, tuple[list[Word], list[Quote]]]:
    """Drawn words and quotes of the generated documents (the CJK page is left in ``folder``
    to be quoted from pdftotext like the shared corpus)."""
    make_cjk(folder / "gen_cjk.pdf", seed)
    makers = {
        "gen_irs_columns.pdf": (make_columns, 3),
        "gen_irs_repeated.pdf": (make_repeated, 2),
        "gen_cells_tables.pdf": (make_tables, 3),
    }
    out = {}
    for name, (make, share) in makers.items():
        words, quotes = make(folder / name, seed)
        out[name] = (words, quotes[: share * per_kind])
    return out


def text_order(index: DocumentIndex, quote: Quote) -> str:
    """Where a non-hit's text is contiguous: PyMuPDF's drawing order, the column reading (with
    how many copies each), or neither: then poppler reads the passage in an order the locator
    never sees, and finding it would mean stitching pieces (most clean misses are such)."""
    skeleton = normalize_text(quote.text)
    # Only quotes printed as the PDF has them: an edited or elided one is contiguous nowhere.
    if not skeleton or quote.kind not in ("clean", "repeated", "table", "columns"):
        return ""
    drawn = index.norm.text.count(skeleton)
    read = index.readings.norm.text.count(skeleton) if index.readings is not None else 0
    if drawn:
        return f"drawing x{drawn}"
    return f"reading x{read}" if read else "neither"


def run_doc(
    pdf: Path,
    index: DocumentIndex,
    quotes: list[Quote],
    words: list[Word],
    with_baseline: bool,
    hint: bool = False,
) -> list[Outcome]:
    by_page: dict[int, list[Word]] = defaultdict(list)
    for word in words:
        by_page[word.page].append(word)
    outcomes: list[Outcome] = []
    with pymupdf.open(pdf) as doc:
        pages = [(page, page.get_textpage()) for page in doc] if with_baseline else []
        for quote in quotes:
            t0 = time.perf_counter()
            pages_range = page_hint(quote, index.page_count) if hint else None
            result = _locate(index, quote, pages_range)
            ms = (time.perf_counter() - t0) * 1000
            base = judge(quote, baseline(pages, quote.text), by_page) if with_baseline else "n/a"
            verdict = judge(quote, result_rects(result), by_page)
            order = text_order(index, quote) if verdict not in ("hit", "ok") else ""
            outcomes.append(
                Outcome(quote, verdict, base, ms, result.score, result.matched_text, order)
            )
    return outcomes


def book_timing(pdf: Path, quotes: list[Quote]) -> dict[str, float]:
    started = time.perf_counter()
    index = build_index(pdf)
    build_s = time.perf_counter() - started
    for quote in quotes:  # warm-up: first fuzzy search builds the per-process gram table
        locate(index, quote.text)
    started = time.perf_counter()
    for quote in quotes:
        locate(index, quote.text)
    warm_ms = (time.perf_counter() - started) * 1000 / max(1, len(quotes))
    return {"pages": index.page_count, "index_build_s": build_s, "warm_ms_per_quote": warm_ms}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("pdf_dir", nargs="?", type=Path, default=DEFAULT_PDFS)
    parser.add_argument("--per-kind", type=int, default=25, help="quotes per kind per document")
    parser.add_argument("--negatives", type=int, default=30, help="negative quotes per document")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--only", default="", help="substring filter on file names")
    parser.add_argument(
        "--page-hint", action="store_true", help="pass the true pages +-1 (as the service does)"
    )
    parser.add_argument("--no-generated", action="store_true", help="only the PDFs in PDF_DIR")
    parser.add_argument(
        "--then-page-hint",
        action="store_true",
        help="then report the same quotes with --page-hint --no-baseline (indexes built once)",
    )
    parser.add_argument(
        "--misses",
        metavar="KINDS",
        default="",
        help='print every non-hit of these kinds (comma-separated, or "all")',
    )
    args = parser.parse_args()
    # Each run: (page hint, baseline). A second one reuses the corpus and the indexes.
    runs = [(args.page_hint, not args.no_baseline)]
    if args.then_page_hint:
        runs.append((True, False))

    workdir = tempfile.TemporaryDirectory(prefix="locate_eval-")
    made = {} if args.no_generated else generated(Path(workdir.name), args.per_kind, args.seed)
    pdfs = sorted(p for p in args.pdf_dir.glob("*.pdf") if args.only in p.name)
    pdfs += sorted(p for p in Path(workdir.name).glob("*.pdf") if args.only in p.name)
    words_by_doc, quotes_by_doc = corpus(pdfs, made, args.per_kind, args.seed, args.negatives)
    outcomes: list[list[Outcome]] = [[] for _ in runs]
    build: dict[str, float] = {}
    for pdf in pdfs:
        if not words_by_doc[pdf.name]:
            status = locate(build_index(pdf), "any quote at all").status
            print(f"{pdf.name}: no text layer per pdftotext; locate says {status}")
            continue
        started = time.perf_counter()
        index = build_index(pdf)
        build[pdf.name] = time.perf_counter() - started
        for run, (hint, with_baseline) in enumerate(runs):
            started = time.perf_counter()
            doc_outcomes = run_doc(
                pdf, index, quotes_by_doc[pdf.name], words_by_doc[pdf.name], with_baseline, hint
            )
            outcomes[run].extend(doc_outcomes)
            elapsed = time.perf_counter() - started + (build[pdf.name] if run == 0 else 0)
            print(f"{pdf.name}: {len(doc_outcomes)} quotes in {elapsed:.1f}s", flush=True)
    book_pdf = args.pdf_dir / BOOK
    book = book_timing(book_pdf, quotes_by_doc[BOOK]) if BOOK in quotes_by_doc else None
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for run, (hint, with_baseline) in enumerate(runs):
        if run:
            print("--- with the chunk's pages as a hint, as the service passes them")
        run_args = argparse.Namespace(**{**vars(args), "page_hint": hint})
        run_args.no_baseline = not with_baseline
        result = report(outcomes[run], build, book, run_args, BOOK)
        if args.misses:
            print_misses(result["failures"], args.misses)
        out = RESULTS / f"locate_eval-{stamp}-seed{args.seed}{'-hint' if hint else ''}.json"
        out.write_text(json.dumps(result, ensure_ascii=False, indent=1))
        print(f"\nwrote {out}")
    workdir.cleanup()


if __name__ == "__main__":
    main()
