"""Running headers and footers copied into a quote across a page break."""

from __future__ import annotations

import pymupdf
import pytest

from app.alignment.furniture import MIN_RUN, strip_furniture
from app.alignment.index import DocumentIndex
from app.alignment.locate import LineRect, locate
from app.alignment.text import normalize_text
from app.pdfs.extract import build_index

HEADER = "Annual Report of the Example Society"
FOOTER = "Example Society Review"
BODY = {
    1: ["The society met four times during the year under review."],
    2: [
        "Membership grew steadily throughout the spring months.",
        "At the autumn meeting the treasurer explained that the",
    ],
    3: [
        "accounts had been audited by an independent firm.",
        "The library moved to a larger room in the town hall.",
    ],
    4: ["The next annual meeting will be held in March."],
}


@pytest.fixture(scope="module")
def report_index(tmp_path_factory: pytest.TempPathFactory) -> DocumentIndex:
    doc = pymupdf.open()
    for number, lines in BODY.items():
        page = doc.new_page()
        # Furniture first in the content stream, as many generators write it: PyMuPDF then
        # reads it before the page's body text.
        page.insert_text((72, 810), f"{FOOTER} Page {number}", fontsize=9)
        page.insert_text((72, 40), HEADER, fontsize=9)
        top = 120 if number != 2 else 760
        for i, line in enumerate(lines):
            page.insert_text((72, top + 16 * i - (16 if number == 2 else 0)), line, fontsize=11)
    path = tmp_path_factory.mktemp("furniture") / "report.pdf"
    doc.save(path)
    doc.close()
    return build_index(path)


def _bands(index: DocumentIndex, rects: tuple[LineRect, ...]) -> list[tuple[int, str]]:
    height = index.page_size(1)[1]
    return [
        (rect.page, "header" if rect.y1 < 60 else "footer" if rect.y0 > height - 60 else "body")
        for rect in rects
    ]


def test_headers_and_footers_are_found(report_index: DocumentIndex) -> None:
    lines = report_index.furniture
    assert {(line.page, line.top) for line in lines} == {
        (page, top) for page in BODY for top in (True, False)
    }
    assert report_index.furniture_pattern


def test_quote_across_the_break_with_footer_and_header(report_index: DocumentIndex) -> None:
    quote = (
        "the treasurer explained that the Example Society Review Page 2 "
        "Annual Report of the Example Society accounts had been audited"
    )
    result = locate(report_index, quote)
    assert result.status == "found"
    assert _bands(report_index, result.rects) == [
        (2, "body"),
        (2, "footer"),
        (3, "header"),
        (3, "body"),
    ]


def test_quote_starting_with_the_page_break(report_index: DocumentIndex) -> None:
    quote = (
        "Example Society Review Page 2 Annual Report of the Example Society "
        "accounts had been audited by an independent firm."
    )
    result = locate(report_index, quote)
    assert result.status == "found"
    assert _bands(report_index, result.rects) == [(2, "footer"), (3, "header"), (3, "body")]


def test_quote_without_furniture_is_untouched(report_index: DocumentIndex) -> None:
    result = locate(report_index, "The library moved to a larger room in the town hall.")
    assert result.score == 100.0
    assert _bands(report_index, result.rects) == [(3, "body")]


def test_strip_furniture_positions() -> None:
    pattern = "(?:annualreportoftheexamplesociety|examplesocietyreviewpage\\d+)+"
    quote = normalize_text(f"{HEADER} one two {FOOTER} Page 12 {HEADER} three four five")
    rest, removed = strip_furniture(quote, pattern)
    assert rest == "onetwothreefourfive"
    assert [run.where for run in removed] == ["lead", "inner"]
    assert removed[1].text == normalize_text(f"{FOOTER} Page 12 {HEADER}")
    assert removed[1].mostly_after
    trailing, runs = strip_furniture(normalize_text(f"one two {FOOTER} Page 3"), pattern)
    assert (trailing, [run.where for run in runs]) == ("onetwo", ["trail"])


def test_short_furniture_words_stay_in_the_quote() -> None:
    pattern = "(?:page\\d+|review)+"
    quote = normalize_text("see the review on page 4 for details")
    assert len(normalize_text("review")) < MIN_RUN
    assert strip_furniture(quote, pattern) == (quote, [])
