"""Evaluate app.alignment.locate against ground truth from a different extractor.

Quotes are sentences taken from poppler's ``pdftotext -bbox-layout -cropbox`` output (its
word boxes are the ground truth), perturbed the way LLMs misquote (clean; lightly edited:
dropped word, curly quotes, case change, changed word; elided "first ... last"), plus negative
quotes taken from other documents. Every quote is searched in the whole document (no page
hint). PyMuPDF's ``page.search_for`` is measured in the same run as the baseline.

A quote is a *hit* when at least 80% of its ground-truth words have their centre inside a
returned rectangle on the right page; *wrong place* when it was found but fewer than half of
the words under the returned rectangles are ground-truth words; negatives that come back
"found" are *false positives*.

    .venv/bin/python bench/locate_eval.py [PDF_DIR] [--per-kind N] [--seed S] [--no-baseline]
"""

from __future__ import annotations

import argparse
import html
import json
import random
import re
import statistics
import subprocess
import time
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pymupdf

from app.alignment.index import build_index
from app.alignment.locate import LocateResult, locate
from app.alignment.text import is_cjk, normalize_text

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PDFS = ROOT.parent / "shared" / "pdfs"
RESULTS = ROOT / "bench" / "results"
BOOK = "pdfjs_freeculture.pdf"
KINDS = ("clean", "edited", "elided")

_PAGE = re.compile(r'<page width="([\d.]+)" height="([\d.]+)"')
_WORD = re.compile(
    r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</word>'
)
_SENTENCE_END = re.compile(r"[.!?;\u3002\uff01\uff1f\uff1b][\"'\u201d\u2019)\]\u300d]*$")


@dataclass(frozen=True)
class Word:
    page: int
    text: str
    box: tuple[float, float, float, float]
    line: int  # global line number
    line_end: bool = False
    flow: int = 0  # global pdftotext flow number
    furniture: bool = False  # running header/footer or page number


@dataclass
class Layout:
    words: list[Word]
    lines: dict[int, tuple[int, tuple[float, float, float, float]]]  # line -> (page, box)
    flow_top: dict[int, float]  # flow -> y of its first line
    flow_bottom: dict[int, float]
    heights: dict[int, float]  # page -> height
    raw_skeleton: str  # content-stream order text (pdftotext -raw), for ambiguity checks


@dataclass
class Quote:
    doc: str
    kind: str  # clean | edited | elided | negative
    text: str
    words: list[Word] = field(default_factory=list)  # ground truth; empty for negatives
    perturbation: str = ""


# --------------------------------------------------------------------------- ground truth


def _split_cjk(word: Word) -> list[Word]:
    """pdftotext keeps a CJK run as one "word"; quotes start and end mid-run, so split it."""
    if not any(is_cjk(c) for c in word.text):
        return [word]
    x0, y0, x1, y1 = word.box
    step = (x1 - x0) / len(word.text)
    return [
        replace(word, text=c, box=(x0 + i * step, y0, x0 + (i + 1) * step, y1))
        for i, c in enumerate(word.text)
    ]


def _pdftotext(pdf: Path, *options: str) -> str:
    command = ["pdftotext", *options, "-cropbox", str(pdf), "-"]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def _floats(raw: str) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = (float(v) for v in re.findall(r'="([\d.]+)"', raw)[:4])
    return x0, y0, x1, y1


def poppler_layout(pdf: Path) -> Layout:
    words: list[Word] = []
    layout = Layout(words, {}, {}, {}, {}, normalize_text(_pdftotext(pdf, "-raw")))
    page = line = flow = 0
    for raw in _pdftotext(pdf, "-bbox-layout").splitlines():
        if match := _PAGE.search(raw):
            page += 1
            layout.heights[page] = float(match.group(2))
        elif "<flow>" in raw:
            flow += 1
        elif "<line " in raw:
            line += 1
            box = _floats(raw)
            layout.lines[line] = (page, box)
            layout.flow_top.setdefault(flow, box[1])
            layout.flow_bottom[flow] = box[3]
            if words:
                words[-1] = replace(words[-1], line_end=True)
        elif match := _WORD.search(raw):
            box = tuple(float(v) for v in match.groups()[:4])
            word = Word(page, html.unescape(match.group(5)), box, line, flow=flow)  # type: ignore[arg-type]
            words.extend(_split_cjk(word))
    _mark_furniture(layout)
    return layout


