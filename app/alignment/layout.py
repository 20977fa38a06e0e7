"""Line pieces of a page from the index's character boxes: the units a column reading orders.

An extracted "line" may run across a column gutter or several table cells when the PDF draws a
page row by row; wherever the characters jump sideways by more than ``SPLIT_GAP`` line heights
it is cut into separate pieces, so each piece belongs to one column, sidebar or cell.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

SPLIT_GAP = 1.5
NO_LINE = -1  # as in index.py (imported there from here would be circular)


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


def _close(boxes: array[float], start: int, members: list[int]) -> Segment:
    return Segment(
        start,
        members[-1] + 1,
        min(boxes[4 * i] for i in members),
        min(boxes[4 * i + 1] for i in members),
        max(boxes[4 * i + 2] for i in members),
        max(boxes[4 * i + 3] for i in members),
    )


def segments(chars: str, boxes: array[float], lines: array[int], lo: int, hi: int) -> list[Segment]:
    """Pieces of the lines in source characters ``[lo, hi)`` (one page), in source order.

    Spaces stay inside a piece but never start one or decide its box.
    """
    found: list[Segment] = []
    members: list[int] = []
    start = lo
    for i in range(lo, hi):
        if lines[i] == NO_LINE:
            if members:
                found.append(_close(boxes, start, members))
            members = []
            continue
        if chars[i].isspace():
            continue
        if members:
            prev = members[-1]
            height = max(boxes[4 * i + 3] - boxes[4 * i + 1], 1.0)
            if lines[prev] != lines[i] or boxes[4 * i] - boxes[4 * prev + 2] > SPLIT_GAP * height:
                found.append(_close(boxes, start, members))
                members = []
        if not members:
            start = i
        members.append(i)
    if members:
        found.append(_close(boxes, start, members))
    return found
