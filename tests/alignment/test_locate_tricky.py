"""Cases where a careless locator would highlight the wrong words."""

from __future__ import annotations

import pymupdf
import pytest

from app.alignment.index import DocumentIndex
from app.alignment.locate import locate
from app.pdfs.extract import build_index

HEADER = "Official record of proceedings"
CJK_LINES = [
    "第二十八條雇主因歇業、清算或",
    "宣告破產，勞工本於勞動契約所積欠之工資。",
]


def _page(doc: pymupdf.Document, lines: list[str], fontname: str = "helv") -> None:
    page = doc.new_page()
    for number, line in enumerate(lines):
        page.insert_text((72, 80 + 16 * number), line, fontsize=11, fontname=fontname)


@pytest.fixture(scope="module")
def tricky_index(tmp_path_factory: pytest.TempPathFactory) -> DocumentIndex:
    doc = pymupdf.open()
    _page(
        doc,
        [
            HEADER,
            "Revenue was 5 million in 2021 and costs were 3 million in total.",
            "The committee met in the morning.",
        ],
    )
    _page(
        doc,
        [
            HEADER,
            "Revenue was 6 million in 2022 and costs were 4 million in total.",
            "The minister answered the question about roads.",
        ],
    )
    _page(doc, CJK_LINES, fontname="china-t")
    path = tmp_path_factory.mktemp("tricky") / "tricky.pdf"
    doc.save(path)
    doc.close()
    return build_index(path)


def test_elided_quote_pairs_with_its_own_opening(tricky_index: DocumentIndex) -> None:
    result = locate(tricky_index, f"{HEADER} ... about roads.")
    assert result.status == "found"
    assert {rect.page for rect in result.rects} == {2}
    assert len(result.rects) == 3


def test_other_figures_are_not_the_quoted_sentence(tricky_index: DocumentIndex) -> None:
    quote = "Revenue was 7 million in 2023 and costs were 3 million in total."
    assert locate(tricky_index, quote).status == "no_match"
    exact = locate(tricky_index, "Revenue was 6 million in 2022 and costs were 4 million")
    assert exact.page == 2


def test_repeated_text_needs_a_page_range(tricky_index: DocumentIndex) -> None:
    assert locate(tricky_index, HEADER).status == "no_match"
    assert locate(tricky_index, HEADER, pages=(2, 2)).page == 2


def test_cjk_joined_across_lines(tricky_index: DocumentIndex) -> None:
    quote = "清算或宣告破產,勞工本於"
    result = locate(tricky_index, quote)
    assert result.status == "found"
    assert result.score == 100.0
    assert [rect.page for rect in result.rects] == [3, 3]


def test_cjk_quote_with_a_changed_character(tricky_index: DocumentIndex) -> None:
    quote = "雇主因歇業、清算或宣告破產，勞工本於勞動合約"
    result = locate(tricky_index, quote)
    assert result.status == "found"
    assert 80 <= result.score < 100
    assert result.page == 3


def test_short_unrelated_cjk_quote(tricky_index: DocumentIndex) -> None:
    assert locate(tricky_index, "立法院院會紀錄").status == "no_match"
