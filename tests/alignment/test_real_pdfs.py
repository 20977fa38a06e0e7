"""Spot checks on the team's real-PDF corpus (skipped where it is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.alignment.locate import locate
from app.pdfs.extract import build_index

pytestmark = pytest.mark.shared_pdfs


def test_two_column_paper_with_ligatures_and_hyphens(shared_pdfs: Path) -> None:
    index = build_index(shared_pdfs / "pdfjs_tracemonkey.pdf")
    quote = (
        "Dynamic languages such as JavaScript are more difficult to compile than "
        "statically typed ones."
    )
    result = locate(index, quote)
    assert result.status == "found"
    assert result.page == 1
    assert len(result.rects) == 2
    loose = locate(
        index,
        "dynamic languages such as JavaScript are harder to compile than statically typed ones",
    )
    assert loose.status == "found"
    assert loose.rects[0] == result.rects[0]
    assert locate(index, quote, pages=(2, 14)).status == "no_match"


def test_scan_without_text_layer(shared_pdfs: Path) -> None:
    index = build_index(shared_pdfs / "ocrmypdf_linn_scan-no-text.pdf")
    assert locate(index, "anything at all").status == "no_text_layer"


def test_sentence_continuing_in_next_column_past_figures(shared_pdfs: Path) -> None:
    index = build_index(shared_pdfs / "pdfjs_tracemonkey.pdf")
    quote = "In Section 7 we evaluate our dynamic compiler based on a set of industry benchmarks."
    result = locate(index, quote)
    assert result.status == "found"
    assert [rect.page for rect in result.rects] == [2, 2]
    left, right = result.rects
    assert left.x1 < 300 < right.x0  # bottom of the left column, then top of the right one
    assert "Figure" not in result.matched_text


def test_traditional_chinese_bill(shared_pdfs: Path) -> None:
    index = build_index(shared_pdfs / "twly_bill_LCEWA01_080202_00016_zh-hant.pdf")
    quote = "然而，實務上工資債權並不是最優先順位，依相關法令規定土地增值稅、不動產抵押權"
    # The bill repeats its explanation (pages 1 and 3): without a page range it is ambiguous.
    assert locate(index, quote).status == "no_match"
    result = locate(index, quote, pages=(3, 4))
    assert result.status == "found"
    assert result.score == 100.0
    assert len(result.rects) >= 3  # the cell wraps every dozen characters
    assert {rect.page for rect in result.rects} == {3}


def test_french_minutes_without_accents_or_case(shared_pdfs: Path) -> None:
    index = build_index(shared_pdfs / "pdfplumber_sainte-adele_2023-06-20-PV_fr.pdf")
    result = locate(index, "attendu que le batiment est protege en vertu du reglement")
    assert result.status == "found"
    assert result.matched_text.startswith("ATTENDU QUE le bâtiment est protégé")
