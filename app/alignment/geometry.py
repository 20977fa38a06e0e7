"""Character boxes -> one rectangle per line piece."""

from __future__ import annotations

from dataclasses import dataclass

from app.alignment.index import DocumentIndex
from app.alignment.layout import NO_LINE

# Within one extracted "line", a horizontal jump wider than this many line heights means the
# line really spans separate regions (table cells, a column gutter PyMuPDF merged): split there.
_GAP_IN_HEIGHTS = 2.5


# Rectangles and page sizes leave the service in PDF points to 1/100: finer is noise, and the
# same placement must give the same numbers (highlight ids hash them).
POINT_DECIMALS = 2


def points(value: float) -> float:
    return round(value, POINT_DECIMALS)


@dataclass(frozen=True, slots=True)
class LineRect:
    page: int
    x0: float
    y0: float
    x1: float
    y1: float

    def rounded(self) -> LineRect:
        return LineRect(
            self.page, points(self.x0), points(self.y0), points(self.x1), points(self.y1)
        )


def _close_piece(index: DocumentIndex, page: int, members: list[int]) -> LineRect:
    boxes = index.boxes
    return LineRect(
        page=page,
        x0=min(boxes[4 * i] for i in members),
        y0=min(boxes[4 * i + 1] for i in members),
        x1=max(boxes[4 * i + 2] for i in members),
        y1=max(boxes[4 * i + 3] for i in members),
    )


def _starts_new_piece(index: DocumentIndex, previous: int, current: int) -> bool:
    if index.lines[previous] != index.lines[current]:
        return True
    boxes = index.boxes
    p_y0, p_y1 = boxes[4 * previous + 1], boxes[4 * previous + 3]
    c_y0, c_y1 = boxes[4 * current + 1], boxes[4 * current + 3]
    height = max(c_y1 - c_y0, 1.0)
    # MuPDF sometimes joins table cells of different rows into one "line": split where the
    # characters stop sharing a baseline band, or one rectangle would span both rows.
    overlap = min(p_y1, c_y1) - max(p_y0, c_y0)
    if overlap < 0.5 * min(height, max(p_y1 - p_y0, 1.0)):
        return True
    gap = boxes[4 * current] - boxes[4 * previous + 2]
    return gap > _GAP_IN_HEIGHTS * height


def line_rects(index: DocumentIndex, start: int, end: int) -> list[LineRect]:
    """Rectangles covering source characters ``[start, end)``, one per line piece, in order.

    Whitespace is left out: space glyph boxes are often wider than the visible gap.
    """
    rects: list[LineRect] = []
    members: list[int] = []
    for i in range(start, end):
        if index.lines[i] == NO_LINE or index.chars[i].isspace():
            continue
        if members and _starts_new_piece(index, members[-1], i):
            rects.append(_close_piece(index, index.page_of_char(members[0]), members))
            members = []
        members.append(i)
    if members:
        rects.append(_close_piece(index, index.page_of_char(members[0]), members))
    return rects


def source_text(index: DocumentIndex, start: int, end: int) -> str:
    """The original characters ``[start, end)`` with line breaks and space runs collapsed."""
    return " ".join(index.chars[start:end].split())


def displayed(index: DocumentIndex, rect: LineRect) -> LineRect:
    """``rect`` (text frame) in the frame a viewer shows: origin at the top-left of the page as
    displayed after its /Rotate, which is where PDF.js and every other viewer draw. Without this a
    rotated page's rectangles land somewhere else entirely."""
    rotation = index.rotation(rect.page)
    if rotation == 0:
        return rect
    width, height = index.text_frame_size(rect.page)
    x0, y0, x1, y1 = rect.x0, rect.y0, rect.x1, rect.y1
    if rotation == 90:
        x0, y0, x1, y1 = height - y1, x0, height - y0, x1
    elif rotation == 180:
        x0, y0, x1, y1 = width - x1, height - y1, width - x0, height - y0
    else:  # 270
        x0, y0, x1, y1 = y0, width - x1, y1, width - x0
    return LineRect(rect.page, x0, y0, x1, y1)


def page_boxes(rects: list[LineRect]) -> list[LineRect]:
    """One box per page around a highlight's line rectangles, in page order: for viewers that
    draw a single block per highlight instead of one rectangle per line."""
    boxes: dict[int, LineRect] = {}
    for rect in rects:
        box = boxes.get(rect.page)
        boxes[rect.page] = (
            rect
            if box is None
            else LineRect(
                rect.page,
                min(box.x0, rect.x0),
                min(box.y0, rect.y0),
                max(box.x1, rect.x1),
                max(box.y1, rect.y1),
            )
        )
    return [boxes[page] for page in sorted(boxes)]
