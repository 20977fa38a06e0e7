"""An elided quote ("head ... tail") on a page drawn row by row across its columns: between head
and tail only the lines of the column they are in are highlighted, not the lines of the other
columns the PDF drew in between."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from app.alignment.index import DocumentIndex
from app.alignment.locate import LineRect, locate
from app.pdfs.extract import build_index

# The two-column text of test_layout, here the left and middle of three columns.
from .test_layout import LEFT
from .test_layout import RIGHT as MIDDLE

RIGHT = [
    "Estimated payments made for the prior year",
    "are credited first to any balance still due",
    "and the rest is applied to the current year",
    "unless you ask for it to be refunded to you.",
    "Interest is charged on late payments daily.",
]
X = (40.0, 230.0, 420.0)
TOP, LEADING = 100.0, 14.0


def _row_y(row: int) -> float:
    return TOP + LEADING * row


@pytest.fixture(scope="module")
def rows_index(tmp_path_factory: pytest.TempPathFactory) -> DocumentIndex:
    doc = pymupdf.open()
    page = doc.new_page()
    for row, lines in enumerate(zip(LEFT, MIDDLE, RIGHT, strict=True)):
        for x, line in zip(X, lines, strict=True):
            page.insert_text((x, _row_y(row)), line, fontsize=8)
    path = Path(tmp_path_factory.mktemp("elided")) / "elided.pdf"
    doc.save(path)
    doc.close()
    return build_index(path)


def _column(x0: float) -> int:
    return max(i for i, x in enumerate(X) if x0 >= x - 1)


def _rows(rects: tuple[LineRect, ...]) -> list[tuple[int, int]]:
    """(column, row) of each rectangle, in order (baselines sit 2pt below a line's middle)."""
    found = []
    for rect in rects:
        y = (rect.y0 + rect.y1) / 2
        row = min(range(len(LEFT)), key=lambda r: abs(_row_y(r) - 2 - y))
        found.append((_column(rect.x0), row))
    return found


def test_elided_quote_down_the_left_column(rows_index: DocumentIndex) -> None:
    result = locate(
        rows_index, "Taxpayers who received payments ... when no form was issued to them."
    )
    assert result.status == "found"
    assert _rows(result.rects) == [(0, 0), (0, 1), (0, 2), (0, 3)]


def test_elided_quote_down_the_middle_column(rows_index: DocumentIndex) -> None:
    result = locate(rows_index, "filing separately each report \u2026 from a vacation home is not")
    assert result.status == "found"
    assert _rows(result.rects) == [(1, 1), (1, 2), (1, 3)]


def test_elided_quote_down_the_right_column(rows_index: DocumentIndex) -> None:
    result = locate(rows_index, "Estimated payments made for ... charged on late payments daily.")
    assert result.status == "found"
    assert _rows(result.rects) == [(2, row) for row in range(5)]


def test_elided_quote_across_the_column_break(rows_index: DocumentIndex) -> None:
    result = locate(rows_index, "moved during the year, use ... the last day of the year.")
    assert result.status == "found"
    assert _rows(result.rects) == [(0, 4), (1, 0)]


def test_elided_quote_along_a_row_stays_as_drawn(rows_index: DocumentIndex) -> None:
    """Head in one column and tail in the next on the same row: the drawing order is the only
    reading in which the tail follows the head, so it is kept."""
    result = locate(rows_index, "Taxpayers who received payments ... the last day of the year.")
    assert result.status == "found"
    assert _rows(result.rects) == [(0, 0), (1, 0)]