def _mark_furniture(layout: Layout) -> None:
    """Running headers/footers and page numbers: lines in the top/bottom tenth of the page
    whose text, digits aside, recurs on three or more pages (or is only digits)."""
    text: dict[int, list[str]] = defaultdict(list)
    for word in layout.words:
        text[word.line].append(word.text)
    keys = {line: re.sub(r"\d", "", normalize_text(" ".join(t))) for line, t in text.items()}
    pages_with: dict[str, set[int]] = defaultdict(set)
    for line, key in keys.items():
        pages_with[key].add(layout.lines[line][0])
    furniture = set()
    for line, key in keys.items():
        page, (_, y0, _, y1) = layout.lines[line]
        height = layout.heights[page]
        edge = y1 < 0.1 * height or y0 > 0.9 * height
        if edge and (not key or len(pages_with[key]) >= 3):
            furniture.add(line)
    layout.words[:] = [replace(w, furniture=w.line in furniture) for w in layout.words]


def _flow_continues(layout: Layout, prev: Word, word: Word) -> bool:
    """May a sentence run from ``prev``'s line into ``word``'s line?

    Yes on the same line, down the same column, back up to the next column, or across pages;
    no sideways into the next cell of a table row (pdftotext's flows and even its lines jump
    between cells there), where the "sentence" would mix cells.
    """
    if prev.line == word.line or prev.page != word.page:
        return True
    _, (a_x0, a_y0, a_x1, a_y1) = layout.lines[prev.line]
    _, (b_x0, b_y0, b_x1, _) = layout.lines[word.line]
    below = b_y0 >= (a_y0 + a_y1) / 2  # OCR layers overlap consecutive lines a little
    if below and min(a_x1, b_x1) > max(a_x0, b_x0):
        return True
    if abs(b_y0 - a_y0) < (a_y1 - a_y0) / 2 and b_x0 >= a_x1 - 5:
        return True  # further along the same row
    if b_x0 < a_x1 - 5 or b_y0 >= a_y0:
        return False
    top, bottom = layout.flow_top[prev.flow], layout.flow_bottom[prev.flow]
    return b_y0 <= top - 20 or bottom - top > 0.4 * layout.heights[word.page]


def join_words(words: list[Word]) -> str:
    """Text as a reader would quote it: CJK unspaced, line-end hyphens joined, NFKC glyphs."""
    parts: list[str] = []
    for i, word in enumerate(words):
        text = word.text
        if parts:
            prev = words[i - 1]
            hyphen = prev.line_end and parts[-1].endswith("-") and text[:1].islower()
            if hyphen:
                parts[-1] = parts[-1][:-1]
            elif not (is_cjk(prev.text[-1]) or is_cjk(text[0])):
                parts.append(" ")
        parts.append(text)
    return unicodedata.normalize("NFKC", "".join(parts))


def sentences(layout: Layout, rng: random.Random) -> list[list[Word]]:
    found: list[list[Word]] = []
    current: list[Word] = []
    broken = False  # the current run did not start at a sentence start
    for word in layout.words:
        if word.furniture:
            continue
        if current and not _flow_continues(layout, current[-1], word):
            current, broken = [], True
        current.append(word)
        if not _SENTENCE_END.search(word.text):
            continue
        if not broken:
            _keep_sentence(current, rng, found)
        current, broken = [], False
    return found


def windows(layout: Layout, rng: random.Random, count: int) -> list[list[Word]]:
    """Random runs of consecutive words (sentence fragments), for documents with few whole
    sentences (tables, transcripts, short minutes)."""
    runs: list[list[Word]] = [[]]
    for word in layout.words:
        if word.furniture:
            continue
        if runs[-1] and not _flow_continues(layout, runs[-1][-1], word):
            runs.append([])
        runs[-1].append(word)
    found: list[list[Word]] = []
    for _ in range(count * 20):
        if len(found) >= count:
            break
        run = rng.choice(runs)
        cjk = bool(run) and sum(is_cjk(w.text[0]) for w in run) > len(run) / 2
        low, high = (15, 60) if cjk else (6, 30)
        if len(run) < low:
            continue
        size = rng.randint(low, min(high, len(run)))
        start = rng.randint(0, len(run) - size)
        _keep_sentence(run[start : start + size], rng, found)
    return found


