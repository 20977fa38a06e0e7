"""Figures as values, so a claim's "$10,459 million" meets a table's "10,459" under "(In
millions)", and "$13.2 billion" meets "$13,208 million". Pure.

``numbers.py`` makes figures into index terms (exact digits); this module compares them as
quantities:

* a scale word after a figure multiplies it ("million", "mn", "m", "billion", "bn", "thousand",
  "k"); a chunk that says "in millions" or "in thousands" (a statement's caption) gives its bare
  figures that scale as a second reading;
* a percentage is its own kind ("36%", "36 per cent"), never equal to a plain figure;
* the sign is dropped, as in ``numbers.py`` (words, parentheses and minus signs disagree);
* years and periods are not values of a claim: "fiscal 2022" and "12 months ended" date the
  claim, they are not what it states; digits inside a name ("Q2", "FY2024", "10-K") are none;
* a claim figure matches a source figure when they agree to the claim's own precision: "$13.2
  billion" is 13.15-13.25 billion, so "$13,208 million" is it; "~90%" is 89.5-90.5%. A claim
  written without a scale also matches the bare digits ("$3215.00" and a table's "3,215").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from app.selection.numbers import NUMBER, PERCENT_AFTER, is_date, split_decimal

# A scale word may stand a few spaces or a line break away ("$2.0  billion", "$2.0 \nbillion":
# pdfminer's text of a justified line); a one-letter scale only right after the figure or one
# space on ("$5m", "5 m"), where it cannot be a list's "b)" on the next line.
_SCALE_AFTER = re.compile(
    r"(?:\s{0,4}(thousands?|millions?|mn|mm|billions?|bn|trillions?|tn)|\s?(k|m|b))\b",
    re.IGNORECASE,
)
_SCALES = {"k": 1e3, "m": 1e6, "mn": 1e6, "mm": 1e6, "b": 1e9, "bn": 1e9, "tn": 1e12}
_SCALE_WORDS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
# "(In millions, except per share data)", "in thousands of dollars", "$ in millions".
_CHUNK_SCALE = re.compile(r"\bin\s+(thousands|millions|billions)\b", re.IGNORECASE)
_YEAR = re.compile(r"(?:19|20)\d\d")
# "12 months ended", "three-year": a period, not a quantity the claim states.
_PERIOD_AFTER = re.compile(r"[\s-]?(?:months?|weeks?|days?|years?|quarters?)\b", re.IGNORECASE)
_CURRENCY_BEFORE = re.compile(r"[$€£¥]\s?$")
_ENUMERATOR = re.compile(r"\(?\d{1,2}\)\s+[A-Za-z]")
# A hyphen and a letter right after a figure: "10-K", part of a name.
_NAME_AFTER = re.compile(r"-[A-Za-z]")


@dataclass(frozen=True)
class Value:
    amount: float  # the figure as written, scale word applied, no sign
    written: float  # the digits alone
    step: float  # the claim's precision: one unit of its last written digit, scale applied
    percent: bool
    scaled: bool  # a scale word followed it
    date: bool
    # "(1)" or "2)" before words: a list's numbering in a claim (in a table, "(7)" is -7).
    enumerator: bool = False


def _scale(word: str) -> float:
    word = word.lower()
    if word in _SCALES:
        return _SCALES[word]
    return _SCALE_WORDS.get(word.rstrip("s"), 1.0)


@lru_cache(maxsize=8192)
def _digits(raw: str) -> tuple[float, int]:
    """A raw figure's digits as a number, and how many of them are its fraction's. Memoised,
    like ``split_decimal``: a chunk's figures repeat."""
    whole, fraction = split_decimal(raw)
    return float(f"{whole or 0}.{fraction or 0}"), len(fraction)


def values(text: str) -> list[Value]:
    """The figures of ``text`` as values, in order."""
    out: list[Value] = []
    for match in NUMBER.finditer(text):
        before = text[match.start() - 1] if match.start() else " "
        if before.isalpha() or _NAME_AFTER.match(text, match.end()):
            continue  # "Q2", "FY2024", "10-K": part of a name
        written, places = _digits(match.group())
        # "(0.6)%": a negative percentage in a table.
        after = match.end() + (text[match.end() : match.end() + 1] == ")")
        percent = PERCENT_AFTER.match(text, after) is not None
        scale_word = None if percent else _SCALE_AFTER.match(text, match.end())
        scale = _scale(scale_word.group(1) or scale_word.group(2)) if scale_word else 1.0
        raw = match.group()
        date = not percent and (
            (
                scale_word is None
                and bool(_YEAR.fullmatch(raw))
                and not _CURRENCY_BEFORE.search(text, max(0, match.start() - 2), match.start())
            )
            or _PERIOD_AFTER.match(text, match.end()) is not None
            or is_date(text, match.start(), match.end(), "")
        )
        step = 10.0**-places * scale
        enumerator = bool(_ENUMERATOR.match(text, max(0, match.start() - 1)))
        out.append(
            Value(written * scale, written, step, percent, scale_word is not None, date, enumerator)
        )
    return out


def chunk_scale(text: str) -> float:
    """The scale a chunk's caption gives its bare figures (1 when it names none)."""
    found = _CHUNK_SCALE.search(text)
    return _SCALE_WORDS[found.group(1).lower().rstrip("s")] if found else 1.0


def readings(value: Value, scale: float) -> tuple[float, ...]:
    """What a source figure may stand for: as written and, when bare, at its chunk's scale."""
    if value.percent or value.scaled or scale == 1.0:
        return (value.amount,)
    return (value.amount, value.amount * scale)


def agrees(claim: Value, source: Value, scale: float = 1.0) -> bool:
    """Does the source figure state the claim's figure, to the claim's precision?"""
    if claim.percent != source.percent or claim.date:
        return False
    # Rounded to its last written digit, unless that is its only one: "9%" is 9.0%, not 8.6%.
    significant = claim.written >= 10 or claim.step < claim.amount / 10
    tolerance = (0.5 if significant else 0.01) * claim.step + 1e-9 * max(claim.amount, 1.0)
    if any(abs(claim.amount - reading) <= tolerance for reading in readings(source, scale)):
        return True
    # "$3215.00" (no scale written) and a table's "3,215" in millions: the same digits, when
    # they are enough of them to mean something ("1" is in every table).
    return (
        not claim.scaled
        and claim.written >= 100
        and abs(claim.written - source.written) <= 0.5 * claim.step + 1e-9
    )
