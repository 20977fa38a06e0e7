"""What a match leaves out but a quote copied along: margin line numbers, page furniture.

The locator finds a quote without them (``margins.strip_numbers``, ``furniture.strip_furniture``);
these add their rectangles back where they are printed, in reading order.
"""

from __future__ import annotations

from app.alignment.furniture import Removed, break_lines
from app.alignment.geometry import LineRect, line_rects
from app.alignment.index import DocumentIndex
from app.alignment.margins import MarginNumber

# A quoted margin line number is highlighted when it sits within this many of its own heights
# above or below the matched lines (an empty numbered line may separate them).
MARGIN_REACH = 4.0


def _margin_rect(index: DocumentIndex, value: int, rects: list[LineRect]) -> LineRect | None:
    """The margin number ``value`` printed beside (or just above/below) the matched lines."""
    best: tuple[float, MarginNumber] | None = None
    for number in index.margin_numbers:
        if number.value != value:
            continue
        beside = [rect for rect in rects if rect.page == number.page]
        if not beside:
            continue
        top, bottom = min(r.y0 for r in beside), max(r.y1 for r in beside)
        distance = max(0.0, top - number.y_centre, number.y_centre - bottom)
        if distance <= MARGIN_REACH * number.height and (best is None or distance < best[0]):
            best = (distance, number)
    if best is None:
        return None
    found = line_rects(index, best[1].start, best[1].end)
    return found[0] if found else None


def with_margin_numbers(
    index: DocumentIndex, found: tuple[LineRect, ...], values: list[int]
) -> tuple[LineRect, ...]:
    """``found`` with the rectangles of the quoted margin numbers ``values``, in line order."""
    rects = list(found)
    for value in values:
        rect = _margin_rect(index, value, list(found))
        if rect is None or rect in rects:
            continue
        centre = (rect.y0 + rect.y1) / 2
        at = next(
            (
                i
                for i, other in enumerate(rects)
                if other.page == rect.page and (other.y0 + other.y1) / 2 >= centre - 1.0
            ),
            len(rects),
        )
        rects.insert(at, rect)
    return tuple(rects)


def with_furniture(
    index: DocumentIndex, found: tuple[LineRect, ...], removed: list[Removed]
) -> tuple[LineRect, ...]:
    """``found`` with the furniture lines of the page break it crosses or borders."""
    pages = [rect.page for rect in found]
    lines = {
        line
        for run in removed
        for line in break_lines(index.furniture, run, min(pages), max(pages))
    }
    bands: list[tuple[int, int, LineRect]] = [(rect.page, 1, rect) for rect in found]
    for line in sorted(lines, key=lambda line: line.start):
        for rect in line_rects(index, line.start, line.end):
            bands.append((rect.page, 0 if line.top else 2, rect))
    # Reading order across a page break: body, footer | header, body (stable within a band).
    ordered = sorted(bands, key=lambda item: (item[0], item[1]))
    return tuple(rect for _, _, rect in ordered)
