"""The statement lines a computed figure is made of. Pure.

An answer computed from a chunk ("The quick ratio was about 0.54", "inventory turned 2.7 times")
shares almost no words with the lines it was computed from ("Cash and cash equivalents",
"Accounts receivable", "Total current liabilities"), so word overlap alone highlighted nothing,
or the wrong rows. When the question or the answer names a standard financial measure, the
lines of its textbook definition count as if the answer had named them. The table holds the
measures' usual names and the usual captions of their operands in financial statements; it is
knowledge of the measures, not of any document.
"""

from __future__ import annotations

import re

_MEASURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        r"quick ratio|acid[- ]test",
        (
            "cash and cash equivalents",
            "marketable securities",
            "short-term investments",
            "receivables",
            "total current liabilities",
        ),
    ),
    (r"current ratio|working capital", ("total current assets", "total current liabilities")),
    (
        r"inventory turnover|days? (?:of )?inventory|inventory days",
        ("cost of sales", "cost of goods sold", "cost of products sold", "inventories"),
    ),
    (
        r"gross (?:profit )?margin",
        ("gross profit", "net sales", "total revenues", "cost of sales"),
    ),
    (r"operating (?:income |profit )?margin", ("operating income", "net sales", "total revenues")),
    (r"(?:net|profit) margin", ("net income", "net sales", "total revenues")),
    (
        r"ebitda",
        ("operating income", "depreciation and amortization", "net sales", "total revenues"),
    ),
    (r"effective tax rate", ("provision for income taxes", "income before income taxes")),
    (
        r"capital[- ]intensi|capex|capital expenditure",
        (
            "capital expenditures",
            "purchases of property and equipment",
            "total assets",
            "total revenues",
        ),
    ),
    (
        r"free cash ?flow",
        (
            "net cash provided by operating activities",
            "capital expenditures",
            "purchases of property and equipment",
        ),
    ),
    (r"return on (?:total )?assets|\broa\b", ("net income", "total assets")),
    (
        r"return on (?:shareholders'? |stockholders'? )?equity|\broe\b",
        ("net income", "total shareholders equity"),
    ),
    (
        r"debt[- ]to[- ](?:equity|capital)|leverage",
        ("long-term debt", "total debt", "total equity"),
    ),
    (r"interest coverage", ("operating income", "interest expense")),
    (r"payout ratio", ("dividends", "net income")),
    (
        r"days sales outstanding|\bdso\b|receivables? turnover",
        ("accounts receivable", "net sales", "total revenues"),
    ),
    (
        r"days payables? outstanding|\bdpo\b|payables? turnover",
        ("accounts payable", "cost of sales"),
    ),
    (r"asset turnover", ("total revenues", "net sales", "total assets")),
    (r"(?:revenue|sales) growth|growth rate|\bgrew\b|high growth", ("total revenues", "net sales")),
    (r"cash conversion cycle", ("inventories", "accounts receivable", "accounts payable")),
)
_COMPILED = tuple((re.compile(pattern, re.IGNORECASE), lines) for pattern, lines in _MEASURES)


def operand_lines(text: str) -> list[str]:
    """The usual captions of the lines that the measures named in ``text`` are computed from,
    in the table's order, without repeats; empty when ``text`` names none."""
    found: list[str] = []
    for pattern, lines in _COMPILED:
        if pattern.search(text):
            found += [line for line in lines if line not in found]
    return found
