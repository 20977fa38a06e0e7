"""A quote's CJK edge after a misread character: on an OCR'd Traditional Chinese table the true
sentence had one ideograph wrong near its end ("搞權等" for "質權等"), and its two halves, found
in other columns, out of order, scored better than the sentence itself."""

from __future__ import annotations

from app.alignment.grams import GramTable
from app.alignment.matcher import fuzzy

QUOTE = "債權明訂該債權優先於一切稅捐抵押權質權等"
# Column one holds the statute (the quote's second half, read right); column three the
# explanation, where the whole sentence stands with one character misread.
TEXT = (
    "第二十八條雇主因歇業清算或宣告破產本於勞動契約所積欠之工資未滿六個月部分有最"
    "優先於一切稅捐抵押權質權等擔保物權"
    + "現行條文雇主應按其當月僱用勞工投保薪資總額及規定之費率繳納一定數額之積欠工資墊償基金" * 8
    + "所積工資資遣費退休金等債權明訂該債權優先於一切稅捐抵押權搞權等擔保物權及一切債權受清償"
)


def test_the_sentence_with_one_misread_ideograph_beats_its_halves_found_elsewhere() -> None:
    best = fuzzy(TEXT, GramTable(TEXT), QUOTE, 0, len(TEXT))[0]
    assert len(best.segments) == 1
    start, end = best.segments[0]
    assert TEXT[start:end] == "債權明訂該債權優先於一切稅捐抵押權搞權等"
    assert best.score >= 90
