"""What of a page's line pieces a chunk reads, and in which order around the body.

Repeated page furniture (running headers and footers, page numbers: ``alignment.furniture``,
the lines the locator already knows for placement) is left out of chunk text: a sentence that
crosses a page break then reads on from the page before into the next, with no "委 134" or
"Page 6 of 40" in its middle. Furniture is only what recurs in the page's top or bottom band on
several pages; a line printed once there (a page's only heading, a stamp) stays.

The first page's title is kept when a running header repeats it: there it is set larger than on
the pages after (it is the document's title, not a header).

Pieces in the top or bottom band that stand clear of the body (a line or more of space between)
are read first or last on their page, wherever the PDF drew them: PyMuPDF puts a stamp drawn
last at the top of the page between the page's last sentence and the next page's first.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import median

from app.alignment.furniture import BAND, furniture_key
from app.alignment.index import DocumentIndex
from app.alignment.layout import Segment

# A first-page line taller than its repeats by more than this share is the title, not a header.
TITLE_GROWTH = 0.2
# A band piece this many of its line heights clear of the body is read before or after it.
CLEARANCE = 1.0


def _height(index: DocumentIndex, start: int, end: int) -> float:
    tops = [index.boxes[4 * i + 1] for i in range(start, end) if not index.chars[i].isspace()]
    bottoms = [index.boxes[4 * i + 3] for i in range(start, end) if not index.chars[i].isspace()]
    return max(bottoms) - min(tops) if tops else 0.0


def furniture_ranges(index: DocumentIndex) -> list[tuple[int, int]]:
    """Source character ranges of the furniture lines left out of chunk text, sorted."""
    heights: dict[str, list[float]] = defaultdict(list)
    for line in index.furniture:
        if line.page != 1:
            heights[furniture_key(line.skeleton)].append(_height(index, line.start, line.end))
    ranges: list[tuple[int, int]] = []
    for line in index.furniture:
        if line.page == 1:
            others = heights.get(furniture_key(line.skeleton))
            height = _height(index, line.start, line.end)
            if others and height > (1 + TITLE_GROWTH) * median(others):
                continue  # the title, which later pages repeat smaller as a running header
        ranges.append((line.start, line.end))
    return sorted(ranges)


def without_furniture(pieces: list[Segment], ranges: list[tuple[int, int]]) -> list[Segment]:
    """``pieces`` less those inside a furniture line (``furniture_ranges``)."""
    if not ranges:
        return pieces
    from bisect import bisect_right

    starts = [start for start, _ in ranges]
    kept: list[Segment] = []
    for piece in pieces:
        at = bisect_right(starts, piece.start) - 1
        if at >= 0 and piece.end <= ranges[at][1]:
            continue
        kept.append(piece)
    return kept


def banded(pieces: list[Segment], page_height: float) -> list[Segment]:
    """``pieces`` with those in the top band clear of the body first, and those in the bottom
    band clear of it last (each group in its own order)."""
    top_band, bottom_band = BAND * page_height, (1 - BAND) * page_height
    body = [p for p in pieces if p.y1 > top_band and p.y0 < bottom_band]
    if not body:
        return pieces
    body_top = min(p.y0 for p in body)
    body_bottom = max(p.y1 for p in body)
    first = [p for p in pieces if p.y1 <= top_band and body_top - p.y1 >= CLEARANCE * p.height]
    last = [p for p in pieces if p.y0 >= bottom_band and p.y0 - body_bottom >= CLEARANCE * p.height]
    if not first and not last:
        return pieces
    moved = {id(p) for p in (*first, *last)}
    return [*first, *(p for p in pieces if id(p) not in moved), *last]
