"""Line pieces of a page from the index's character boxes: the units a column reading orders.

An extracted "line" may run across a column gutter or several table cells when the PDF draws a
page row by row; wherever the characters jump sideways by more than ``SPLIT_GAP`` line heights
it is cut into separate pieces, so each piece belongs to one column, sidebar or cell.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
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


# How far a float32 coordinate may lie from the double it was rounded from, per unit of size:
# half a float32 ulp is at most 2**-24 of it; taken eight times over, for the two coordinates
# of a gap and of a height and the rounding of the subtractions.
_FLOAT32_SLACK = 2.0**-21


def line_pieces(start: int, text: str, bboxes: Sequence[Sequence[float]]) -> list[Segment]:
    """``segments`` of one extracted line, from PyMuPDF's own boxes (doubles) before they are
    stored as float32: the line's characters are source ``[start, start + len(text))``.

    The same pieces as ``segments`` on the stored arrays, at a fraction of the cost: most lines
    have no gap anywhere near a split, which one pass over the doubles shows, with a margin for
    the rounding to float32. A line that comes that close is cut by ``segments`` itself, on
    its float32 boxes.
    """
    started = inverted = False
    widest = -math.inf  # widest gap between neighbouring visible characters
    x0 = y0 = x1 = y1 = top = bottom = px1 = 0.0
    for char, (bx0, by0, bx1, by1) in zip(text, bboxes, strict=True):
        if char.isspace():
            continue
        if started:
            if bx0 - px1 > widest:
                widest = bx0 - px1
            # min() and max() as segments takes them: the first of equal values is kept.
            if bx0 < x0:
                x0 = bx0
            if by0 < y0:
                y0 = by0
            if bx1 > x1:
                x1 = bx1
            if by1 > y1:
                y1 = by1
            if by0 > top:
                top = by0
            if by1 < bottom:
                bottom = by1
        else:
            x0, y0, x1, y1 = bx0, by0, bx1, by1
            top, bottom = by0, by1
            started = True
        if bx1 < bx0 or by1 < by0:
            inverted = True
        px1 = bx1
    if not started:
        return []
    # Every character is at least the lowest bottom minus the highest top high.
    lowest = SPLIT_GAP * max(bottom - top, 1.0)
    # Every coordinate lies inside the line's box unless a box is inside out.
    slack = _FLOAT32_SLACK * max(abs(x0), abs(y0), abs(x1), abs(y1))
    if inverted or not widest + slack + 1e-9 < lowest - SPLIT_GAP * (slack + 1e-9):
        boxes = array("f", [value for bbox in bboxes for value in bbox])
        lines = array("i", [0]) * len(text)
        return [
            Segment(start + s.start, start + s.end, s.x0, s.y0, s.x1, s.y1)
            for s in segments(text, boxes, lines, 0, len(text))
        ]
    first = len(text) - len(text.lstrip())
    end = len(text.rstrip())
    # Rounded as the stored boxes are: the least of the doubles is the least of the floats.
    fx0, fy0, fx1, fy1 = array("f", (x0, y0, x1, y1))
    return [Segment(start + first, start + end, fx0, fy0, fx1, fy1)]
