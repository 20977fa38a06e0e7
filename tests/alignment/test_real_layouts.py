"""Repeated text and CJK compatibility forms on the team's real PDFs (skipped where absent)."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pymupdf
import pytest

from app.alignment.locate import ChunkHint, locate
from app.pdfs.extract import build_index

pytestmark = pytest.mark.shared_pdfs

FAA = "pdfplumber_federal-register-2020-17221.pdf"
FOIA = "Under the Freedom of Information Act (FOIA) (5 U.S.C."


def _chunk_around(pdf: Path, page: int, text: str, reach: int = 1200) -> ChunkHint:
    """A chunk as an ingestion pipeline would cut it: the page's text around ``text``."""
    with pymupdf.open(pdf) as doc:
        words = " ".join(doc[page - 1].get_text("text").split())
    at = words.find(text)
    assert at >= 0
    chunk = words[max(0, at - reach) : at + reach]
    return ChunkHint(chunk, chunk.find(text))


def test_boilerplate_on_first_and_last_page_placed_by_chunk(shared_pdfs: Path) -> None:
    """The FOIA paragraph is printed on page 1 and again on page 15 of the AD notice."""
    index = build_index(shared_pdfs / FAA)
    assert locate(index, FOIA).status == "no_match"
    for page in (1, 15):
        hint = _chunk_around(shared_pdfs / FAA, page, "Under the Freedom of Information Act")
        result = locate(index, FOIA, None, hint)
        assert result.status == "found"
        assert {rect.page for rect in result.rects} == {page}


def test_taiwan_bill_quoted_in_compatibility_form(shared_pdfs: Path) -> None:
    """The bill prints "第8 屆" and full-width punctuation; NFKC pipelines quote it without."""
    index = build_index(shared_pdfs / "twly_bill_LCEWA01_080202_00016_zh-hant.pdf")
    quote = unicodedata.normalize("NFKC", "立法院第8屆第2會期第2次會議議案關係文書")
    assert locate(index, quote).status == "no_match"  # the running header of every page
    result = locate(index, quote, (1, 1))
    assert result.status == "found"
    assert result.page == 1
    compat = unicodedata.normalize("NFKC", "針對我國企業關廠歇業、企業主聲請破產，礙於相關法令規定")
    assert "," in compat  # the full-width comma, as ASCII
    across = locate(index, compat)
    assert across.status == "found"
    assert len(across.rects) == 2  # the sentence crosses a line break
