"""Find a (possibly loosely) quoted passage in an indexed PDF and return its line rectangles.

"Highlighting the wrong sentence is worse than highlighting none": anything below
``MIN_SCORE`` is reported as ``no_match`` rather than guessed, and so is a loose match that
reads a table's row across cells the PDF stores cell by cell (``_zigzag``).

Besides the quote as given, two readings of it are tried when the document calls for them:
without the numbers of a line-numbered margin (``margins.py``), and without runs of running
header/footer text copied across a page break (``furniture.py``). The best convincing reading
wins; the numbers or furniture lines it left out are then highlighted where they are printed.

A quote that fits several places equally well is placed by its chunk when the caller passes
one (``placement.py``); without one, or when the chunk does not tell them apart, it is
ambiguous and reported as ``no_match``. Places that differ only in case or punctuation are one
place to the skeleton; a quote printed exactly like one of them goes there.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, replace
from typing import Literal

from app.alignment.additions import with_furniture, with_margin_numbers
from app.alignment.furniture import Removed, strip_furniture
from app.alignment.geometry import LineRect, displayed, line_rects, source_text
from app.alignment.index import CONFIDENT, DocumentIndex
from app.alignment.margins import strip_numbers
from app.alignment.matcher import JUMP, Match, exact_all, exact_match, fuzzy
from app.alignment.placement import ChunkHint, choose, verbatim
from app.alignment.readings import Readings
from app.alignment.text import information, split_elision

__all__ = ["MIN_SCORE", "ChunkHint", "LineRect", "LocateResult", "locate"]

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
# The column reading is searched when the drawing order gives no match scoring this much, and
# wins when it scores this much more.
READING_BELOW = 95.0
READING_MARGIN = 3.0
# More exact repetitions than this in the pages searched are not told apart even by a chunk.
MAX_REPEATS = 64
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


Scored = tuple[Match, float]


def _candidates(index: DocumentIndex, quote: str, lo: int, hi: int, limit: int = 3) -> list[Match]:
    hits = exact_all(index.norm.text, quote, lo, hi, limit=limit)
    if len(hits) == limit == MAX_REPEATS:
        return []  # perhaps more than listed, so no telling them apart: ambiguous
    if hits:
        return [exact_match(pos, quote) for pos in hits]
    if information(quote) < MIN_FUZZY_INFO:
        return []
    return fuzzy(index.norm.text, index.grams, quote, lo, hi, pages=index.norm_page_start)


def _number_penalty(index: DocumentIndex, quote: str, match: Match) -> float:
    """Near-identical sentences that differ only in their figures are common (quarterly tables,
    "Page 3 of 15"); a quoted number missing from the match counts far more than its length."""
    numbers = _DIGITS.findall(quote)
    if not numbers:
        return 0.0
    text = "".join(index.norm.text[start:end] for start, end in match.segments)
    missing = sum(1 for number in numbers if number not in text)
    return min(NUMBER_PENALTY * missing, 3 * NUMBER_PENALTY)


def _scored_single(
    index: DocumentIndex, quote: str, lo: int, hi: int, limit: int = 3
) -> list[Scored]:
    scored = [
        (match, match.score - _number_penalty(index, quote, match))
        for match in _candidates(index, quote, lo, hi, limit)
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
    rects_a = _first_rect(index, a)
    rects_b = _first_rect(index, b)
    return bool(rects_a and rects_b) and _intersect(rects_a[0], rects_b[0])


def _first_rect(index: DocumentIndex, match: Match) -> list[LineRect]:
    start, end = _source_spans(index, match)[0]
    line_end = index.chars.find("\n", start, end)
    return line_rects(index, start, end if line_end < 0 else line_end)[:1]


def _intersect(a: LineRect, b: LineRect) -> bool:
    return a.page == b.page and a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def _convincing(index: DocumentIndex, quote: str, match: Match, score: float) -> bool:
    run_info = match.longest * information(quote) / max(1, len(quote))
    long_run = run_info >= LONG_RUN_INFO and _number_penalty(index, quote, match) == 0
    return score >= (MIN_SCORE_LONG_RUN if long_run else MIN_SCORE)


@dataclass(frozen=True)
class _Search:
    lo: int
    hi: int
    chunk: ChunkHint | None = None
    verbatim: str = ""  # the quote as given, when the parts searched are all of it


def _decide(index: DocumentIndex, quote: str, scored: list[Scored], at: _Search) -> Scored | None:
    """The best candidate if it is convincing and clearly better than any other place; among
    equally good places, the one the chunk puts the quote at."""
    if not scored:
        return None
    match, score = scored[0]
    if not _convincing(index, quote, match, score):
        return None
    rivals = [
        (other, other_score)
        for other, other_score in scored[1:]
        if other_score >= score - AMBIGUITY_MARGIN
        and not _same_place(index, match, other)
        and not _no_better_explanation(match, other)
    ]
    if not rivals:
        return match, score
    tied = [(match, score), *rivals]
    # The quote's own wording first: a chunk's context is often the same around rows of a table.
    chosen = verbatim(index, at.verbatim, [m for m, _ in tied]) if at.verbatim else None
    if chosen is None and at.chunk is not None:
        chosen = choose(index, at.chunk, quote, [m for m, _ in tied], at.lo, at.hi)
    if chosen is None:
        return None
    chosen_score = next(s for m, s in tied if m is chosen)
    return (chosen, chosen_score) if _convincing(index, quote, chosen, chosen_score) else None


def _no_better_explanation(best: Match, other: Match) -> bool:
    """``other`` stitches the quote from more pieces than ``best`` yet accounts for no more of
    it: a passage repeated elsewhere (boilerplate, lorem ipsum) lets the rest of a quote be
    "found" again far away, but the jump explains nothing the continuous match does not."""
    return len(other.segments) > len(best.segments) and other.matched <= best.matched


# Sentence ends and closing quotes/brackets: the skeleton has no punctuation, so a match stops at
# the last letter; a reader expects "... the rest." to be highlighted with its full stop.
_CLOSING = frozenset(".!?…:;\"')]}»”’」』）】。！？")


def _over_closing(index: DocumentIndex, end: int) -> int:
    """Extend a source end over punctuation that follows it on the same line."""
    while (
        end < len(index.chars)
        and index.chars[end] in _CLOSING
        and index.lines[end] == index.lines[end - 1]
    ):
        end += 1
    return end


def _source_spans(
    index: DocumentIndex, match: Match, closing: bool = False
) -> list[tuple[int, int]]:
    """Source ranges of the match, without the margin line numbers it reads across; with
    ``closing``, the last range takes in the punctuation that ends the sentence."""
    spans: list[tuple[int, int]] = []
    numbers = index.margin_numbers
    for norm_start, norm_end in match.segments:
        for start, end in index.norm.source_runs(norm_start, norm_end):
            first = bisect_right(numbers, start, key=lambda number: number.start)
            last = bisect_left(numbers, end, key=lambda number: number.end)
            for number in numbers[first:last]:
                if start < number.start and number.end < end:
                    spans.append((start, number.start))
                    start = number.end
            spans.append((start, end))
    if closing and spans:
        start, end = spans[-1]
        spans[-1] = (start, _over_closing(index, end))
    return spans


def _rects(index: DocumentIndex, spans: list[tuple[int, int]]) -> list[LineRect]:
    return [rect for start, end in spans for rect in line_rects(index, start, end)]


def _result(index: DocumentIndex, match: Match, score: float, closing: bool) -> LocateResult:
    spans = _source_spans(index, match, closing)
    rects = _rects(index, spans)
    if not rects:
        return _NO_MATCH
    texts = [source_text(index, start, end) for start, end in spans]
    text = " ".join(part for part in texts if part)
    # On a page read by OCR, a match is only as sure as the reading under it. Not part of the
    # decision: Tesseract is unsure of many words it read right (60-80 on a noisy scan), and
    # scaling candidates by it refused three in four true matches there for no fewer wrong ones.
    score *= min(1.0, index.confidence_of(spans) / CONFIDENT)
    return LocateResult("found", round(min(score, 100.0), 1), text, tuple(rects))


def _find(index: DocumentIndex, parts: list[str], at: _Search) -> tuple[Scored | None, float]:
    """The decided placement, if any, and the best score seen (refused or not)."""
    if not parts:
        return None, 0.0
    if len(parts) == 1:
        # With a chunk or the quote's wording to tell them apart, every exact repetition must
        # be a candidate.
        limit = MAX_REPEATS if at.chunk is not None or at.verbatim else 3
        scored = _scored_single(index, parts[0], at.lo, at.hi, limit)
    else:
        scored = _scored_elided(index, parts, at.lo, at.hi)
    top = scored[0][1] if scored else 0.0
    if not scored and len(parts) == 1 and index.norm.text.find(parts[0], at.lo, at.hi) >= 0:
        top = 100.0  # too many repetitions to list, yet found: the column reading must not win
    return _decide(index, "".join(parts), scored, at), top


def locate(
    index: DocumentIndex,
    quote: str,
    pages: tuple[int, int] | None = None,
    chunk: ChunkHint | None = None,
) -> LocateResult:
    """Where ``quote`` is on pages ``pages`` (1-based, inclusive; all pages when None), as
    rectangles in the displayed frame of each page (see ``geometry.displayed``). ``chunk``, the
    text the quote was cut from and its offset there, places a quote printed more than once."""
    result = _locate(index, quote, pages, chunk)
    if not any(index.rotation(rect.page) for rect in result.rects):
        return result
    rects = tuple(displayed(index, rect) for rect in result.rects)
    return LocateResult(result.status, result.score, result.matched_text, rects)


def _down_the_column(
    index: DocumentIndex, drawn: Scored | None, view: DocumentIndex, read: Scored
) -> bool:
    """The column reading places an elided quote's head or tail where the drawing order does,
    at least as well, with less between them: the drawing order's passage from one to the
    other takes in the lines of other columns drawn in between (and may have had to settle
    for a worse match of the other part, split by them)."""
    if drawn is None or read[1] < drawn[1] or read[0].covered >= drawn[0].covered:
        return False
    drawn_spans, read_spans = _source_spans(index, drawn[0]), _source_spans(view, read[0])
    return drawn_spans[0][0] == read_spans[0][0] or drawn_spans[-1][1] == read_spans[-1][1]


def _reading_view(index: DocumentIndex, readings: Readings) -> DocumentIndex:
    """``index`` searching its column reading instead of the drawing order: same characters
    and boxes; margin numbers and furniture are the main skeleton's business."""
    return replace(
        index,
        norm=readings.norm,
        grams=readings.grams,
        norm_page_start=readings.page_start,
        margin_numbers=(),
        furniture=(),
        furniture_pattern="",
        readings=None,
    )


