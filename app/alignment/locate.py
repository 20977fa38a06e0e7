"""Find a (possibly loosely) quoted passage in an indexed PDF and return its line rectangles.

"Highlighting the wrong sentence is worse than highlighting none": anything below
``MIN_SCORE`` is reported as ``no_match`` rather than guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.alignment.geometry import LineRect, line_rects, source_text
from app.alignment.grams import gram_table
from app.alignment.index import DocumentIndex
from app.alignment.matcher import JUMP, Match, exact_all, fuzzy
from app.alignment.text import information, split_elision

__all__ = ["MIN_SCORE", "LineRect", "LocateResult", "locate"]

# Calibrated with bench/locate_eval.py: lightly edited quotes score >= ~85, quotes from other
# documents that happen to share a few words with this one score <= ~70.
MIN_SCORE = 80.0
# Quotes shorter than this (Latin-letter equivalents) must match exactly: a fuzzy match of a
# few words is as likely to be a coincidence as the passage.
MIN_FUZZY_INFO = 16.0
# An elided quote's parts must lie within this many skeleton characters of each other.
MAX_ELISION_SPAN = 3 * JUMP

Status = Literal["found", "no_match", "no_text_layer"]


@dataclass(frozen=True)
class LocateResult:
    status: Status
    score: float
    matched_text: str
    rects: tuple[LineRect, ...]

    @property
    def page(self) -> int | None:
        return self.rects[0].page if self.rects else None


_NO_MATCH = LocateResult("no_match", 0.0, "", ())
_NO_TEXT = LocateResult("no_text_layer", 0.0, "", ())


def _page_bounds(index: DocumentIndex, pages: tuple[int, int] | None) -> tuple[int, int]:
    if pages is None:
        return 1, index.page_count
    first, last = sorted(pages)
    return max(1, min(first, index.page_count)), max(1, min(last, index.page_count))


def _find(index: DocumentIndex, quote: str, lo: int, hi: int) -> Match | None:
    text = index.norm.text
    hits = exact_all(text, quote, lo, hi, limit=1)
    if hits:
        return _exact(hits[0], quote)
    if information(quote) < MIN_FUZZY_INFO:
        return None
    return fuzzy(text, gram_table(index), quote, lo, hi)


def _find_elided(
    index: DocumentIndex, parts: list[str], lo: int, hi: int
) -> tuple[Match, float] | None:
    """First part ... last part: the whole passage from the start of one to the end of the other.

    Every exact placement of the first part is tried, so a short, common opening still pairs
    with the closing part that follows it most closely.
    """
    head, tail = parts[0], parts[-1]
    text = index.norm.text
    starts = [_exact(p, head) for p in exact_all(text, head, lo, hi)]
    if not starts:
        found = _find(index, head, lo, hi)
        starts = [found] if found is not None else []
    best: tuple[Match, float] | None = None
    for first in starts:
        last = _find(index, tail, first.end, min(hi, first.end + MAX_ELISION_SPAN))
        if last is None:
            continue
        score = (first.score * len(head) + last.score * len(tail)) / (len(head) + len(tail))
        if best is None or score > best[1]:
            matched = first.matched + last.matched
            best = (Match(((first.start, last.end),), matched, len(head) + len(tail)), score)
    return best


def _exact(pos: int, quote: str) -> Match:
    return Match(((pos, pos + len(quote)),), len(quote), len(quote))


def _result(index: DocumentIndex, match: Match, score: float) -> LocateResult:
    rects: list[LineRect] = []
    texts: list[str] = []
    for start, end in match.segments:
        src_start, src_end = index.norm.source_span(start, end)
        rects.extend(line_rects(index, src_start, src_end))
        texts.append(source_text(index, src_start, src_end))
    if not rects:
        return _NO_MATCH
    return LocateResult("found", round(score, 1), " ".join(texts), tuple(rects))


def locate(index: DocumentIndex, quote: str, pages: tuple[int, int] | None = None) -> LocateResult:
    if index.page_count == 0:
        return _NO_TEXT
    first, last = _page_bounds(index, pages)
    if not any(index.has_text(page) for page in range(first, last + 1)):
        return _NO_TEXT
    lo, hi = index.norm_range(first, last)
    parts = split_elision(quote)
    if not parts:
        return _NO_MATCH
    if len(parts) == 1:
        match = _find(index, parts[0], lo, hi)
        found = (match, match.score) if match is not None else None
    else:
        found = _find_elided(index, parts, lo, hi)
    if found is None or found[1] < MIN_SCORE:
        return _NO_MATCH
    return _result(index, *found)
