"""Pages drawn out of reading order: columns row by row, a sidebar between a column's lines,
table cells line by line across the row. The locator reads them column by column."""

from __future__ import annotations

import pickle
from pathlib import Path

import pymupdf
import pytest

from app.alignment.chains import column_order
from app.alignment.index import DocumentIndex
from app.alignment.layout import Segment
from app.alignment.locate import locate
from app.pdfs.extract import build_index

LEFT = [
    "Taxpayers who received payments through an",
    "online marketplace must report the gross",
    "amount on the schedule attached to the return",
    "even when no form was issued to them. If you",
    "moved during the year, use the address where",
]
RIGHT = [
    "you lived on the last day of the year. Spouses",
    "filing separately each report their own share",
    "of community income under the state rules.",
    "Rental income from a vacation home is not",
    "reported when the home was rented briefly.",
]
SIDEBAR = ["TIP: Keep copies of every", "statement for three years."]
CELLS = [
    ["Adjusted gross", "income before", "the deduction"],
    ["Qualified business", "income component", "for the year"],
]
LEFT_SENTENCE = (
    "Taxpayers who received payments through an online marketplace must report the gross "
    "amount on the schedule attached to the return even when no form was issued to them."
)
ACROSS = (
    "If you moved during the year, use the address where you lived on the last day of the year."
)


def _page_rows(page: pymupdf.Page) -> None:
    """Two columns written row by row; a sidebar's lines written between the right column's."""
    for row, (left, right) in enumerate(zip(LEFT, RIGHT, strict=True)):
        page.insert_text((72, 100 + 14 * row), left, fontsize=10)
        page.insert_text((320, 100 + 14 * row), right, fontsize=10)
        if row < len(SIDEBAR):
            page.insert_text((330, 220 + 14 * row), SIDEBAR[row], fontsize=10)


def _page_table(page: pymupdf.Page) -> None:
    """Header cells wrapped over three lines, written line by line across the row."""
    for line in range(3):
        for column, cell in enumerate(CELLS):
            page.insert_text((72 + 110 * column, 100 + 12 * line), cell[line], fontsize=9)


@pytest.fixture(scope="module")
def layout_index(tmp_path_factory: pytest.TempPathFactory) -> DocumentIndex:
    doc = pymupdf.open()
    _page_rows(doc.new_page())
    _page_table(doc.new_page())
    path = Path(tmp_path_factory.mktemp("layout")) / "layout.pdf"
    doc.save(path)
    doc.close()
    return build_index(path)


def test_sentence_down_one_column_of_a_page_drawn_row_by_row(layout_index: DocumentIndex) -> None:
    result = locate(layout_index, LEFT_SENTENCE)
    assert result.status == "found"
    assert len(result.rects) == 4  # one per line of the left column, nothing from the right
    assert all(rect.page == 1 and rect.x1 < 320 for rect in result.rects)


def test_sentence_across_the_column_break(layout_index: DocumentIndex) -> None:
    result = locate(layout_index, ACROSS)
    assert result.status == "found"
    assert [rect.x0 < 300 for rect in result.rects] == [True, True, False]
    assert result.rects[0].y0 < 138 < result.rects[0].y1  # "If you" ends line 4 of the left
    assert result.rects[1].y0 < 152 < result.rects[1].y1  # line 5, the left column's last
    assert result.rects[2].y0 < 100 < result.rects[2].y1  # the right column's first line


def test_sidebar_is_read_apart_from_the_column(layout_index: DocumentIndex) -> None:
    result = locate(layout_index, "TIP: Keep copies of every statement for three years.")
    assert result.status == "found"
    assert len(result.rects) == 2
    assert all(rect.x0 >= 329 for rect in result.rects)


@pytest.mark.parametrize("cell", CELLS)
def test_table_header_cell_whichever_order(layout_index: DocumentIndex, cell: list[str]) -> None:
    result = locate(layout_index, " ".join(cell))
    assert result.status == "found"
    assert len(result.rects) == 3
    x0 = min(rect.x0 for rect in result.rects)
    assert all(rect.page == 2 and rect.x1 - x0 < 105 for rect in result.rects)


def _box(x0: float, y0: float, width: float = 100.0) -> Segment:
    return Segment(int(x0 * 1000 + y0), int(x0 * 1000 + y0) + 1, x0, y0, x0 + width, y0 + 10)


def test_column_order_reads_down_then_across() -> None:
    rows = [_box(x, 100 + 12 * row) for row in range(3) for x in (50, 300)]
    ordered = column_order(rows)
    assert [(s.x0, s.y0) for s in ordered] == [
        (50, 100),
        (50, 112),
        (50, 124),
        (300, 100),
        (300, 112),
        (300, 124),
    ]


def test_column_order_keeps_a_far_block_apart() -> None:
    """A block far below (more than a line and a half) starts a new chain, read after the
    column's chain that precedes it in y."""
    pieces = [_box(50, 100), _box(50, 112), _box(60, 200, 80), _box(50, 260)]
    ordered = column_order(pieces)
    assert [s.y0 for s in ordered] == [100, 112, 200, 260]


def test_column_reading_survives_the_disk_cache(layout_index: DocumentIndex) -> None:
    """Worker processes load the index from a pickle: the second skeleton must come along."""
    loaded = pickle.loads(pickle.dumps(layout_index))
    assert loaded.readings is not None
    assert locate(loaded, LEFT_SENTENCE) == locate(layout_index, LEFT_SENTENCE)
    assert locate(loaded, LEFT_SENTENCE).status == "found"
