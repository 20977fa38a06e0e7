"""CJK sentences end at 。！？ and at real paragraph breaks, not at every printed line's end
that a chunker stored as a blank line."""

from __future__ import annotations

from .test_sentences import texts as _texts


def test_a_blank_line_mid_sentence_does_not_cut_a_word() -> None:
    text = "導致勞工無法取得應有的工資、資遣\n\n費以及退休金等債權，\n\n以致生活陷入困難。鑒於此。"
    assert _texts(text) == [
        "導致勞工無法取得應有的工資、資遣\n\n費以及退休金等債權，\n\n以致生活陷入困難。",
        "鑒於此。",
    ]


def test_lines_joined_without_break_split_at_terminators() -> None:
    text = "雇主因歇業、清算或宣告破產，有最優先受清償之權！是否有當？敬請公決。"
    assert _texts(text) == [
        "雇主因歇業、清算或宣告破產，有最優先受清償之權！",
        "是否有當？",
        "敬請公決。",
    ]


def test_paragraph_breaks_after_a_colon_or_a_terminator_still_end() -> None:
    assert _texts("說明：\n\n一、為保障勞工權益。\n\n二、近來發生") == [
        "說明：",
        "一、為保障勞工權益。",
        "二、近來發生",
    ]


def test_latin_blank_lines_still_end_sentences() -> None:
    assert _texts("Revenue\n\nOperating income rose") == ["Revenue", "Operating income rose"]
