"""The lexical selector's fast paths read every text exactly as the plainer formulations they
replaced (kept here as the reference): precompiled or skipped regexes, memoised figure parsing,
one pass over a chunk's words. Held against them on texts built from the pieces that steer
each branch (figures in every notation, months, scale and period words, the United States,
dashes and currency cells, line breaks, accents, CJK, compatibility characters) and on
arbitrary text."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from app.selection import numbers, rows, terms, values
from app.selection.terms import Reading, _word_terms

PIECES = [
    *"the The and of la les des et est pour que Net sales revenue grew fell Total Cash".split(),
    *"January Jan. jan Dec. december septembre août Mai MAY months years quarter".split(),
    *"3,142,308 (54,979) 12,5 1.234,5 1.234.567 0.50 900.0 2022 1999 2101 07 5 12.5x".split(),
    *"$ € £ ¥ % — – − - -- $1,234 (1) (7) 36% 10-K Q2 FY2024 US U.S. USA U.S.A.".split(),
    *"percent per cent pour cent pct million mn bn billion thousand k in millions".split(),
    *"Ｔｈｅ ＵＳ \u212aelvin ſales ﬁscal é adoptée résultat 中文 日本語です 。 • : ; , .".split(),
    "United States",
    "3\u202f142\u202f308",
    "12\u00a0%",
    "\n",
    "\n\n",
    "  ",
]
SEPARATORS = [" ", "", "\n", ". ", ": ", "\u00a0", "\t"]


@st.composite
def texts(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return draw(st.text(max_size=80))
    parts = draw(st.lists(st.sampled_from(PIECES), max_size=30))
    seps = draw(st.lists(st.sampled_from(SEPARATORS), min_size=len(parts), max_size=len(parts)))
    return "".join(p + s for p, s in zip(parts, seps, strict=True))


# The formulations replaced, as they were.


def old_is_date(text: str, start: int, end: int, term: str) -> bool:
    if term.isdigit() and len(term) == 4 and 1900 <= int(term) <= 2100:
        return True
    return bool(numbers._MONTH_BEFORE.search(text, max(0, start - 12), start)) or bool(
        numbers._MONTH_AFTER.match(text, end)
    )


def old_read(text: str, language: terms.Language | None) -> Reading:
    text = terms._UNITED_STATES.sub(" unitedstates ", unicodedata.normalize("NFKC", text))
    found, words = numbers.figures(text.casefold())
    out = {figure.term for figure in found if figure.telling}
    for word in terms._WORD.findall(words):
        out.update(_word_terms(word, language))
    claimed = {figure.term for figure in found if figure.claimed}
    dates = {figure.term for figure in found if figure.date and figure.telling} - claimed
    return Reading(out, claimed, dates)


def old_marker_counts(text: str) -> tuple[int, ...]:
    words = Counter(terms._WORD.findall(text.casefold()))
    return tuple(sum(words[m] for m in markers) for markers in terms._MARKERS.values())


def old_chunk_marker_counts(texts: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(map(sum, zip(*map(old_marker_counts, texts), strict=True))) or (0, 0)


def old_values(text: str) -> list[values.Value]:
    out: list[values.Value] = []
    for match in numbers.NUMBER.finditer(text):
        before = text[match.start() - 1] if match.start() else " "
        if before.isalpha() or re.match(r"-[A-Za-z]", text[match.end() : match.end() + 2]):
            continue
        whole, fraction = numbers.split_decimal(match.group())
        written = float(f"{whole or 0}.{fraction or 0}")
        after = match.end() + (text[match.end() : match.end() + 1] == ")")
        percent = numbers.PERCENT_AFTER.match(text, after) is not None
        scale_word = None if percent else values._SCALE_AFTER.match(text, match.end())
        scale = values._scale(scale_word.group(1) or scale_word.group(2)) if scale_word else 1.0
        raw = match.group()
        date = not percent and (
            (
                scale_word is None
                and bool(values._YEAR.fullmatch(raw))
                and not values._CURRENCY_BEFORE.search(
                    text, max(0, match.start() - 2), match.start()
                )
            )
            or values._PERIOD_AFTER.match(text, match.end()) is not None
            or old_is_date(text, match.start(), match.end(), "")
        )
        step = 10.0 ** -len(fraction) * scale
        enumerator = bool(values._ENUMERATOR.match(text, max(0, match.start() - 1)))
        out.append(
            values.Value(
                written * scale, written, step, percent, scale_word is not None, date, enumerator
            )
        )
    return out


def old_row_cuts(text: str, start: int, end: int) -> list[int]:
    tokens = [(m.start(), m.end(), m.group()) for m in rows._TOKEN.finditer(text, start, end)]
    cuts: list[int] = []
    row_ends = 0
    row: list[str] = []
    has_cell = False
    for i, (at, _, token) in enumerate(tokens):
        cell = rows._is_cell(token)
        if i and not cell:
            prev_end, prev = tokens[i - 1][1], tokens[i - 1][2]
            if (
                rows._is_row(row)
                and (
                    "\n" in text[prev_end:at]
                    # Issue 41: a row that ends mid-line ends in two cells or more.
                    or (rows._starts_label(token) and sum(map(rows._is_cell, row[-2:])) == 2)
                )
                and not rows._MONTH.fullmatch(token.strip(",."))
            ):
                cuts.append(at)
                row_ends += 1
                row, has_cell = [], False
            elif (
                (prev.endswith(":") or "\n" in text[prev_end:at])
                and rows._starts_label(token)
                and not has_cell
            ):
                cuts.append(at)
                row = []
        row.append(token)
        has_cell = has_cell or cell
    row_ends += rows._is_row(row)
    return cuts if row_ends >= rows.MIN_ROWS else []


@settings(max_examples=600, deadline=None)
@given(texts())
def test_read_as_before(text: str) -> None:
    for language in ("english", "french", None):
        assert terms.read(text, language) == old_read(text, language)


@settings(max_examples=600, deadline=None)
@given(st.lists(texts(), max_size=5))
def test_marker_counts_as_before(sentences: list[str]) -> None:
    for text in sentences:
        assert terms.marker_counts(text) == old_marker_counts(text)
    joined = tuple(sentences)
    assert terms.chunk_marker_counts(joined) == old_chunk_marker_counts(joined)


@settings(max_examples=600, deadline=None)
@given(texts())
def test_figures_and_dates_as_before(text: str) -> None:
    for match in numbers.NUMBER.finditer(text):
        for term in ("", "2022", "12"):
            assert numbers.is_date(text, match.start(), match.end(), term) == old_is_date(
                text, match.start(), match.end(), term
            )
    assert values.values(text) == old_values(text)
    assert values.values(text.casefold()) == old_values(text.casefold())


@settings(max_examples=600, deadline=None)
@given(texts(), st.integers(0, 200), st.integers(0, 200))
def test_row_cuts_as_before(text: str, a: int, b: int) -> None:
    assert rows.row_cuts(text, 0, len(text)) == old_row_cuts(text, 0, len(text))
    start, end = sorted((min(a, len(text)), min(b, len(text))))
    assert rows.row_cuts(text, start, end) == old_row_cuts(text, start, end)


def test_month_before_on_every_window() -> None:
    """Every place in texts that put a month (or not) before a figure, in every spelling."""
    for month in ("Jan", "jan.", "JANUARY", "août", "Aout", "\u212a", "sept", "x", "", "2"):
        for gap in ("", " ", ". ", ".", "\n", " .", "..", "\u00a0", "\t\n"):
            text = f"{month}{gap}28, 2023 and 5"
            for match in numbers.NUMBER.finditer(text):
                for start in range(match.start() + 1):
                    assert numbers._month_before(text, start) == bool(
                        numbers._MONTH_BEFORE.search(text, max(0, start - 12), start)
                    )
