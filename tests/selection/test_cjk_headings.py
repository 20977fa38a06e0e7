"""A CJK table's title and column headings, and a title over a paragraph, are sentences of their
own, not the start of the first row's sentence (issue 33: the Traditional Chinese bill's whole
first highlight lit the table's title and headings); a CJK sentence wrapped at a printed line's
end, by a line break or a blank line, still reads on, and English is untouched."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .test_sentences import texts as _texts

# The bill's comparison table as the chunker stores it: the title, the letter-spaced heading row
# and each table row joined with a line break, the cell's paragraphs with a blank line.
BILL_TABLE = (
    "勞動基準法第二十八條條文修正草案對照表\n"
    "修 正 條 文 現 行 條 文 說 明\n"
    "第二十八條 雇主因歇業、清算或宣告破產，勞工本於勞動契約所生之工資、資遣費、退休金等債權，"
    "有優先於一切稅捐、抵押權、質權等擔保物權及一切債權受清償之權利。\n\n"
    "前項費率，由中央主管機關於萬分之十範圍內擬訂，報請行政院核定之。"
)


def test_the_bills_table_title_and_headings_end_their_own_sentences() -> None:
    assert _texts(BILL_TABLE) == [
        "勞動基準法第二十八條條文修正草案對照表",
        "修 正 條 文 現 行 條 文 說 明",
        "第二十八條 雇主因歇業、清算或宣告破產，勞工本於勞動契約所生之工資、資遣費、退休金等債權，"
        "有優先於一切稅捐、抵押權、質權等擔保物權及一切債權受清償之權利。",
        "前項費率，由中央主管機關於萬分之十範圍內擬訂，報請行政院核定之。",
    ]


def test_a_generated_table_title_heading_row_and_rows() -> None:
    text = (
        "一一二年度歲出預算對照表\n"
        "項目 金額 說明\n"
        "人事費 一百二十萬元 依實際員額編列\n"
        "業務費 五十萬元 較上年度增加十萬元"
    )
    sentences = _texts(text)
    assert sentences[:2] == ["一一二年度歲出預算對照表", "項目 金額 說明"]
    assert sentences[2].startswith("人事費")


def test_a_letterhead_over_a_paragraph_after_a_blank_line_is_not_its_first_sentence() -> None:
    text = (
        "院總第1121 號 委員提案第13877 號\n\n"
        "案由：本院委員李昆澤等28 人，針對我國企業關廠歇業、企業主聲請破產，"
        "導致勞工無法取得應有的工資，以致生活陷入困難。"
    )
    assert _texts(text) == [
        "院總第1121 號 委員提案第13877 號",
        "案由：本院委員李昆澤等28 人，針對我國企業關廠歇業、企業主聲請破產，"
        "導致勞工無法取得應有的工資，以致生活陷入困難。",
    ]


def test_printed_lines_wrapped_with_a_line_break_read_on() -> None:
    # Every printed line a line (pdftotext, many upstream chunkers): full lines, then the last.
    text = (
        "針對我國企業關廠歇業、企業主聲請破產，礙於相關法\n"
        "令規定，抵押權債權的順位高於工資債權的順位，導致\n"
        "勞工無法取得應有的工資、資遣費以及退休金等勞動契\n"
        "約產生之債權。鑒於此。"
    )
    assert _texts(text) == [text[: text.index("鑒")], "鑒於此。"]


def test_a_full_line_before_one_with_figures_reads_on() -> None:
    # Half-width figures print narrower: counted in characters, the line after looks wider.
    text = (
        "本院委員李昆澤、趙天麟、邱志偉、許智傑、陳歐珀等人提\n"
        "案第13877 號及第1121 號，2012 年10 月4 日印發。"
    )
    assert _texts(text) == [text]


def test_a_blank_line_at_a_full_lines_end_reads_on() -> None:
    text = (
        "導致勞工無法取得應有的工資、資遣費以及退休金等勞動契\n\n約產生之債權，以致生活陷入困難。"
    )
    assert _texts(text) == [text]


def test_korean_words_are_not_a_heading_row() -> None:
    # Korean spaces its words: a full line of short ones wraps like any other.
    text = "그 밖에 이 법이 정한 바에 따라 관할 관청\n이 이를 정한다."
    assert _texts(text) == [text]


def test_english_line_breaks_are_unchanged() -> None:
    assert _texts("Net revenue rose as stores\nopened across the region. Costs fell.") == [
        "Net revenue rose as stores\nopened across the region.",
        "Costs fell.",
    ]
    assert _texts("Consolidated Statements\nof Operations for the year") == [
        "Consolidated Statements\nof Operations for the year"
    ]


_IDEOGRAPHS = st.text(
    alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FA5), min_size=1
)


@given(
    words=st.lists(_IDEOGRAPHS, min_size=2, max_size=12),
    width=st.integers(min_value=4, max_value=30),
    joiner=st.sampled_from(["\n", "\n\n"]),
)
def test_a_sentence_cut_into_equal_printed_lines_is_one_sentence(
    words: list[str], width: int, joiner: str
) -> None:
    prose = "".join(words) + "。"
    lines = [prose[i : i + width] for i in range(0, len(prose), width)]
    # A last line of only the full stop would end on it: the line before stops on an ideograph.
    text = joiner.join(lines)
    assert _texts(text) == [text]


@given(
    title=st.text(
        alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FA5), min_size=1, max_size=8
    ),
    body=st.text(
        alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FA5), min_size=12, max_size=60
    ),
)
def test_a_title_narrower_than_the_block_under_it_is_its_own_sentence(
    title: str, body: str
) -> None:
    # A blank line under a narrow line ends it; a single line break does not (next test).
    assert _texts(f"{title}\n\n{body}。") == [title, f"{body}。"]


@pytest.mark.parametrize(
    "text",
    [
        "今日は天気が良いので\n公園に行って子供たちと一緒にお弁当を食べて、夕方まで遊びました。",
        "我们认为\n这个方案的成本比其他方案更加低廉，而且实施起来也更加简单方便。",
    ],
)
def test_a_hard_wrapped_line_that_breaks_early_reads_on(text: str) -> None:
    # Plain text keeps its line breaks, and text wraps early around a figure: a narrower line
    # before a single break is no title.
    assert _texts(text) == [text]


def test_the_bills_table_chunk_starts_with_its_title(shared_pdfs: Path) -> None:
    from app.pdfs.chunking import chunk_pdf
    from app.selection.sentences import split_sentences

    chunks, _ = chunk_pdf(shared_pdfs / "twly_bill_LCEWA01_080202_00016_zh-hant.pdf")
    table = next(c for c in chunks if "對照表" in c.text)
    first = [s.text for s in split_sentences(table.text)[:3]]
    assert first[0].endswith("對照表")
    assert first[1].replace(" ", "") == "修正條文現行條文說明"
    assert first[2].startswith("第二十八條")
