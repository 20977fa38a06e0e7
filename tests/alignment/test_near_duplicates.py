"""Places whose text differs only in case or punctuation look identical to the skeleton; the
quote's own case and punctuation tell them apart when they match exactly one of them."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from app.alignment.index import DocumentIndex
from app.alignment.locate import ChunkHint, locate
from app.pdfs.extract import build_index

# Table rows, a heading and a sentence that the skeleton reads as the same words.
ROWS = [
    "NET INCOME PER SHARE DILUTED",
    "Net income per share, diluted",
    "Net income per share diluted",
    "Revenue from operations (net)",
    "Revenue from operations, net",
    "Revenue from operations, net",
]
# One phone number wrapped at a dash, the other not.
WRAPPED = ["For information, call 206-231-", "3195. For information, call 206-231-3195."]
TOPS = [100 + 20 * row for row in range(len(ROWS))]


@pytest.fixture(scope="module")
def rows_index(tmp_path_factory: pytest.TempPathFactory) -> DocumentIndex:
    doc = pymupdf.open()
    page = doc.new_page()
    for row, text in enumerate(ROWS):
        page.insert_text((72, TOPS[row]), text, fontsize=10)
        page.insert_text((320, TOPS[row]), f"{1.25 + row:.2f}", fontsize=10)
    for row, text in enumerate(WRAPPED):
        page.insert_text((72, 300 + 20 * row), text, fontsize=10)
    path = Path(tmp_path_factory.mktemp("near")) / "near.pdf"
    doc.save(path)
    doc.close()
    return build_index(path)


@pytest.mark.parametrize("row", [0, 1, 2, 3])
def test_the_row_quoted_verbatim_wins(rows_index: DocumentIndex, row: int) -> None:
    result = locate(rows_index, ROWS[row])
    assert result.status == "found"
    assert len(result.rects) == 1
    assert result.rects[0].y0 < TOPS[row] < result.rects[0].y1
    assert result.rects[0].x1 < 300  # the label only, not the figure


def test_surrounding_punctuation_and_spaces_do_not_count(rows_index: DocumentIndex) -> None:
    result = locate(rows_index, "\u201cNet income  per share, diluted.\u201d")
    assert result.status == "found"
    assert result.rects[0].y0 < TOPS[1] < result.rects[0].y1


def test_no_verbatim_place_stays_ambiguous(rows_index: DocumentIndex) -> None:
    assert locate(rows_index, "net income per share diluted").status == "no_match"
    assert locate(rows_index, "Net Income Per Share Diluted").status == "no_match"


def test_two_verbatim_places_stay_ambiguous(rows_index: DocumentIndex) -> None:
    assert locate(rows_index, ROWS[4]).status == "no_match"


def test_verbatim_place_when_the_chunk_does_not_tell(rows_index: DocumentIndex) -> None:
    """A chunk that is the row alone has no context to place it by."""
    hint = ChunkHint(ROWS[2], 0)
    result = locate(rows_index, ROWS[2], chunk=hint)
    assert result.status == "found"
    assert result.rects[0].y0 < TOPS[2] < result.rects[0].y1
    assert locate(rows_index, ROWS[5], chunk=ChunkHint(ROWS[5], 0)).status == "no_match"


def test_a_dash_at_a_line_end_tells_nothing(rows_index: DocumentIndex) -> None:
    """Extractors keep or drop the space after a dash that ends a line: "206-231- 3195" is a
    copy of either place."""
    for quote in ("call 206\u2013231\u2013 3195.", "For information, call 206-231-3195."):
        assert locate(rows_index, quote).status == "no_match"