def _zigzag(rects: tuple[LineRect, ...]) -> bool:
    """Do the rectangles step down a line and back up to the line they left, further right?
    That is a table's two-line cells ("January" over "28,") stored cell by cell: a quote
    that skipped the lower lines as dropped words reads the row instead, and which of the
    row's cells it meant the text does not say."""
    for a, b, c in zip(rects, rects[1:], rects[2:], strict=False):
        height = a.y1 - a.y0
        if not (a.page == b.page == c.page and height > 0):
            continue
        down = a.y1 - 0.3 * height <= b.y0 <= a.y1 + height
        back = abs(c.y1 - a.y1) < 0.3 * height and c.x0 >= a.x1
        if down and back:
            return True
    return False


def _locate(
    index: DocumentIndex, quote: str, pages: tuple[int, int] | None, chunk: ChunkHint | None
) -> LocateResult:
    # Everything here works in the text frame, where lines are horizontal.
    searched = index.text_pages(pages)
    if searched is None:
        return _NO_TEXT
    first, last = searched
    parts = split_elision(quote)
    at = _Search(*index.norm_range(first, last), chunk)
    best, top = _find(index, parts, replace(at, verbatim=quote if len(parts) == 1 else ""))
    numbers: list[int] = []
    furniture: list[Removed] = []
    if index.margin_numbers:
        # Numbers copied from a line-numbered margin are not in the skeleton: try without them.
        values = frozenset(number.value for number in index.margin_numbers)
        stripped, removed = strip_numbers(quote, values)
        if removed:
            found, seen = _find(index, split_elision(stripped), at)
            top = max(top, seen)
            if found is not None and (best is None or found[1] > best[1]):
                best, numbers = found, removed
    if index.furniture_pattern and len(parts) == 1:
        # Running headers/footers copied across a page break: find the rest without them.
        rest, runs = strip_furniture(parts[0], index.furniture_pattern)
        if runs and rest:
            found, seen = _find(index, [rest], at)
            top = max(top, seen)
            if found is not None and (best is None or found[1] > best[1]):
                best, numbers, furniture = found, [], runs
    elided = len(parts) > 1 and best is not None and not numbers
    if index.readings is not None and (top < READING_BELOW or elided):
        # Drawn out of reading order (columns, sidebars, table cells): try the column reading.
        # It must beat every place the drawing order offered, refused ones included: a quote
        # refused as ambiguous there must not be "found" as something worse here.
        view = _reading_view(index, index.readings)
        search = _Search(*view.norm_range(first, last), chunk, quote if len(parts) == 1 else "")
        found, _ = _find(view, parts, search)
        if found is not None and (
            top < READING_BELOW
            and found[1] > top + READING_MARGIN
            or elided
            and _down_the_column(index, best, view, found)
        ):
            index, best, numbers, furniture = view, found, [], []
    if best is None:
        return _NO_MATCH
    result = _result(index, *best, closing=quote.rstrip()[-1:] in _CLOSING)
    if best[0].matched < best[0].covered and _zigzag(result.rects):
        return _NO_MATCH
    if not result.rects:
        return result
    rects = result.rects
    if numbers:
        rects = with_margin_numbers(index, rects, numbers)
    if furniture:
        rects = with_furniture(index, rects, furniture)
    return LocateResult(result.status, result.score, result.matched_text, rects)