def _keep_sentence(span: list[Word], rng: random.Random, found: list[list[Word]]) -> None:
    cjk = sum(is_cjk(w.text[0]) for w in span) > len(span) / 2
    low, high = (12, 90) if cjk else (6, 40)
    if len(span) > high:
        span = span[: rng.randint(low, high)]
    substantive = sum(1 for w in span if sum(c.isalpha() for c in w.text) >= 3)
    if len(span) >= low and (cjk or substantive >= 5):
        found.append(span)


# --------------------------------------------------------------------------- perturbations

_CURLY = str.maketrans({"'": "\u2019", '"': "\u201d"})


def perturb(words: list[Word], rng: random.Random, vocabulary: list[str]) -> tuple[str, str]:
    tokens = [w.text for w in words]
    cjk = sum(is_cjk(t[0]) for t in tokens) > len(tokens) / 2
    options = ["drop", "curly", "case", "change"] if not cjk else ["drop", "curly", "change"]
    kind = rng.choice(options)
    text = join_words(words)
    if kind == "curly":
        return f"\u201c{text.translate(_CURLY)}\u201d" if not cjk else f"\u300c{text}\u300d", kind
    if kind == "case":
        return rng.choice([text.lower(), text.upper(), text.capitalize()]), kind
    inner = [i for i in range(1, len(tokens) - 1) if any(c.isalnum() for c in tokens[i])]
    if not inner:
        return text, "none"
    i = rng.choice(inner)
    kept = list(words)
    if kind == "drop":
        del kept[i : i + (2 if cjk else 1)]
    else:
        replacement = rng.choice(vocabulary) if not cjk else "\u4e00"
        kept[i] = Word(words[i].page, replacement, words[i].box, words[i].line)
    return join_words(kept), kind


def elide(words: list[Word], rng: random.Random, unique: Any) -> str | None:
    cjk = sum(is_cjk(w.text[0]) for w in words) > len(words) / 2
    size = rng.randint(6, 10) if cjk else rng.randint(4, 6)
    if len(words) < 3 * size:
        return None
    head, tail = join_words(words[:size]), join_words(words[-size:])
    if not (unique(head) and unique(tail)):
        return None  # "first ... last" would fit more than one passage
    return head + rng.choice([" ... ", " \u2026 ", "\u2026"]) + tail


def make_quotes(doc: str, layout: Layout, per_kind: int, seed: int) -> list[Quote]:
    rng = random.Random(f"{seed}:{doc}")
    words = [w for w in layout.words if not w.furniture]
    skeleton = normalize_text(join_words(layout.words))

    def unique(text: str) -> bool:
        key = normalize_text(text)
        return skeleton.count(key) == 1 and layout.raw_skeleton.count(key) <= 1

    pool = [s for s in sentences(layout, rng) if unique(join_words(s))]
    if len(pool) < 3 * per_kind:
        extra = windows(layout, rng, 3 * per_kind - len(pool))
        pool += [s for s in extra if unique(join_words(s))]
    vocabulary = sorted({w.text for w in words if w.text.isalpha() and len(w.text) > 3}) or ["word"]
    quotes: list[Quote] = []
    for kind in KINDS:
        for sentence in rng.sample(pool, len(pool)):
            if sum(q.kind == kind for q in quotes) >= per_kind:
                break
            if kind == "clean":
                quotes.append(Quote(doc, kind, join_words(sentence), sentence))
            elif kind == "edited":
                text, how = perturb(sentence, rng, vocabulary)
                quotes.append(Quote(doc, kind, text, sentence, how))
            elif (text := elide(sentence, rng, unique)) is not None:
                quotes.append(Quote(doc, kind, text, sentence))
    return quotes


# --------------------------------------------------------------------------- scoring


def _inside(word: Word, rects: list[tuple[int, float, float, float, float]]) -> bool:
    cx = (word.box[0] + word.box[2]) / 2
    cy = (word.box[1] + word.box[3]) / 2
    return any(
        p == word.page and x0 - 1 <= cx <= x1 + 1 and y0 - 1 <= cy <= y1 + 1
        for p, x0, y0, x1, y1 in rects
    )


