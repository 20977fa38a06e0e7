"""Evaluate the locator on scanned pages: image-only copies of text PDFs, read by Tesseract.

For every text PDF in PDF_DIR (those without a text layer per pdftotext are skipped) and the
generated ones (gen_irs.py, gen_cells.py; alone when PDF_DIR holds no PDFs), the quotes of
bench/locate_eval.py (same seed and ``--per-kind``: clean, edited, elided, cjk_compat,
repeated, columns, table, and negatives from other documents) are kept when they lie on the
chosen pages: ``--pages-per-doc`` (default 1, see Runtime) of the pages holding quotes, drawn
with weight by how many they hold (the 352-page book like any other). Each document is copied
with those pages as images and every other page blank, with the original page geometry (media
box, crop box, /Rotate, page numbers), in these variants (``--variants``):

* ``300``: a clean 300 dpi grey scan (PNG);
* ``200``: a clean 200 dpi grey scan;
* ``degraded``: 300 dpi, tilted 0.5-1 degree about the page centre, speckled, JPEG quality 30.

The copies are read as the service reads them (``ocr.pages_to_ocr`` in "auto" mode must pick
exactly the chosen pages; ``ocr_page`` with ``--ocr-dpi``, default 300 as the service's
default, whatever the scan's resolution) and indexed with ``build_index(ocr_pages=...)``.
The ``text`` column is the original text layer of the same pages (the other pages blank too),
so the columns differ only in how the text was read. Judging is locate_eval's
(``eval_scoring.judge``) against the ORIGINAL PDF's poppler word boxes: hit (80% of the words
inside the returned rectangles), wrong place, false positive (a negative found).

Languages per document: ``chi_tra``/``chi_sim`` when CJK is at least a fifth of its text layer
(traditional or simplified by the MANIFEST or the characters), ``fra``/``deu`` when the
MANIFEST says French/German, else ``eng``. Tesseract here has no Korean: the Korean half of
the generated CJK page cannot be read.

Also printed: OCR seconds per page per variant, and how OCR'd words line up with poppler's
(same text, nearest centre: matched share, median signed offset poppler minus OCR, 90th
percentile distance), to catch misplaced or turned boxes; "AUTO PICKED" flags a copy whose
scanned pages ``pages_to_ocr`` did not pick exactly.
The targets (clean 300 dpi hit >= 0.9 Latin script, >= 0.8 Chinese; wrong place <= 0.005) are
printed with the measured values; they are not gates.

Runtime: OCR runs in a pool of ``--jobs`` processes (default 2, as CI has two cores), 5-7 s per
page and variant on an idle core (twice that on a busy machine). Two pages per document in all
three variants (93 pages) took 9 minutes here with other work running, so the default is ONE
page per document (51 pages: 2.6 minutes here, 158 s, with the machine shared);
``--pages-per-doc 2`` doubles the quotes, ``--variants 300`` is the quick look.

    .venv/bin/python bench/ocr_eval.py [PDF_DIR] [--pages-per-doc N] [--only SUBSTRING]
        [--variants 300,200,degraded] [--per-kind N] [--negatives N] [--seed S] [--jobs N]
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import re
import statistics
import tempfile
import time
from collections import defaultdict
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pymupdf
from eval_quotes import Quote, Word, corpus
from eval_scoring import Outcome, _fmt, judge, rates, result_rects
from locate_eval import _locate, generated
from ocr_images import Variant, image_copy, text_copy, tilted

from app.alignment.index import DocumentIndex
from app.core.scripts import is_cjk
from app.pdfs.extract import build_index
from app.pdfs.ocr import OcrOptions, OcrPage, ocr_page, pages_to_ocr

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PDFS = ROOT.parent / "shared" / "pdfs"
RESULTS = ROOT / "bench" / "results"
VARIANTS = {
    "300": Variant(300),
    "200": Variant(200),
    "degraded": Variant(300, degraded=True),
}
TEXT = "text"
NAMES = {TEXT: "text layer", "300": "OCR 300 dpi", "200": "OCR 200 dpi", "degraded": "OCR degraded"}
# Unperturbed quotes: what the "clean" target is measured on (generated documents have no
# "clean" kind, their columns and table cells are quoted verbatim).
CLEAN_KINDS = ("clean", "columns", "table")
TARGETS = {"latin": 0.9, "chinese": 0.8}
MAX_WRONG_PLACE = 0.005
# Characters written differently in traditional and simplified Chinese (pairs in order).
_TRADITIONAL = (
    "會議審條國報這個們說對時發還後經實現問題為與關於從來長門開區書車東聽讓樣機無兩產華應當業條"
)
_SIMPLIFIED = (
    "会议审条国报这个们说对时发还后经实现问题为与关于从来长门开区书车东听让样机无两产华应当业条"
)


@dataclass
class Doc:
    name: str
    path: Path
    words: list[Word]
    quotes: list[Quote]  # positives on the chosen pages, then negatives
    languages: str
    pages: list[int] = field(default_factory=list)

    @property
    def chinese(self) -> bool:
        return self.languages.startswith("chi")


@dataclass
class Run:
    """One document in one variant: its verdicts and what OCR did."""

    verdicts: list[str]
    ocr_seconds: list[float] = field(default_factory=list)
    auto_pages: list[int] = field(default_factory=list)  # what pages_to_ocr picked
    alignment: tuple[float, float, float, float] | None = None  # share, dx, dy, p90


# --------------------------------------------------------------------------- documents


def manifest(pdf_dir: Path) -> dict[str, str]:
    """File name -> its MANIFEST features (empty without a MANIFEST)."""
    path = pdf_dir / "MANIFEST.tsv"
    if not path.is_file():
        return {}
    with path.open(newline="") as handle:
        return {row["file"]: row["features"] for row in csv.DictReader(handle, delimiter="\t")}


def languages(words: list[Word], features: str) -> str:
    """Tesseract's -l for a document: by the script of its text layer, then the MANIFEST."""
    chars = [c for w in words for c in w.text if not c.isspace()]
    cjk = [c for c in chars if is_cjk(c)]
    if chars and len(cjk) >= 0.2 * len(chars):
        if "traditional" in features.lower():
            return "chi_tra"
        if "simplified" in features.lower():
            return "chi_sim"
        traditional = set(_TRADITIONAL) - set(_SIMPLIFIED)
        simplified = set(_SIMPLIFIED) - set(_TRADITIONAL)
        trad = sum(c in traditional for c in cjk)
        return "chi_tra" if trad >= sum(c in simplified for c in cjk) else "chi_sim"
    lowered = features.lower()
    if "french" in lowered:
        return "fra"
    if "german" in lowered:
        return "deu"
    return "eng"


