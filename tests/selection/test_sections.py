"""Headings and the sections under them (app.selection.sections)."""

from __future__ import annotations

from app.selection.sections import Line, is_heading, sections
from app.selection.terms import read


def line(text: str) -> Line:
    return Line(text, *read(text, "english"))


def test_short_lines_without_sentence_endings_or_figures_are_headings() -> None:
    for text in ("Regional Operations", "Fiscal 2023 Outlook", "(In thousands)", "Store Update"):
        assert is_heading(line(text)), text
    for text in (
        "Page 4 of 15",  # figures
        "December 31,",  # a clause
        "Sales rose.",  # a sentence
        "Europe 3,142,308 2,987,114",  # a table row
        "• Net sales of $6.1 billion in the current year, an increase of 7%;",
    ):
        assert not is_heading(line(text)), text


def test_a_heading_run_gives_its_terms_to_the_lines_below_until_the_next_heading() -> None:
    lines = [
        line("Net sales were flat."),
        line("Segment EBITDA"),
        line("(In thousands)"),
        line("Europe 3,142,308 2,987,114"),
        line("Asia 402,118 388,940"),
        line("Online Channel"),
        line("Net sales fell 12%."),
    ]
    headings, context = sections(lines)
    assert headings == [False, True, True, False, False, True, False]
    assert context[0] == set()
    assert context[3] == context[4] == read("Segment EBITDA (In thousands)", "english").terms
    assert context[6] == read("Online Channel", "english").terms


def test_a_cjk_title_of_some_ten_words_is_a_heading() -> None:
    # Read in character bigrams, the bill's table title holds 18 terms: counted as English
    # words it was no heading, and once it was its own sentence the selector chose it alone.
    title = Line(
        "勞動基準法第二十八條條文修正草案對照表", *read("勞動基準法第二十八條條文修正草案對照表")
    )
    assert is_heading(title)
    row = "第二十八條 雇主因歇業、清算或宣告破產，勞工本於勞動契約所生之工資有優先受清償之權利。"
    assert not is_heading(Line(row, *read(row)))