def judge(
    quote: Quote,
    rects: list[tuple[int, float, float, float, float]],
    by_page: dict[int, list[Word]],
) -> str:
    if not rects:
        return "miss" if quote.kind != "negative" else "ok"
    if quote.kind == "negative":
        return "false_positive"
    covered = sum(_inside(w, rects) for w in quote.words) / len(quote.words)
    truth = {id(w) for w in quote.words}
    pages = {r[0] for r in rects}
    under = [w for p in pages for w in by_page.get(p, []) if _inside(w, rects)]
    precision = sum(id(w) in truth for w in under) / len(under) if under else 0.0
    if covered >= 0.8:
        return "hit"
    return "wrong_place" if precision < 0.5 else "partial"


def baseline(pages: list[Any], quote: str) -> list[tuple[int, float, float, float, float]]:
    for number, (page, textpage) in enumerate(pages, start=1):
        found = page.search_for(quote, textpage=textpage)
        if found:
            return [(number, r.x0, r.y0, r.x1, r.y1) for r in found]
    return []


def _rects(result: LocateResult) -> list[tuple[int, float, float, float, float]]:
    if result.status != "found":
        return []
    return [(r.page, r.x0, r.y0, r.x1, r.y1) for r in result.rects]


# --------------------------------------------------------------------------- running


@dataclass
class Outcome:
    quote: Quote
    verdict: str
    base_verdict: str
    ms: float
    score: float
    matched: str


def negatives(
    quotes_by_doc: dict[str, list[Quote]], skeletons: dict[str, str], count: int, seed: int
) -> None:
    rng = random.Random(f"{seed}:negatives")
    for doc, quotes in sorted(quotes_by_doc.items()):
        others = [
            q
            for d, qs in sorted(quotes_by_doc.items())
            if d != doc
            for q in qs
            if q.kind == "clean"
        ]
        others = [q for q in others if normalize_text(q.text) not in skeletons[doc]]
        for q in rng.sample(others, min(count, len(others))):
            quotes.append(Quote(doc, "negative", q.text, perturbation=f"from {q.doc}"))


def page_hint(quote: Quote, page_count: int) -> tuple[int, int]:
    """The service passes the cited chunk's pages: here the true pages widened by one each
    side (negatives get a window derived from their text, so the run stays deterministic)."""
    if quote.words:
        pages = [w.page for w in quote.words]
        return max(1, min(pages) - 1), min(page_count, max(pages) + 1)
    first = 1 + sum(map(ord, quote.text)) % page_count
    return first, min(page_count, first + 2)


def run_doc(
    pdf: Path, quotes: list[Quote], words: list[Word], with_baseline: bool, hint: bool = False
) -> tuple[list[Outcome], float]:
    started = time.perf_counter()
    index = build_index(pdf)
    build_s = time.perf_counter() - started
    by_page: dict[int, list[Word]] = defaultdict(list)
    for word in words:
        by_page[word.page].append(word)
    outcomes: list[Outcome] = []
    with pymupdf.open(pdf) as doc:
        pages = [(page, page.get_textpage()) for page in doc] if with_baseline else []
        for quote in quotes:
            t0 = time.perf_counter()
            pages_range = page_hint(quote, index.page_count) if hint else None
            result = locate(index, quote.text, pages_range)
            ms = (time.perf_counter() - t0) * 1000
            base = judge(quote, baseline(pages, quote.text), by_page) if with_baseline else "n/a"
            verdict = judge(quote, _rects(result), by_page)
            outcomes.append(Outcome(quote, verdict, base, ms, result.score, result.matched_text))
    return outcomes, build_s


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


def rates(outcomes: list[Outcome], attr: str = "verdict") -> dict[str, Any]:
    positives = [o for o in outcomes if o.quote.kind != "negative"]
    negs = [o for o in outcomes if o.quote.kind == "negative"]

    def share(items: list[Outcome], verdict: str) -> float | None:
        return sum(getattr(o, attr) == verdict for o in items) / len(items) if items else None

    return {
        "n": len(positives),
        "hit": share(positives, "hit"),
        "wrong_place": share(positives, "wrong_place"),
        "partial": share(positives, "partial"),
        "n_neg": len(negs),
        "false_positive": share(negs, "false_positive"),
        "ms_per_quote": statistics.fmean(o.ms for o in outcomes)
        if outcomes and attr == "verdict"
        else None,
    }