def choose_pages(quotes: list[Quote], count: int, seed: int, doc: str) -> list[int]:
    """``count`` pages among those holding whole quotes, drawn with weight by how many."""
    weight: dict[int, int] = defaultdict(int)
    for quote in quotes:
        pages = {w.page for w in quote.words}
        if len(pages) == 1:
            weight[pages.pop()] += 1
    rng = random.Random(f"{seed}:ocr:{doc}")
    chosen: list[int] = []
    while weight and len(chosen) < count:
        page = rng.choices(sorted(weight), [weight[p] for p in sorted(weight)])[0]
        chosen.append(page)
        del weight[page]
    return sorted(chosen)


def load(pdf_dir: Path, folder: Path, args: argparse.Namespace) -> list[Doc]:
    """Documents with quotes as locate_eval makes them, cut to the chosen pages."""
    made = generated(folder, args.per_kind, args.seed)
    pdfs = sorted(p for p in pdf_dir.glob("*.pdf") if args.only in p.name)
    pdfs += sorted(p for p in folder.glob("*.pdf") if args.only in p.name)
    names = {p.name for p in pdfs}
    chosen = {name: drawn for name, drawn in made.items() if name in names}
    words_by_doc, quotes_by_doc = corpus(pdfs, chosen, args.per_kind, args.seed, args.negatives)
    features = manifest(pdf_dir)
    docs = []
    for pdf in pdfs:
        if not words_by_doc.get(pdf.name):
            print(f"{pdf.name}: no text layer per pdftotext, skipped")
            continue
        quotes = quotes_by_doc[pdf.name]
        pages = choose_pages(quotes, args.pages_per_doc, args.seed, pdf.name)
        kept = [
            q for q in quotes if q.kind == "negative" or {w.page for w in q.words} <= set(pages)
        ]
        words = words_by_doc[pdf.name]
        lang = languages(words, features.get(pdf.name, ""))
        docs.append(Doc(pdf.name, pdf, words, kept, lang, pages))
    return docs


