"""A second reading of pages whose drawing order is not their reading order.

The index follows the order the PDF draws text in. Forms and instructions drawn row by row
across columns, sidebars drawn between a column's lines, and tables written line by line
across their cells interleave what a reader reads as one sentence or one cell. For each page
where it differs, the column reading of ``chains.py`` is kept as a second skeleton; the
locator searches it when the drawing order gives no convincing match. Its skeleton maps back
to source characters like the main one, but jumps between lines, so a match in it becomes one
source range (and rectangle) per piece of the page it crosses.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from app.alignment.chains import column_order
from app.alignment.grams import GramTable
from app.alignment.layout import Segment
from app.alignment.text import Normalized


@dataclass(frozen=True, slots=True)
class Reordered(Normalized):
    """A skeleton whose origin jumps: ``breaks`` are the skeleton positions where a piece
    starts that does not continue the previous one in the source."""

    breaks: array[int]

    def source_runs(self, start: int, end: int) -> list[tuple[int, int]]:
        cuts = self.breaks[bisect_right(self.breaks, start) : bisect_left(self.breaks, end)]
        bounds = [start, *cuts, end]
        return [self.source_span(a, b) for a, b in zip(bounds, bounds[1:], strict=False)]


@dataclass(frozen=True, slots=True)
class Readings:
    norm: Reordered
    grams: GramTable
    page_start: array[int]  # skeleton start of each page (pages read as drawn are empty)


def build_readings(
    norm: Normalized, page_start: array[int], pieces: list[list[Segment]]
) -> Readings | None:
    """Column readings of the pages that need one, cut from the main skeleton ``norm``:
    ``pieces`` are each page's line pieces (``layout.segments`` of the page's source range
    ``page_start[page]..page_start[page + 1]``)."""
    parts: list[str] = []
    origin: array[int] = array("i")
    breaks: array[int] = array("i")
    starts: array[int] = array("i", [0])
    size = 0
    for page in range(len(page_start) - 1):
        ordered = column_order(pieces[page])
        if [p.start for p in ordered] == [p.start for p in pieces[page]]:
            starts.append(size)
            continue
        previous = -1  # skeleton end of the previous piece
        for piece in ordered:
            first = bisect_left(norm.origin, piece.start)
            last = bisect_left(norm.origin, piece.end)
            if first == last:
                continue
            if first != previous:  # not where the previous piece ends in the source
                breaks.append(size)
            parts.append(norm.text[first:last])
            origin.extend(norm.origin[first:last])
            size += last - first
            previous = last
        starts.append(size)
    if not breaks:
        return None
    text = "".join(parts)
    return Readings(Reordered(text, origin, breaks), GramTable(text), starts)
