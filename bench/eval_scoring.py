"""Judging and reporting for bench/locate_eval.py.

A quote is a *hit* when at least 80% of its ground-truth words have their centre inside a
returned rectangle on the right page; *wrong place* when it was found but fewer than half of
the words under the returned rectangles are ground-truth words; negatives that come back
"found" are *false positives*.
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from eval_quotes import Quote, Word

from app.alignment.locate import LocateResult


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


def result_rects(result: LocateResult) -> list[tuple[int, float, float, float, float]]:
    if result.status != "found":
        return []
    return [(r.page, r.x0, r.y0, r.x1, r.y1) for r in result.rects]


@dataclass
class Outcome:
    quote: Quote
    verdict: str
    base_verdict: str
    ms: float
    score: float
    matched: str
    # For a non-hit: where the quote's skeleton is contiguous in PyMuPDF's text ("drawing x1",
    # "reading x2", "neither"). "neither" is a passage poppler reads in an order PyMuPDF's
    # drawing order and the column reading both break (table labels read down, then a header).
    order: str = ""


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
    book_name: str,
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
        print(f"book {book_name}: {book}")
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
            "order": o.order,
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


def print_misses(failures: list[dict[str, Any]], kinds: str) -> None:
    """Every non-hit of the ``kinds`` (comma-separated; "all" for every kind), wrong places
    first: the quote, its true pages, and what was returned."""
    chosen = [f for f in failures if kinds == "all" or f["kind"] in kinds.split(",")]
    order = {"wrong_place": 0, "false_positive": 1, "partial": 2, "miss": 3}
    chosen.sort(key=lambda f: (order.get(f["verdict"], 9), f["kind"], f["doc"]))
    print(f"\nNon-hits ({kinds}): {len(chosen)}")
    orders = Counter(f.get("order", "").split(" ")[0] for f in chosen)
    print(f"    quote's text contiguous in: {dict(sorted(orders.items()))}")
    for f in chosen:
        how = f"/{f['perturbation']}" if f["perturbation"] else ""
        where = f" (text in {f['order']})" if f.get("order") else ""
        print(f"[{f['verdict']}] {f['kind']}{how} {f['doc']} pages {f['truth_pages']}{where}")
        print(f"    quote:    {f['quote'][:240]!r}")
        if f["matched"]:
            print(f"    returned: {f['matched'][:240]!r} (score {f['score']})")