# --------------------------------------------------------------------------- running


def as_scanned(doc: Doc, tilts: dict[int, tuple[pymupdf.Point, float]]) -> Doc:
    """``doc`` with its words (and its quotes' words, the same objects) moved as the scan's
    tilt moved them, each box keeping its size."""
    moved: dict[int, Word] = {}
    for word in doc.words:
        centre, tilt = tilts.get(word.page, (None, 0.0))
        if centre is None or not tilt:
            continue
        x0, y0, x1, y1 = word.box
        new = tilted(((x0 + x1) / 2, (y0 + y1) / 2), centre, tilt)
        dx, dy = new.x - (x0 + x1) / 2, new.y - (y0 + y1) / 2
        moved[id(word)] = replace(word, box=(x0 + dx, y0 + dy, x1 + dx, y1 + dy))
    if not moved:
        return doc
    quotes = [replace(q, words=[moved.get(id(w), w) for w in q.words]) for q in doc.quotes]
    return replace(doc, words=[moved.get(id(w), w) for w in doc.words], quotes=quotes)


def verdicts(index: DocumentIndex, doc: Doc) -> list[str]:
    by_page: dict[int, list[Word]] = defaultdict(list)
    for word in doc.words:
        by_page[word.page].append(word)
    return [judge(q, result_rects(_locate(index, q, None)), by_page) for q in doc.quotes]


_TOKEN = re.compile(r"\S+")


def _ocr_tokens(page: OcrPage) -> list[tuple[str, float, float]]:
    """OCR'd words (CJK one character each) with their centres, for the alignment check."""
    tokens = []
    for line in page.lines:
        for match in _TOKEN.finditer(line.text):
            pieces = (
                [(k, k + 1) for k in range(match.start(), match.end())]
                if any(is_cjk(c) for c in match.group())
                else [(match.start(), match.end())]
            )
            for start, end in pieces:
                box = line.boxes[4 * start : 4 * end]
                x0, x1 = min(box[0::4]), max(box[2::4])
                y0, y1 = min(box[1::4]), max(box[3::4])
                tokens.append((line.text[start:end], (x0 + x1) / 2, (y0 + y1) / 2))
    return tokens


def script_of(quote: Quote) -> str:
    """ "korean" (mostly Hangul, jamo included), "chinese" (mostly other CJK) or "latin"."""
    letters = [c for c in quote.text if c.isalpha()]
    hangul = sum("\uac00" <= c <= "\ud7af" or "\u1100" <= c <= "\u11ff" for c in letters)
    cjk = sum(is_cjk(c) for c in letters)
    if hangul > len(letters) / 2:
        return "korean"
    return "chinese" if cjk - hangul > len(letters) / 2 else "latin"


def _key(text: str) -> str:
    return "".join(c for c in text.casefold() if c.isalnum())


def alignment(
    ocr: dict[int, OcrPage], words: list[Word]
) -> tuple[float, float, float, float] | None:
    """OCR'd words matched to poppler's words of the same text on the same page (nearest
    centre, within 20 pt): the matched share, median signed offset x and y, 90th percentile
    distance (points). Latin words of 4+ characters and single CJK characters only."""
    truth: dict[tuple[int, str], list[tuple[float, float]]] = defaultdict(list)
    for word in words:
        x0, y0, x1, y1 = word.box
        truth[(word.page, _key(word.text))].append(((x0 + x1) / 2, (y0 + y1) / 2))
    tried = 0
    offsets: list[tuple[float, float]] = []
    for number, page in ocr.items():
        for text, cx, cy in _ocr_tokens(page):
            key = _key(text)
            if not key or (len(key) < 4 and not is_cjk(key[0])):
                continue
            tried += 1
            near = [(x - cx, y - cy) for x, y in truth.get((number, key), [])]
            best = min(near, key=lambda d: d[0] ** 2 + d[1] ** 2, default=None)
            if best is not None and best[0] ** 2 + best[1] ** 2 <= 400:
                offsets.append(best)
    if not offsets:
        return None
    distances = sorted((dx * dx + dy * dy) ** 0.5 for dx, dy in offsets)
    return (
        len(offsets) / tried,
        statistics.median(d[0] for d in offsets),
        statistics.median(d[1] for d in offsets),
        distances[int(0.9 * (len(distances) - 1))],
    )


