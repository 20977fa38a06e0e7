"""Running headers, footers and page numbers ("page furniture").

A quote copied across a page break carries the furniture between the pages along: "... the
protection Copyright Office Summary December 1998 Page 6 The Digital Millennium Copyright Act
of 1998 is set out in ...". PyMuPDF often orders a page's furniture before its body text, so
in the index that run sits somewhere else entirely. The locator takes such runs out of the
quote, finds the rest, and highlights the furniture lines at the page break the match crosses
(or borders): the footer of the page before and the header of the page after.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

from app.alignment.text import normalize_text

# Lines whose box lies within this share of the page height from its top or bottom edge ...
BAND = 0.12
# ... and whose text, digits aside, recurs there on at least this many pages.
MIN_PAGES = 3
# A run of furniture text in a quote is taken out only from this many skeleton characters on
# (a lone "Page 7" or a year is as likely to be the sentence's own words).
MIN_RUN = 12

_DIGIT_RUN = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class FurnitureLine:
    page: int
    start: int  # source character range of the line
    end: int
    top: bool  # a header (else a footer)
    skeleton: str


@dataclass(frozen=True, slots=True)
class LineBox:
    page: int
    start: int
    end: int
    y0: float
    y1: float


def furniture_key(skeleton: str) -> str:
    """The text of a furniture line as recurring pages share it: any number in place of the
    printed one ("Page 6" and "Page 7" are one line)."""
    return _DIGIT_RUN.sub("#", skeleton)


def find_furniture(
    chars: str, lines: list[LineBox], heights: list[float]
) -> tuple[tuple[FurnitureLine, ...], str]:
    """The furniture lines of a document, and a regex (source) matching runs of their text in
    a skeleton, with any numbers in place of the printed ones ("" when there is none)."""
    candidates: list[tuple[str, FurnitureLine]] = []
    for line in lines:
        height = heights[line.page - 1]
        if line.y1 <= BAND * height:
            top = True
        elif line.y0 >= (1 - BAND) * height:
            top = False
        else:
            continue
        skeleton = normalize_text(chars[line.start : line.end])
        if skeleton:
            furniture = FurnitureLine(line.page, line.start, line.end, top, skeleton)
            candidates.append((furniture_key(skeleton), furniture))
    pages: dict[str, set[int]] = defaultdict(set)
    for key, furniture in candidates:
        pages[key].add(furniture.page)
    found = tuple(furniture for key, furniture in candidates if len(pages[key]) >= MIN_PAGES)
    keys = sorted(
        {furniture_key(line.skeleton) for line in found}, key=lambda key: (-len(key), key)
    )
    if not keys:
        return found, ""
    alternatives = [re.escape(key).replace(r"\#", r"\d+").replace("#", r"\d+") for key in keys]
    return found, "(?:" + "|".join(alternatives) + ")+"


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


@dataclass(frozen=True, slots=True)
class Removed:
    text: str  # the furniture skeleton taken out of the quote
    where: str  # "lead", "inner" or "trail"
    # For an inner run: does more of the quote follow it than precede it? (A match on a single
    # page then lies after the page break, else before it.)
    mostly_after: bool = True


def strip_furniture(skeleton: str, pattern: str) -> tuple[str, list[Removed]]:
    """``skeleton`` without its runs of furniture text, and what was taken out where."""
    if not pattern:
        return skeleton, []
    kept: list[str] = []
    runs: list[tuple[str, int]] = []  # run, kept characters before it
    last = 0
    for match in _compiled(pattern).finditer(skeleton):
        run = match.group()
        if len(run) < MIN_RUN or run.isdigit():
            continue
        kept.append(skeleton[last : match.start()])
        runs.append((run, sum(map(len, kept))))
        last = match.end()
    kept.append(skeleton[last:])
    rest = "".join(kept)
    removed: list[Removed] = []
    for run, before in runs:
        where = "lead" if before == 0 else "trail" if before == len(rest) else "inner"
        removed.append(Removed(run, where, len(rest) - before >= before))
    return rest, removed


def break_lines(
    furniture: tuple[FurnitureLine, ...], removed: Removed, first: int, last: int
) -> list[FurnitureLine]:
    """The furniture lines at the page break(s) a match on pages ``first..last`` borders or
    crosses whose text is in ``removed``: footers end a page, headers start the next."""
    if removed.where == "lead":
        footers, headers = {first - 1}, {first}
    elif removed.where == "trail":
        footers, headers = {last}, {last + 1}
    elif first < last:
        footers, headers = set(range(first, last)), set(range(first + 1, last + 1))
    elif removed.mostly_after:
        footers, headers = {first - 1}, {first}
    else:
        footers, headers = {last}, {last + 1}
    return [
        line
        for line in furniture
        if (line.page in headers if line.top else line.page in footers)
        and line.skeleton in removed.text
    ]
