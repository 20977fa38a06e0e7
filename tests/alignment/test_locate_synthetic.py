"""Locator behaviour on a generated PDF with known quirks."""

from __future__ import annotations

import pytest

from app.alignment.index import DocumentIndex
from app.alignment.locate import LineRect, locate

from .conftest import PAGE_BREAK_AFTER, PAGE_BREAK_BEFORE, REPEATED


def _pages(rects: tuple[LineRect, ...]) -> list[int]:
    return [rect.page for rect in rects]


def test_index_basics(sample_index: DocumentIndex) -> None:
    assert sample_index.page_count == 4
    assert sample_index.page_size(1) == pytest.approx((595.0, 842.0), abs=1)
    assert [sample_index.has_text(p) for p in range(1, 5)] == [True, True, False, True]


def test_exact_quote_on_one_line(sample_index: DocumentIndex) -> None:
    result = locate(sample_index, "Quarterly revenue grew by seven percent while costs fell.")
    assert result.status == "found"
    assert result.score == 100.0
    assert result.page == 1
    assert len(result.rects) == 1
    rect = result.rects[0]
    assert 70 <= rect.x0 < rect.x1 <= 400
    assert 120 < rect.y0 < rect.y1 < 140  # third line, baseline at y=132


def test_line_end_hyphen_is_joined(sample_index: DocumentIndex) -> None:
    result = locate(sample_index, "real documents with carefully hyphenated words")
    assert result.status == "found"
    assert result.score == 100.0
    assert len(result.rects) == 2
    assert result.rects[0].y1 <= result.rects[1].y0 + 1


def test_ligatures_are_expanded(sample_index: DocumentIndex) -> None:
    result = locate(sample_index, "the final flight of the field trip left from the office")
    assert result.status == "found"
    assert result.score == 100.0
    assert "\ufb01nal" in result.matched_text


def test_sentence_across_page_break(sample_index: DocumentIndex) -> None:
    result = locate(sample_index, f"{PAGE_BREAK_BEFORE} {PAGE_BREAK_AFTER}")
    assert result.status == "found"
    assert _pages(result.rects) == [1, 2]
    assert result.page == 1


def test_loose_quote_is_found(sample_index: DocumentIndex) -> None:
    quote = (
        "\u201cAlignment engines must survive REAL documents with carefully hyphenated words\u201d"
    )
    result = locate(sample_index, quote.replace("must ", ""))
    assert result.status == "found"
    assert 80 <= result.score < 100
    assert result.page == 1


def test_elided_quote_spans_first_to_last_part(sample_index: DocumentIndex) -> None:
    result = locate(sample_index, "Alignment engines must survive \u2026 costs fell.")
    assert result.status == "found"
    assert len(result.rects) == 3
    assert result.matched_text.startswith("Alignment engines")
    assert result.matched_text.endswith("costs fell.")  # the full stop the quote ends with


def test_page_range_restricts_search(sample_index: DocumentIndex) -> None:
    assert locate(sample_index, REPEATED, pages=(1, 2)).page == 2
    assert locate(sample_index, REPEATED, pages=(3, 4)).page == 4
    assert locate(sample_index, REPEATED, pages=(4, 99)).page == 4  # clamped
    assert locate(sample_index, PAGE_BREAK_AFTER, pages=(4, 4)).status == "no_match"


def test_quote_found_in_two_places_is_ambiguous(sample_index: DocumentIndex) -> None:
    assert locate(sample_index, REPEATED).status == "no_match"


def test_page_without_text(sample_index: DocumentIndex) -> None:
    assert locate(sample_index, REPEATED, pages=(3, 3)).status == "no_text_layer"


def test_unrelated_quote_is_not_guessed(sample_index: DocumentIndex) -> None:
    result = locate(sample_index, "The committee approved the budget for the new hospital wing.")
    assert result.status == "no_match"
    assert result.rects == ()
    assert result.matched_text == ""
    assert result.page is None


@pytest.mark.parametrize("quote", ["", "   ", "...", "\u2014"])
def test_empty_quotes(sample_index: DocumentIndex, quote: str) -> None:
    assert locate(sample_index, quote).status == "no_match"


def test_closing_punctuation_is_highlighted_only_when_quoted(sample_index: DocumentIndex) -> None:
    with_stop = locate(sample_index, "Quarterly revenue grew by seven percent while costs fell.")
    without = locate(sample_index, "Quarterly revenue grew by seven percent while costs fell")
    assert with_stop.matched_text.endswith("costs fell.")
    assert without.matched_text.endswith("costs fell")
    assert with_stop.rects[-1].x1 > without.rects[-1].x1
    assert with_stop.rects[-1].y0 == without.rects[-1].y0