def evaluate(
    docs: list[Doc], variants: list[str], folder: Path, pool: Executor, ocr_dpi: int = 300
) -> dict[str, dict[str, Run]]:
    """variant (``TEXT`` and each of ``variants``) -> document -> its Run."""
    jobs: dict[tuple[str, str], tuple[Path, dict[int, Future[OcrPage]]]] = {}
    runs: dict[str, dict[str, Run]] = defaultdict(dict)
    for doc in docs:  # every copy and OCR job first, so the pool is busy meanwhile
        for name in variants:
            path = folder / f"{name}-{doc.name}"
            tilts = image_copy(doc.path, doc.pages, VARIANTS[name], path, name)
            options = OcrOptions(languages=doc.languages, dpi=ocr_dpi, mode="auto")
            futures = {p: pool.submit(ocr_page, path, p, options) for p in doc.pages}
            jobs[(doc.name, name)] = (path, futures, tilts)
    for doc in docs:
        path = folder / f"{TEXT}-{doc.name}"
        text_copy(doc.path, doc.pages, path)
        runs[TEXT][doc.name] = Run(verdicts(build_index(path), doc))
    for doc in docs:
        for name in variants:
            path, futures, tilts = jobs[(doc.name, name)]
            ocr = {p: future.result() for p, future in futures.items()}
            # A tilted scan moves its words: the ground truth is where they are on the copy.
            seen = as_scanned(doc, tilts)
            run = Run(verdicts(build_index(path, ocr_pages=ocr), seen))
            run.ocr_seconds = [page.seconds for page in ocr.values()]
            run.auto_pages = pages_to_ocr(path, "auto")
            run.alignment = alignment(ocr, seen.words)
            runs[name][doc.name] = run
        print(
            f"{doc.name}: pages {doc.pages}, {doc.languages}, {len(doc.quotes)} quotes", flush=True
        )
    return runs


# --------------------------------------------------------------------------- reporting


def outcomes(docs: list[Doc], runs: dict[str, Run]) -> list[Outcome]:
    return [
        Outcome(q, v, "n/a", 0.0, 0.0, "")
        for doc in docs
        for q, v in zip(doc.quotes, runs[doc.name].verdicts, strict=True)
    ]


def _table(title: str, rows: dict[str, dict[str, dict[str, Any]]], columns: list[str]) -> None:
    print(f"\n{title}")
    head = f"{'':40} {'n':>6} {'nneg':>6}"
    head += "".join(f" | {NAMES.get(c, c)[:20]:^20}" for c in columns)
    print(head)
    print(f"{'':54}" + " | hit    wrong  FP    " * len(columns))
    for name, by_column in rows.items():
        first = by_column[columns[0]]
        line = f"{name[:40]:40} {_fmt(first['n'])} {_fmt(first['n_neg'])}"
        for column in columns:
            r = by_column[column]
            line += " | " + " ".join(_fmt(r[k]) for k in ("hit", "wrong_place", "false_positive"))
        print(line)


