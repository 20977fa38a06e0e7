"""Figures in one canonical form, so an answer's "$3.1 million" or "(54,979)" meets the table's
"3,142,308" or "-54,979" as the same term. Pure.

What is kept: the magnitude, without thousands separators, leading zeros or trailing decimal
zeros ("3,142,308" -> "3142308", "900.0" -> "900", "0.50" -> "0.5"), and "%" for a percentage
("36%", "36 %", "36 percent", "36 per cent", "36 pour cent" -> "36%"). What is dropped: currency
symbols, and the sign. A sign is written so many ways ("-", "−", parentheses in financial
tables, or words: "a loss of", "declined") that an answer and its source rarely agree on it,
while the magnitude they do agree on is what identifies the figure.

A figure is *specific* when it has a fraction or a percent sign (then even "5%" identifies
something), and a *date* when it is a year (1900-2100) or stands next to a month name ("January
28, 2023", "28 janvier"): dates match like any term, but they are not the figures an answer
claims, so they do not on their own make a sentence evidence.

Separators: "," and "." followed by groups of exactly three digits are thousands separators
("1,234,567", "1.234.567"), as are the no-break and thin spaces French uses ("3 142 308"); a
single "," before one, two or four-plus digits is a decimal comma ("12,5"); when both appear,
the last one is the decimal point ("1,234.5", "1.234,5").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# A digit run with separators inside it; the spaces are U+00A0, U+202F and U+2009.
NUMBER = re.compile(r"\d+(?:[.,\u00a0\u202f\u2009]\d+)*")
_DIGIT = re.compile(r"\d")  # what every NUMBER starts with
PERCENT_AFTER = re.compile(r"\s?(?:%|percent\b|per\s?cent\b|pour\s?cent\b|pct\b)", re.IGNORECASE)
_GROUP_SPACES = "\u00a0\u202f\u2009"
MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|"
    "janvier|fevrier|février|mars|avril|mai|juin|juillet|aout|août|septembre|octobre|novembre|"
    "decembre|décembre"
)
_MONTH_BEFORE = re.compile(rf"\b(?:{MONTHS})\.?\s*$", re.IGNORECASE)
_MONTH_AFTER = re.compile(rf"\s*(?:{MONTHS})\b", re.IGNORECASE)


@dataclass(frozen=True)
class Figure:
    term: str
    specific: bool  # written with a fraction or a percent sign
    date: bool  # a year, or a day next to a month name

    @property
    def telling(self) -> bool:
        """Worth matching at all: a lone one-digit integer ("(1)" footnote marks, list numbers)
        is not."""
        return self.specific or len(self.term) > 1

    @property
    def claimed(self) -> bool:
        """A figure an answer states, as opposed to a date it mentions."""
        return self.telling and not self.date


def _is_grouped(parts: list[str]) -> bool:
    """Do ``parts`` read as thousands groups: 1-3 digits, then groups of exactly three?"""
    return 1 <= len(parts[0]) <= 3 and all(len(p) == 3 for p in parts[1:])


# Memoised: a chunk's figures repeat (its years, its columns' totals), and the same few
# thousand recur across a document.
@lru_cache(maxsize=8192)
def split_decimal(raw: str) -> tuple[str, str]:
    """The integer digits and the fraction digits of a raw figure."""
    for space in _GROUP_SPACES:
        raw = raw.replace(space, "")
    commas, dots = raw.count(","), raw.count(".")
    if commas and dots:
        point = max(raw.rfind(","), raw.rfind("."))
        whole, fraction = raw[:point], raw[point + 1 :]
        return whole.replace(",", "").replace(".", ""), fraction
    separator = "," if commas else "." if dots else ""
    if not separator:
        return raw, ""
    parts = raw.split(separator)
    # "12.5" is a decimal; "1,234" and "1.234.567" are grouped; "1,5" is a decimal comma.
    if _is_grouped(parts) and (separator == "," or len(parts) > 2):
        return "".join(parts), ""
    if len(parts) == 2:
        return parts[0], parts[1]
    # "1.2.3" (a section number, a version): keep its digits together, no decimal.
    return "".join(parts), ""


@lru_cache(maxsize=8192)
def canonical(raw: str, percent: bool = False) -> str:
    """One figure's canonical term: ``canonical("3,142,308") == "3142308"``."""
    whole, fraction = split_decimal(raw)
    whole = whole.lstrip("0") or "0"
    fraction = fraction.rstrip("0")
    term = f"{whole}.{fraction}" if fraction else whole
    return term + "%" if percent else term


def is_date(text: str, start: int, end: int, term: str) -> bool:
    if term.isdigit() and len(term) == 4 and 1900 <= int(term) <= 2100:
        return True
    return _month_before(text, start) or _MONTH_AFTER.match(text, end) is not None


def _month_before(text: str, start: int) -> bool:
    """``_MONTH_BEFORE`` searched in the 12 characters before ``start``, tried only when they
    end on a letter (before an optional "." and white space), as they must to end on a month
    name: the search tries forty names at each of the 12 places, and most figures follow a
    digit, a sign or a space (a table's columns)."""
    window = max(0, start - 12)
    tail = text[window:start].rstrip()
    if tail[-1:] == ".":
        tail = tail[:-1]
    if not tail[-1:].isalpha():
        return False
    return _MONTH_BEFORE.search(text, window, start) is not None


def figures(text: str) -> tuple[list[Figure], str]:
    """The figures of ``text``, and the text with every figure and its percent word blanked out
    for the word tokenizer."""
    if not _DIGIT.search(text):
        return [], text  # most sentences of prose: one scan, nothing to build
    found: list[Figure] = []
    pieces: list[str] = []
    last = 0
    for match in NUMBER.finditer(text):
        if match.start() < last:
            continue
        after = PERCENT_AFTER.match(text, match.end())
        end = after.end() if after else match.end()
        term = canonical(match.group(), after is not None)
        specific = after is not None or "." in term
        date = not specific and is_date(text, match.start(), match.end(), term)
        found.append(Figure(term, specific, date))
        pieces.append(text[last : match.start()])
        pieces.append(" ")
        last = end
    pieces.append(text[last:])
    return found, "".join(pieces)
