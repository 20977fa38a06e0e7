"""Line-numbered pages (transcripts, filings, code listings): numbers in the margin column."""

from __future__ import annotations

import pymupdf
import pytest

from app.alignment.geometry import LineRect
from app.alignment.index import DocumentIndex
from app.alignment.locate import locate
from app.alignment.margins import MarginNumber, hide, strip_numbers
from app.alignment.text import normalize_text
from app.pdfs.extract import build_index

TRANSCRIPT = [
    "IN THE SUPREME COURT OF THE UNITED STATES",
    "",
    "MICHAEL A. KNOWLES, Warden, Petitioner",
    "v. No. 07-1315",
    "",
    "Washington, D.C.",
    "",
    "The above-entitled matter came on for oral",
    "argument before the Supreme Court of the United States",
    "at 1:01 p.m.",
    "APPEARANCES:",
    "STEVEN E. MERCER, ESQ., Deputy Attorney General, Los",
    "Angeles, Cal.; on behalf of the Petitioner.",
]
PITCH = 26.0
TOP = 100.0


def _numbered_page(doc: pymupdf.Document, lines: list[str], same_line_call: bool) -> None:
    page = doc.new_page()
    for number, text in enumerate(lines, start=1):
        y = TOP + PITCH * (number - 1)
        if same_line_call:
            # One text run per line: extractors see "12   The above-entitled ..." as one line.
            page.insert_text((90, y), f"{number:>2}      {text}", fontsize=11, fontname="cour")
        else:
            page.insert_text((90, y), f"{number:>2}", fontsize=11, fontname="cour")
            if text:
                page.insert_text((140, y), text, fontsize=11, fontname="cour")


@pytest.fixture(scope="module", params=[False, True], ids=["own-lines", "same-line"])
def numbered_index(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> DocumentIndex:
    doc = pymupdf.open()
    _numbered_page(doc, TRANSCRIPT, same_line_call=request.param)
    page = doc.new_page()  # an ordinary page: a numbered list is not line numbering
    for i, text in enumerate(["1 apple", "3 pear", "2 plum", "7 fig", "4 kiwi"]):
        page.insert_text((72, 100 + 20 * i), text, fontsize=11)
    path = tmp_path_factory.mktemp("margins") / "numbered.pdf"
    doc.save(path)
    doc.close()
    return build_index(path)


def _y_centre(rect: LineRect) -> float:
    return (rect.y0 + rect.y1) / 2


def test_margin_column_is_detected_and_left_out_of_the_skeleton(
    numbered_index: DocumentIndex,
) -> None:
    numbers = numbered_index.margin_numbers
    assert [(number.page, number.value) for number in numbers] == [
        (1, value) for value in range(1, len(TRANSCRIPT) + 1)
    ]
    assert "fororalargumentbefore" in numbered_index.norm.text
    assert "1apple" in numbered_index.norm.text  # the list on page 2 keeps its numbers


def test_quote_without_the_numbers_reads_across_lines(numbered_index: DocumentIndex) -> None:
    result = locate(numbered_index, "came on for oral argument before the Supreme Court")
    assert result.status == "found"
    assert result.score == 100.0
    assert len(result.rects) == 2
    assert all(rect.x0 > 120 for rect in result.rects)  # no margin number highlighted


def test_quote_with_interleaved_numbers_highlights_them(numbered_index: DocumentIndex) -> None:
    result = locate(numbered_index, "7 8 The above-entitled matter came on for oral 9 argument")
    assert result.status == "found"
    assert result.score == 100.0
    margin = sorted(_y_centre(rect) for rect in result.rects if rect.x1 < 120)
    assert len(margin) == 3  # 7 (an empty numbered line), 8 and 9
    expected = [TOP + PITCH * (n - 1) for n in (7, 8, 9)]
    assert margin == pytest.approx(expected, abs=PITCH / 2)
    text = [rect for rect in result.rects if rect.x0 > 120]
    assert len(text) == 2


def test_edited_quote_with_numbers(numbered_index: DocumentIndex) -> None:
    result = locate(
        numbered_index, "12 STEVEN E. MERCER, ESQ., Deputy Attorney General, 13 Angeles"
    )
    assert result.status == "found"
    assert result.page == 1
    assert any(rect.x1 < 120 for rect in result.rects)


def test_real_numbers_in_a_quote_are_kept(numbered_index: DocumentIndex) -> None:
    result = locate(numbered_index, "v. No. 07-1315")
    assert result.status == "found"
    assert result.score == 100.0
    assert all(rect.x0 > 120 for rect in result.rects)


def test_strip_and_hide_helpers() -> None:
    stripped, removed = strip_numbers(
        "11 12 The matter came 13 on 2009 for 40", frozenset({11, 12, 13})
    )
    assert removed == [11, 12, 13]
    assert normalize_text(stripped) == "themattercameon2009for40"
    number = MarginNumber(page=1, value=7, start=3, end=4, y_centre=0.0, height=10.0)
    assert hide("ab\n7\ncd", (number,)) == "ab\n \ncd"