def report(
    docs: list[Doc], runs: dict[str, dict[str, Run]], args: argparse.Namespace
) -> dict[str, Any]:
    columns = [TEXT, *args.variants]
    every = {c: outcomes(docs, runs[c]) for c in columns}
    doc_rows = {
        d.name: {c: rates([o for o in every[c] if o.quote.doc == d.name]) for c in columns}
        for d in docs
    }
    kinds = sorted({q.kind for d in docs for q in d.quotes})
    kind_rows = {
        k: {c: rates([o for o in every[c] if o.quote.kind == k]) for c in columns} for k in kinds
    }
    overall = {"overall": {c: rates(every[c]) for c in columns}}
    names = NAMES
    _table("Per document", doc_rows, columns)
    _table("Per kind", kind_rows, columns)
    _table("Overall", overall, columns)

    print("\nOCR per document: languages, pages, seconds per page (mean/max), words aligned with")
    print("poppler's [matched share, median dx/dy pt, p90 distance pt]")
    for doc in docs:
        parts = []
        for c in args.variants:
            run = runs[c][doc.name]
            align = run.alignment
            aligned = (
                f"{align[0]:.2f} {align[1]:+.1f}/{align[2]:+.1f} {align[3]:.1f}"
                if align
                else "none"
            )
            auto = "" if run.auto_pages == doc.pages else f" AUTO PICKED {run.auto_pages}"
            parts.append(
                f"{c}: {statistics.fmean(run.ocr_seconds):.1f}/{max(run.ocr_seconds):.1f}s "
                f"[{aligned}]{auto}"
            )
        print(f"  {doc.name[:40]:40} {doc.languages:8} p{doc.pages}  " + "; ".join(parts))
    print("\nOCR seconds per page:")
    for c in args.variants:
        seconds = [s for run in runs[c].values() for s in run.ocr_seconds]
        print(
            f"  {names[c]:14} mean {statistics.fmean(seconds):.2f}  max {max(seconds):.2f}  "
            f"pages {len(seconds)}"
        )

    print("\nTargets (printed, not gates; clean = kinds " + "/".join(CLEAN_KINDS) + "):")
    summary: dict[str, Any] = {}
    for script, target in TARGETS.items():
        for c in columns:
            clean = [
                o for o in every[c] if o.quote.kind in CLEAN_KINDS and script_of(o.quote) == script
            ]
            summary[f"clean_hit_{script}_{c}"] = rates(clean)["hit"]
            summary[f"clean_n_{script}"] = len(clean)
        measured = summary.get(f"clean_hit_{script}_300")
        verdict = "n/a" if measured is None else ("met" if measured >= target else "NOT MET")
        others = ", ".join(
            f"{names[c]} {_fmt(summary[f'clean_hit_{script}_{c}']).strip()}"
            for c in columns
            if c != "300"
        )
        print(
            f"  clean hit, OCR 300 dpi, {script} script ({summary[f'clean_n_{script}']} quotes) "
            f">= {target}: {_fmt(measured).strip()} ({verdict}; {others})"
        )
    for c in args.variants:
        wrong = overall["overall"][c]["wrong_place"]
        summary[f"wrong_place_{c}"] = wrong
        verdict = "n/a" if wrong is None else ("met" if wrong <= MAX_WRONG_PLACE else "NOT MET")
        measured = _fmt(wrong).strip()
        print(f"  wrong place, {names[c]} (all kinds) <= {MAX_WRONG_PLACE}: {measured} ({verdict})")
    korean = [o for o in every[columns[-1]] if script_of(o.quote) == "korean"]
    if korean:
        print(f"  {len(korean)} Korean quotes count above: no kor traineddata, OCR misses them")
    failures = [
        {
            "variant": c,
            "doc": o.quote.doc,
            "kind": o.quote.kind,
            "verdict": o.verdict,
            "quote": o.quote.text,
            "pages": sorted({w.page for w in o.quote.words}),
        }
        for c in columns
        for o in every[c]
        if o.verdict not in ("hit", "ok")
    ]
    return {
        "args": {k: str(v) for k, v in vars(args).items()},
        "docs": {d.name: {"pages": d.pages, "languages": d.languages} for d in docs},
        "per_doc": doc_rows,
        "per_kind": kind_rows,
        "overall": overall["overall"],
        "targets": summary,
        "ocr_seconds": {c: {d: r.ocr_seconds for d, r in runs[c].items()} for c in args.variants},
        "alignment": {c: {d: r.alignment for d, r in runs[c].items()} for c in args.variants},
        "failures": failures,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("pdf_dir", nargs="?", type=Path, default=DEFAULT_PDFS)
    parser.add_argument("--pages-per-doc", type=int, default=1)
    parser.add_argument("--variants", default="300,200,degraded", help="of 300, 200, degraded")
    parser.add_argument("--per-kind", type=int, default=25, help="as locate_eval's")
    parser.add_argument("--negatives", type=int, default=30, help="negative quotes per document")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--only", default="", help="substring filter on file names")
    parser.add_argument("--jobs", type=int, default=2, help="OCR processes")
    parser.add_argument("--ocr-dpi", type=int, default=300, help="OcrOptions.dpi")
    args = parser.parse_args()
    args.variants = [v for v in args.variants.split(",") if v]
    unknown = set(args.variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; choose from {sorted(VARIANTS)}")

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ocr_eval-") as workdir:
        folder = Path(workdir)
        docs = load(args.pdf_dir, folder, args)
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            runs = evaluate(docs, args.variants, folder, pool, args.ocr_dpi)
    result = report(docs, runs, args)
    print(f"\nwall time {time.perf_counter() - started:.0f} s")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"ocr_eval-{time.strftime('%Y%m%d-%H%M%S')}-seed{args.seed}.json"
    out.write_text(json.dumps(result, ensure_ascii=False, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
