"""Find a (possibly loosely) quoted passage in an indexed PDF and return its line rectangles.

"Highlighting the wrong sentence is worse than highlighting none": anything below
``MIN_SCORE`` is reported as ``no_match`` rather than guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from app.alignment.geometry import LineRect, line_rects, source_text
from app.alignment.index import DocumentIndex
from app.alignment.matcher import JUMP, Match, exact_all, exact_match, fuzzy
from app.alignment.text import information, split_elision

__all__ = ["MIN_SCORE", "LineRect", "LocateResult", "locate"]

# Calibrated with bench/locate_eval.py (negatives: quotes taken from the other documents).
# Unrelated quotes that share a few words with a document reach a similarity of ~57 at most;
# one changed word in a short sentence can pull a true match down to ~65. Below MIN_SCORE a
# match is therefore only accepted when it also contains an unbroken run of LONG_RUN_INFO
# letters (about five words), which unrelated text does not produce, and no quoted number is
# missing from it.
MIN_SCORE = 80.0
MIN_SCORE_LONG_RUN = 65.0
LONG_RUN_INFO = 24.0
# A second, different place scoring within this margin makes the quote ambiguous: no guess.
AMBIGUITY_MARGIN = 3.0
NUMBER_PENALTY = 10.0
# Quotes shorter than this (Latin-letter equivalents) must match exactly: a fuzzy match of a
# few words is as likely to be a coincidence as the passage.
MIN_FUZZY_INFO = 16.0
# An elided quote's parts must lie within this many skeleton characters of each other.
MAX_ELISION_SPAN = 3 * JUMP
MAX_ELISION_HEADS = 32

_DIGITS = re.compile(r"\d+")

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


Scored = tuple[Match, float]


def _candidates(index: DocumentIndex, quote: str, lo: int, hi: int, limit: int = 3) -> list[Match]:
    hits = exact_all(index.norm.text, quote, lo, hi, limit=limit)
    if hits:
        return [exact_match(pos, quote) for pos in hits]
    if information(quote) < MIN_FUZZY_INFO:
        return []
    return fuzzy(index.norm.text, index.grams, quote, lo, hi)


def _number_penalty(index: DocumentIndex, quote: str, match: Match) -> float:
    """Near-identical sentences that differ only in their figures are common (quarterly tables,
    "Page 3 of 15"); a quoted number missing from the match counts far more than its length."""
    numbers = _DIGITS.findall(quote)
    if not numbers:
        return 0.0
    text = "".join(index.norm.text[start:end] for start, end in match.segments)
    missing = sum(1 for number in numbers if number not in text)
    return min(NUMBER_PENALTY * missing, 3 * NUMBER_PENALTY)


def _scored_single(index: DocumentIndex, quote: str, lo: int, hi: int) -> list[Scored]:
    scored = [
        (match, match.score - _number_penalty(index, quote, match))
        for match in _candidates(index, quote, lo, hi)
    ]
    return sorted(scored, key=lambda item: (-item[1], item[0].start))


def _scored_elided(index: DocumentIndex, parts: list[str], lo: int, hi: int) -> list[Scored]:
    """First part ... last part: the whole passage from the start of one to the end of the other.

    Every placement of the first part is paired with the best placement of the last part after
    it, so a common opening (a running header, a formula) pairs with its own closing part.
    """
    head, tail = parts[0], parts[-1]
    quote = head + tail
    pairs: list[tuple[Match, float, int]] = []
    for first in _candidates(index, head, lo, hi, limit=MAX_ELISION_HEADS):
        window_end = min(hi, first.end + MAX_ELISION_SPAN)
        for last in _candidates(index, tail, first.end, window_end)[:1]:
            longest = max(first.longest, last.longest)
            matched = first.matched + last.matched
            span = Match(((first.start, last.end),), matched, len(quote), longest)
            score = (first.score * len(head) + last.score * len(tail)) / len(quote)
            score -= _number_penalty(index, quote, span)
            pairs.append((span, score, last.start - first.end))
    pairs.sort(key=lambda pair: (-pair[1], pair[2]))
    return [(span, score) for span, score, _ in pairs]


def _same_place(index: DocumentIndex, a: Match, b: Match) -> bool:
    """Overlapping matches, or text the PDF draws twice on the same spot (fake bold)."""
    if any(s1 < e2 and s2 < e1 for s1, e1 in a.segments for s2, e2 in b.segments):
        return True
    rects_a = _rects(index, a)[:1]
    rects_b = _rects(index, b)[:1]
    return bool(rects_a and rects_b) and _intersect(rects_a[0], rects_b[0])


def _intersect(a: LineRect, b: LineRect) -> bool:
    return a.page == b.page and a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def _decide(index: DocumentIndex, quote: str, scored: list[Scored]) -> Scored | None:
    """The best candidate if it is convincing and clearly better than any other place."""
    if not scored:
        return None
    match, score = scored[0]
    run_info = match.longest * information(quote) / max(1, len(quote))
    long_run = run_info >= LONG_RUN_INFO and _number_penalty(index, quote, match) == 0
    threshold = MIN_SCORE_LONG_RUN if long_run else MIN_SCORE
    if score < threshold:
        return None
    for other, other_score in scored[1:]:
        if other_score >= score - AMBIGUITY_MARGIN and not _same_place(index, match, other):
            return None
    return match, score


def _rects(index: DocumentIndex, match: Match) -> list[LineRect]:
    rects: list[LineRect] = []
    for start, end in match.segments:
        rects.extend(line_rects(index, *index.norm.source_span(start, end)))
    return rects


def _result(index: DocumentIndex, match: Match, score: float) -> LocateResult:
    rects = _rects(index, match)
    if not rects:
        return _NO_MATCH
    texts = [source_text(index, *index.norm.source_span(s, e)) for s, e in match.segments]
    return LocateResult("found", round(min(score, 100.0), 1), " ".join(texts), tuple(rects))


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
        scored = _scored_single(index, parts[0], lo, hi)
    else:
        scored = _scored_elided(index, parts, lo, hi)
    found = _decide(index, "".join(parts), scored)
    if found is None:
        return _NO_MATCH
    return _result(index, *found)
