"""Spot checks on the team's real-PDF corpus (skipped where it is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.alignment.index import build_index
from app.alignment.locate import locate

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
