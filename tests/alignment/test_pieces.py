"""Quotes stitched from pieces: each piece must be the nearest, near, and worth searching.

A quote the PDF's text order interrupts (a running header, a footnote, a table read across
its cells) is matched piece by piece (``matcher._complete``). Tables of labels make that
risky: the rest of a quote can be "found" in another cell, on another page, or hung on a
few common words; these place nothing rather than the wrong cell.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from app.alignment.index import DocumentIndex
from app.alignment.locate import locate
from app.pdfs.extract import build_index

# A cash-flow statement drawn row by row: the label "Net cash provided by" opens two rows.
CASH_FLOWS = [
    "Capital expenditures (312,126) (172,187)",
    "Other investments (2,458) (4,297)",
    "Net cash provided by investing activities (314,584) (176,484)",
    "Financing activities",
    "Repurchase of common shares (900,033) (1,521,925)",
    "Stock options exercised 46,011 40,386",
    "Purchase of treasury shares (6,992) (15,677)",
    "Net cash provided by financing activities (861,014) (1,497,216)",
]
# Sparse pages of a results release: the two labels are two pages apart.
HIGHLIGHTS = ["Diluted earnings per share 6.68 5.41 3.03 24.01 17.98 3.11"]
OUTLOOK = ["New store openings, net 12 6 2 47 44 10"]
# A store table's header cells read across the row; "at end of the" is a common phrase far
# below, in another table.
STORES = [
    "Total stores open Number of stores Number of stores",
    "at beginning of the opened during the closed during the",
    "Fiscal 2022 quarter quarter quarter",
    "1st Quarter 1,308 10 0 1,318 2nd Quarter 1,318 7 0 1,325",
    "3rd Quarter 1,325 18 0 1,343 4th Quarter 1,343 12 0 1,355",
    "Gross square feet for stores opened or expanded during the quarter",
    "Area in sq ft 2022 at end of the quarter 13,981 14,113",
]


def _page(doc: pymupdf.Document, lines: list[str], top: float = 80) -> None:
    page = doc.new_page()
    for number, line in enumerate(lines):
        page.insert_text((60, top + 40 * number), line, fontsize=10)


@pytest.fixture(scope="module")
def tables_index(tmp_path_factory: pytest.TempPathFactory) -> DocumentIndex:
    doc = pymupdf.open()
    _page(doc, CASH_FLOWS)
    _page(doc, HIGHLIGHTS)
    _page(doc, ["Page intentionally left with little text."])
    _page(doc, OUTLOOK)
    _page(doc, STORES)
    path: Path = tmp_path_factory.mktemp("pieces") / "tables.pdf"
    doc.save(path)
    doc.close()
    return build_index(path)


def _line_of(index: DocumentIndex, page: int, text: str) -> tuple[float, float]:
    """y0, y1 of the line printing ``text`` on ``page`` (from the index's own boxes)."""
    start = index.chars.find(text, index.char_page_start[page - 1])
    assert start >= 0
    return index.boxes[4 * start + 1], index.boxes[4 * start + 3]


def test_the_rest_of_a_quote_pairs_with_the_nearest_copy_of_a_label(
    tables_index: DocumentIndex,
) -> None:
    # "Other investments" + "Net cash provided by": the investing row right below, not the
    # financing row further down, whose copy of the label is no nearer to anything.
    result = locate(tables_index, "Other investments Net cash provided by")
    investing = _line_of(tables_index, 1, "Net cash provided by investing")
    financing = _line_of(tables_index, 1, "Net cash provided by financing")
    assert result.status == "found"
    assert any(rect.y0 <= investing[1] and investing[0] <= rect.y1 for rect in result.rects)
    assert not any(rect.y0 <= financing[1] and financing[0] <= rect.y1 for rect in result.rects)


def test_pieces_two_pages_apart_are_two_passages(tables_index: DocumentIndex) -> None:
    # Two table labels on pages 2 and 4: no sentence runs across two page breaks.
    result = locate(tables_index, "earnings per share New store openings,")
    assert result.status == "no_match"
    assert result.rects == ()


def test_a_few_common_words_anchor_no_other_piece(tables_index: DocumentIndex) -> None:
    # "at end of the" is too short to be searched on its own, so it cannot carry the
    # header's "Total stores open" to a row of another table.
    result = locate(tables_index, "Total stores open at end of the")
    assert result.status == "no_match"


def test_a_quote_split_by_a_table_row_is_still_stitched(tables_index: DocumentIndex) -> None:
    # The rule keeps what pieces are for: a long quote interrupted by other text.
    result = locate(
        tables_index, "Gross square feet for stores opened or expanded during the quarter"
    )
    assert result.status == "found"
    assert result.score == 100.0


@pytest.fixture(scope="module")
def header_index(tmp_path_factory: pytest.TempPathFactory) -> DocumentIndex:
    """A results table's header: two groups of three two-line cells ("January" over "28,"),
    stored cell by cell, the way a spreadsheet export draws them."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((290, 100), "13 Weeks Ended", fontsize=9)
    page.insert_text((450, 100), "52 Weeks Ended", fontsize=9)
    for number, day in enumerate(["28,", "29,", "30,", "28,", "29,", "30,"]):
        x = 290 + 50 * number + (10 if number > 2 else 0)
        page.insert_text((x, 112), "January", fontsize=9)
        page.insert_text((x + 8, 122), day, fontsize=9)
    page.insert_text(
        (60, 150), "Net sales 3,226.8 2,729.4 2,198.7 10,208.6 8,630.9 6,152.0", fontsize=9
    )
    path: Path = tmp_path_factory.mktemp("header") / "header.pdf"
    doc.save(path)
    doc.close()
    return build_index(path)


def test_a_row_read_across_cells_stored_column_wise_is_not_guessed(
    header_index: DocumentIndex,
) -> None:
    # The quote reads the header's row; the PDF stores "January 28," cell by cell, so the
    # first three Januarys after "52 Weeks Ended" (the 13-week group's) fit it as well as
    # any: skipping the day lines as dropped words would highlight the wrong cells.
    result = locate(header_index, "52 Weeks Ended January January January")
    assert result.status == "no_match"


def test_cells_quoted_in_their_stored_order_are_found(header_index: DocumentIndex) -> None:
    result = locate(header_index, "52 Weeks Ended January 28, January 29,")
    assert result.status == "found"
    assert result.score == 100.0
