"""Line pieces of a page from the index's character boxes: the units a column reading orders.

An extracted "line" may run across a column gutter or several table cells when the PDF draws a
page row by row; wherever the characters jump sideways by more than ``SPLIT_GAP`` line heights
it is cut into separate pieces, so each piece belongs to one column, sidebar or cell.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

SPLIT_GAP = 1.5
# The line number of the synthetic break after each line in ``DocumentIndex.lines``. Defined here,
# the lowest module that reads it (index.py imports this one through readings.py).
NO_LINE = -1


@dataclass(frozen=True, slots=True)
class Segment:
    start: int  # source character range (line-break characters excluded)
    end: int
    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def height(self) -> float:
        return max(self.y1 - self.y0, 1.0)

    @property
    def width(self) -> float:
        return self.x1 - self.x0


def segments(chars: str, boxes: array[float], lines: array[int], lo: int, hi: int) -> list[Segment]:
    """Pieces of the lines in source characters ``[lo, hi)`` (one page), in source order.

    Spaces stay inside a piece but never start one or decide its box.
    """
    found: list[Segment] = []
    start = prev = -1  # first and last visible character of the open piece
    x0 = y0 = x1 = y1 = 0.0
    for i in range(lo, hi):
        line = lines[i]
        if line == NO_LINE or chars[i].isspace():
            if line == NO_LINE and start >= 0:
                found.append(Segment(start, prev + 1, x0, y0, x1, y1))
                start = -1
            continue
        bx0, by0, bx1, by1 = boxes[4 * i : 4 * i + 4]
        if start >= 0:
            height = max(by1 - by0, 1.0)
            if lines[prev] != line or bx0 - boxes[4 * prev + 2] > SPLIT_GAP * height:
                found.append(Segment(start, prev + 1, x0, y0, x1, y1))
                start = -1
        if start < 0:
            start, x0, y0, x1, y1 = i, bx0, by0, bx1, by1
        else:
            x0, y0, x1, y1 = min(x0, bx0), min(y0, by0), max(x1, bx1), max(y1, by1)
        prev = i
    if start >= 0:
        found.append(Segment(start, prev + 1, x0, y0, x1, y1))
    return found
