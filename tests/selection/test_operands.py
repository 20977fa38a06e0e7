"""The statement lines of a named financial measure (app/selection/operands.py)."""

from __future__ import annotations

import pytest

from app.selection.operands import operand_lines
from app.selection.selection import is_page_furniture


def test_a_named_measure_gives_its_lines() -> None:
    assert operand_lines("Has AMCOR's quick ratio improved?") == [
        "cash and cash equivalents",
        "marketable securities",
        "short-term investments",
        "receivables",
        "total current liabilities",
    ]
    assert "inventories" in operand_lines("Calculate the inventory turnover ratio for FY2022")


def test_two_measures_give_both_without_repeats() -> None:
    lines = operand_lines("Compare the gross margin and the operating margin.")
    assert lines.count("net sales") == 1
    assert {"gross profit", "operating income"} <= set(lines)


def test_prose_without_a_measure_gives_nothing() -> None:
    assert operand_lines("The Minister tabled the report on road safety.") == []
    assert operand_lines("The leverage of the committee; rural regrowth") == [
        "long-term debt",
        "total debt",
        "total equity",
    ]  # "leverage" is a measure's name even in prose: the lines only add weight, never force


@pytest.mark.parametrize(
    ("text", "furniture"),
    [
        ("23 Verizon 2022 Annual Report on Form 10-K", True),
        ("Verizon 2022 Annual Report on Form 10-K 76", True),
        ("Annual Report Page 12", True),
        ("Long-term debt 140,676 143,425", False),
        ("Total 1.3 % 13.6 %", False),
        (
            "Net revenues rose 12 percent in the year, driven by higher volumes in all segments",
            False,
        ),
        ("Inventories 11,461 16,047", False),
        # A page number alone or in its count: a caller's footer offered as a sentence.
        ("Page 9 of 15", True),
        ("- 3 -", True),
        ("12", True),
        ("p. 12/40", True),
        ("2022 2021", False),  # a table's header of years
        ("12 14", False),
        ("3. REVPAR is hotel revenue per available room.", False),
    ],
)
def test_page_furniture(text: str, furniture: bool) -> None:
    assert is_page_furniture(text) is furniture
