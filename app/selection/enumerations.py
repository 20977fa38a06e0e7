"""List items inside running text: where each item starts, and which full stops are an item's
number rather than a sentence's end. Pure; lazy and linear.

PDF text and chat answers run a list's items together on one line ("1. The first item 2. The
second item", "a. ... b. ... c. ...", "• 9. ... • 10. ..."), and each item is what a reader, or a
model, picks (pySBD's list-item rules, read as a scan). A *marker* is a number ("1", "12"), a
letter ("a", "B") or a roman numeral ("iv") followed by ".", ")" or ".)", optionally in an opening
bracket ("(2)"), standing after white space, a bullet or the text's start, and followed by white
space and a capitalised word or a figure. Markers in a row whose values step by one ("1." then
"2.", "a." then "b.") are a list when the first of them stands where an item can start: the
text's or a line's start, after a bullet, after a sentence's end or after a colon. Each item of
a list starts a sentence. A marker alone at the text's or a line's start or after a bullet
("5. Hon. Justice ...") is an item too, only not a list: its full stop does not end a sentence,
as "5." alone is nothing to pick. (Alone after a full stop it is not: "See Fig. 3. The ...".)

"It rose by 5. Then ..." is no item: "5." follows a word. "items 1) and 2) above" is none:
a lower-case word follows. "J. K. Mwangi" is none: nothing stands between "J." and "K.".
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

# Bullets as PDFs carry them, Word's private-use Symbol-font glyphs (U+F0B7, U+F0A7) included.
BULLETS = "\u2022\u25cf\u25e6\u25aa\u2023\u2043\u2219\u25a0\uf0b7\uf0a7"
# A marker's closing punctuation before white space and a word: searched first, as it is far
# rarer than the letters and digits a marker starts with (a scan for the whole marker tried every
# character of the text); the number or letter before it is then read backwards.
_CLOSE = re.compile(r"(?:\.\)|[.)])(?=[ \t\u00a0]+[\"'“‘(]?\w)")
_TOKEN = re.compile(r"\d{1,3}|[A-Za-z]|[ivxlc]{2,6}|[IVXLC]{2,6}")
_TOKEN_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_BEFORE_MARKER = frozenset(BULLETS)  # or white space
_WORDS = re.compile(r"\w")
_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100}
# Where an item can start, white space skipped: the text's start, a line's, after a bullet (a
# sure place); after what ends a sentence or opens a list (a place for a list only).
NOWHERE, LIST_PLACE, ITEM_PLACE = 0, 1, 2
_LIST_PLACE = frozenset(".!?:;\"'”’»)]")


@dataclass(frozen=True)
class Marker:
    start: int  # the marker's first character, its bracket if any
    end: int
    dot: int  # where its full stop is, -1 when it has none ("2)")
    values: tuple[tuple[str, int], ...]  # (style, value) readings: "i" is a letter and a numeral
    place: int  # NOWHERE, LIST_PLACE or ITEM_PLACE: where it stands
    cut: int  # where its item's sentence starts: the bullet before it, if any


def _roman(numeral: str) -> int | None:
    total, previous = 0, 0
    for char in reversed(numeral.lower()):
        value = _ROMAN[char]
        total += -value if value < previous else value
        previous = max(previous, value)
    return total if 0 < total < 40 else None


def _readings(token: str, bracket: bool, punct: str) -> tuple[tuple[str, int], ...]:
    shape = f"{'(' if bracket else ''}{punct}"
    if token.isdigit():
        return ((f"9{shape}", int(token)),)
    readings: list[tuple[str, int]] = []
    if len(token) == 1:
        readings.append((f"{'A' if token.isupper() else 'a'}{shape}", ord(token.lower()) - 96))
    roman = _roman(token) if set(token.lower()) <= set(_ROMAN) else None
    if roman is not None:
        readings.append((f"{'I' if token.isupper() else 'i'}{shape}", roman))
    return tuple(readings)


def _place(text: str, start: int) -> tuple[int, int]:
    """Where ``start`` stands (NOWHERE, LIST_PLACE, ITEM_PLACE), and where its item's sentence
    would start (the bullet before it). Reads back over spaces only (the gap after the word
    before, which the marker regex's match follows)."""
    at = start
    while at and text[at - 1] in " \t\u00a0":
        at -= 1
    if at == 0 or text[at - 1] in "\n\r\f\v":
        return ITEM_PLACE, start
    before = text[at - 1]
    if before in BULLETS:
        return ITEM_PLACE, at - 1
    return (LIST_PLACE if before in _LIST_PLACE else NOWHERE), start


def _marker_start(text: str, close: int) -> tuple[int, str, bool] | None:
    """The marker whose punctuation starts at ``close``: where it starts, its token, whether a
    bracket opens it; None when what stands before is no marker. Reads back at most 7
    characters."""
    start = close
    while start and close - start < 7 and text[start - 1] in _TOKEN_CHARS:
        start -= 1
    token = text[start:close]
    if not _TOKEN.fullmatch(token):
        return None
    bracket = bool(start) and text[start - 1] == "("
    begin = start - bracket
    if begin and not (text[begin - 1].isspace() or text[begin - 1] in _BEFORE_MARKER):
        return None
    return begin, token, bracket


def _markers(text: str) -> Iterator[Marker]:
    for match in _CLOSE.finditer(text):
        found = _marker_start(text, match.start())
        if found is None:
            continue
        begin, token, bracket = found
        after = match.end()
        while text[after] in " \t\u00a0\"'“‘(":
            after += 1
        if text[after].islower():
            continue  # "1) and 2) above": prose, not an item
        punct = match.group()
        readings = _readings(token, bracket, punct)
        if not readings:
            continue
        place, cut = _place(text, begin)
        dot = match.start() if punct.startswith(".") else -1
        yield Marker(begin, match.end(), dot, readings, place, cut)


def _follows(text: str, before: Marker, after: Marker) -> bool:
    """Does ``after`` number the item after ``before``'s: the next value of one of its readings,
    with words between them ("J. K. Mwangi" are initials: no item between J and K)?"""
    if not _WORDS.search(text, before.end, after.start):
        return False
    return any(
        style == other and value + 1 == next_value
        for style, value in before.values
        for other, next_value in after.values
    )


def items(text: str) -> Iterator[Marker]:
    """The markers that start an item, in order: those of lists, and lone ones at an item's
    place. Lazy: deciding a marker reads on to the next marker only."""
    markers = _markers(text)
    previous: Marker | None = None
    previous_listed = False  # the previous marker is an item of a list
    current = next(markers, None)
    while current is not None:
        following = next(markers, None)
        linked = previous is not None and previous_listed and _follows(text, previous, current)
        starts = (
            not linked
            and current.place >= LIST_PLACE
            and following is not None
            and _follows(text, current, following)
        )
        listed = linked or starts
        if listed or current.place == ITEM_PLACE:
            yield current
        previous, previous_listed, current = current, listed, following
