"""Checks that a decoded index blob's parts are consistent (``index_codec.py``): each raises
``CorruptIndex`` on the first breach, naming it, before anything is built from the part."""

from __future__ import annotations

import math
from array import array
from typing import Any, NoReturn

from app.alignment.furniture import FurnitureLine, LineBox, find_furniture
from app.alignment.grams import GramTable
from app.alignment.margins import MarginNumber


class CorruptIndex(ValueError):
    """Bytes that are not an index blob of this format and version, or not a consistent one."""


def corrupt(what: str) -> NoReturn:
    raise CorruptIndex(f"not a usable index blob: {what}")


def check_list(value: Any, what: str, length: int | None = None) -> list[Any]:
    if not isinstance(value, list) or (length is not None and len(value) != length):
        corrupt(what)
    return value


def check_int(value: Any, what: str, lo: int = 0, hi: int = 2**31 - 1) -> int:
    if type(value) is not int or not lo <= value <= hi:
        corrupt(what)
    return value


def check_float(value: Any, what: str) -> float:
    if type(value) not in (int, float) or not math.isfinite(value):
        corrupt(what)
    return float(value)


def check_within(values: array[int], lo: int, hi: int, what: str) -> None:
    """Every value in ``[lo, hi)``."""
    if not values:
        return
    if lo == 0 and values.typecode == "i" and hi <= 2**31:
        # One pass instead of two: read as unsigned, a negative value is 2**31 or more.
        unsigned = array("I")
        unsigned.frombytes(memoryview(values).cast("B"))
        if max(unsigned) >= hi:
            corrupt(f"{what} out of range")
    elif min(values) < lo or max(values) >= hi:
        corrupt(f"{what} out of range")


def check_page_starts(values: array[int], pages: int, total: int, what: str) -> None:
    """One start per page and the end: from 0 to ``total``, never going back."""
    if len(values) != pages + 1 or values[0] != 0 or values[-1] != total:
        corrupt(f"{what} do not span the document")
    if any(b < a for a, b in zip(values, values[1:], strict=False)):
        corrupt(f"{what} go back")


def gram_table(keys: array[int], positions: array[int], text: str, what: str) -> GramTable:
    if len(keys) != len(positions):
        corrupt(f"{what} keys and positions differ in number")
    check_within(positions, 0, max(len(text), 1), f"{what} positions")
    table = GramTable.__new__(GramTable)
    table.__setstate__((keys, positions))
    return table


def check_normalized(text: str, origin: array[int], chars: int, what: str) -> None:
    if len(origin) != len(text):
        corrupt(f"{what} text and origin differ in length")
    check_within(origin, 0, chars, f"{what} origin")


def margin_numbers_of(listed: Any, pages: int, chars: int) -> tuple[MarginNumber, ...]:
    numbers: list[MarginNumber] = []
    last_end = 0
    for entry in check_list(listed, "margin numbers"):
        page, value, start, end, y_centre, height = check_list(entry, "margin number", 6)
        number = MarginNumber(
            check_int(page, "margin number page", 1, pages),
            check_int(value, "margin number value"),
            check_int(start, "margin number start", last_end, chars),
            check_int(end, "margin number end", start, chars),
            check_float(y_centre, "margin number position"),
            check_float(height, "margin number height"),
        )
        last_end = number.end  # in source order, apart: the locator bisects them
        numbers.append(number)
    return tuple(numbers)


def furniture_of(listed: Any, chars: str, pages: int) -> tuple[tuple[FurnitureLine, ...], str]:
    """The furniture lines and their pattern, derived from ``chars`` as ``build_index`` does: a
    top line sits at the top of a page one unit high, a bottom line at its foot. Lines are in
    source order and apart, so deriving reads each character once at most."""
    boxes: list[LineBox] = []
    last_end = 0
    for entry in check_list(listed, "furniture"):
        page, start, end, top = check_list(entry, "furniture line", 4)
        if type(top) is not bool:
            corrupt("furniture line side")
        y = 0.0 if top else 1.0
        start = check_int(start, "furniture start", last_end, len(chars))
        last_end = check_int(end, "furniture end", start, len(chars))
        boxes.append(LineBox(check_int(page, "furniture page", 1, pages), start, last_end, y, y))
    lines, pattern = find_furniture(chars, boxes, [1.0] * pages)
    if len(lines) != len(boxes):
        corrupt("furniture lines that are not running headers or footers")
    return lines, pattern
