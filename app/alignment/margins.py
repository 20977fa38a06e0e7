"""Margin line numbers (court transcripts, legal filings, numbered manuscripts).

Such pages print 1, 2, 3, ... in a column beside the text. Text extractors put the numbers
anywhere in reading order: all before the text (PyMuPDF), interleaved at each line start
(pdftotext), or glued to the line they sit beside. They are no part of the sentences, so the
search skeleton leaves them out, and a quote that carries them along ("12 The above-entitled
matter ... 13 argument before ...") is searched without them; the numbers it named are then
highlighted in the margin next to the match.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# Numbers in one margin column line up within this many points (left or right aligned).
ALIGN_TOLERANCE = 3.0
# A column needs this many numbers, nearly all counting up by one, to count as line numbers.
MIN_COLUMN = 5
MIN_STEP_SHARE = 0.8
MAX_DIGITS = 3

_NUMBER_TOKEN = re.compile(rf"(?<!\S)\d{{1,{MAX_DIGITS}}}(?!\S)")


@dataclass(frozen=True, slots=True)
class MarginNumber:
    page: int
    value: int
    start: int  # source character range of the digits
    end: int
    y_centre: float
    height: float


@dataclass(frozen=True, slots=True)
class NumberCandidate:
    """The leading digits of one extracted line, with their box."""

    value: int
    start: int
    end: int
    x0: float
    x1: float
    y0: float
    y1: float


def leading_number(line: str, offset: int, boxes: Sequence[float]) -> NumberCandidate | None:
    """The leading token of an extracted line, if it is a short number.

    ``line`` starts at source character ``offset``; ``boxes`` holds four floats per character.
    """
    i = 0
    while i < len(line) and line[i].isspace():
        i += 1
    j = i
    while j < len(line) and not line[j].isspace():
        j += 1
    token = line[i:j]
    if not (0 < len(token) <= MAX_DIGITS and token.isascii() and token.isdigit()):
        return None
    first, last = 4 * i, 4 * (j - 1)
    return NumberCandidate(
        int(token),
        offset + i,
        offset + j,
        boxes[first],
        boxes[last + 2],
        min(boxes[first + 1], boxes[last + 1]),
        max(boxes[first + 3], boxes[last + 3]),
    )


def _columns(candidates: list[NumberCandidate]) -> list[list[NumberCandidate]]:
    columns: list[list[NumberCandidate]] = []
    for cand in candidates:
        for column in columns:
            ref = column[0]
            if abs(cand.x0 - ref.x0) <= ALIGN_TOLERANCE or abs(cand.x1 - ref.x1) <= ALIGN_TOLERANCE:
                column.append(cand)
                break
        else:
            columns.append([cand])
    return columns


def _is_line_numbering(column: list[NumberCandidate]) -> bool:
    if len(column) < MIN_COLUMN:
        return False
    ordered = sorted(column, key=lambda cand: cand.y0)
    steps = [b.value - a.value for a, b in zip(ordered, ordered[1:], strict=False)]
    if any(step <= 0 for step in steps):
        return False
    return sum(step == 1 for step in steps) >= MIN_STEP_SHARE * len(steps)


def margin_numbers(page: int, candidates: list[NumberCandidate]) -> list[MarginNumber]:
    """The candidates of one page that form a column of consecutive line numbers."""
    found: list[MarginNumber] = []
    for column in _columns(candidates):
        if _is_line_numbering(column):
            found.extend(
                MarginNumber(
                    page,
                    cand.value,
                    cand.start,
                    cand.end,
                    (cand.y0 + cand.y1) / 2,
                    max(cand.y1 - cand.y0, 1.0),
                )
                for cand in column
            )
    return sorted(found, key=lambda number: number.start)


def hide(chars: str, numbers: tuple[MarginNumber, ...]) -> str:
    """``chars`` with the margin numbers blanked out (same length, so offsets still hold)."""
    if not numbers:
        return chars
    parts: list[str] = []
    last = 0
    for number in numbers:
        parts.append(chars[last : number.start])
        parts.append(" " * (number.end - number.start))
        last = number.end
    parts.append(chars[last:])
    return "".join(parts)


def strip_numbers(quote: str, values: frozenset[int]) -> tuple[str, list[int]]:
    """``quote`` without its standalone numbers that a margin column prints, and those numbers."""
    removed: list[int] = []

    def drop(match: re.Match[str]) -> str:
        value = int(match.group())
        if value not in values:
            return match.group()
        removed.append(value)
        return " "

    return _NUMBER_TOKEN.sub(drop, quote), removed