def _fmt(value: Any) -> str:
    if value is None:
        return "   -  "
    return f"{value:6.3f}" if isinstance(value, float) else f"{value:6d}"


def print_table(title: str, rows: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> None:
    print(f"\n{title}")
    heads = ("n", "hit", "wrong", "part", "nneg", "FP", "ms")
    print(f"{'':48} " + " ".join(f"{h:>6}" for h in heads) + " |  b.hit b.wrng   b.FP")
    for name, (ours, base) in rows.items():
        cols = [
            ours[k]
            for k in (
                "n",
                "hit",
                "wrong_place",
                "partial",
                "n_neg",
                "false_positive",
                "ms_per_quote",
            )
        ]
        bcols = [base[k] for k in ("hit", "wrong_place", "false_positive")]
        print(
            f"{name[:48]:48} "
            + " ".join(_fmt(c) for c in cols)
            + " | "
            + " ".join(_fmt(c) for c in bcols)
        )


def report(
    outcomes: list[Outcome],
    build: dict[str, float],
    book: dict[str, float] | None,
    args: argparse.Namespace,
) -> dict[str, Any]:
    by_doc: dict[str, list[Outcome]] = defaultdict(list)
    by_kind: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_doc[o.quote.doc].append(o)
        by_kind[o.quote.kind].append(o)
    doc_rows = {d: (rates(os), rates(os, "base_verdict")) for d, os in sorted(by_doc.items())}
    kind_rows = {k: (rates(os), rates(os, "base_verdict")) for k, os in sorted(by_kind.items())}
    overall = {"overall": (rates(outcomes), rates(outcomes, "base_verdict"))}
    print_table("Per document (ours | baseline page.search_for)", doc_rows)
    print_table("Per kind", kind_rows)
    print_table("Overall", overall)
    print(f"\nindex build seconds per document: { {d: round(s, 2) for d, s in build.items()} }")
    if book:
        print(f"book {BOOK}: {book}")
    failures = [
        {
            "doc": o.quote.doc,
            "kind": o.quote.kind,
            "perturbation": o.quote.perturbation,
            "verdict": o.verdict,
            "score": o.score,
            "quote": o.quote.text,
            "matched": o.matched,
            "truth_pages": sorted({w.page for w in o.quote.words}),
        }
        for o in outcomes
        if o.verdict not in ("hit", "ok")
    ]
    return {
        "args": {k: str(v) for k, v in vars(args).items()},
        "overall": overall["overall"],
        "per_kind": kind_rows,
        "per_doc": doc_rows,
        "index_build_s": build,
        "book": book,
        "failures": failures,
    }


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
    args = parser.parse_args()

    pdfs = sorted(p for p in args.pdf_dir.glob("*.pdf") if args.only in p.name)
    layouts = {p.name: poppler_layout(p) for p in pdfs}
    words_by_doc = {d: layout.words for d, layout in layouts.items()}
    quotes_by_doc = {
        d: make_quotes(d, layout, args.per_kind, args.seed)
        for d, layout in layouts.items()
        if layout.words
    }
    skeletons = {
        d: normalize_text(join_words(ws)) + "|" + layouts[d].raw_skeleton
        for d, ws in words_by_doc.items()
    }
    negatives(quotes_by_doc, skeletons, args.negatives, args.seed)
    outcomes: list[Outcome] = []
    build: dict[str, float] = {}
    for pdf in pdfs:
        if not words_by_doc[pdf.name]:
            status = locate(build_index(pdf), "any quote at all").status
            print(f"{pdf.name}: no text layer per pdftotext; locate says {status}")
            continue
        started = time.perf_counter()
        doc_outcomes, build[pdf.name] = run_doc(
            pdf,
            quotes_by_doc[pdf.name],
            words_by_doc[pdf.name],
            not args.no_baseline,
            args.page_hint,
        )
        outcomes.extend(doc_outcomes)
        print(
            f"{pdf.name}: {len(doc_outcomes)} quotes in {time.perf_counter() - started:.1f}s",
            flush=True,
        )
    book_pdf = args.pdf_dir / BOOK
    book = book_timing(book_pdf, quotes_by_doc[BOOK]) if BOOK in quotes_by_doc else None
    result = report(outcomes, build, book, args)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"locate_eval-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, ensure_ascii=False, indent=1))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
