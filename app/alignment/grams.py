"""Seed finder: where do short exact pieces of a quote occur in a document skeleton?

A sorted table of hashed 6-grams taken at every third skeleton position keeps the lookup at a
few microseconds per gram even on a book, in a few MB. Any exact run of at least
``GRAM + STRIDE - 1`` characters shared by quote and document is guaranteed a seed. The hash
is CRC-32 rather than ``hash()``, which is salted per interpreter: the table is pickled with
the index and must mean the same thing in every worker process.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from itertools import repeat
from operator import lshift, or_
from zlib import crc32

GRAM = 6
STRIDE = 3
# A gram seen more often than this says little about where a quote is ("ofthe", "tion...").
MAX_HITS = 40
_BIG_ENDIAN = sys.byteorder == "big"


def _key(gram: str) -> int:
    return crc32(gram.encode("utf-8"))


class GramTable:
    __slots__ = ("_keys", "_positions")

    def __init__(self, text: str) -> None:
        # Sorted by (key, position) as one 64-bit number each, so the sort compares plain ints
        # and the two halves come apart as array slices: no Python step per gram but the hash.
        starts = range(0, len(text) - GRAM + 1, STRIDE)
        spans = map(slice, starts, range(GRAM, len(text) + 1, STRIDE))
        if text.isascii():  # one byte per character: slice the bytes, encode nothing
            grams: Iterator[bytes] = map(text.encode("ascii").__getitem__, spans)
        else:
            grams = map(str.encode, map(text.__getitem__, spans))
        packed = array("Q", sorted(map(or_, map(lshift, map(crc32, grams), repeat(32)), starts)))
        halves: array[int] = array("I")
        halves.frombytes(packed.tobytes())
        low, high = (1, 0) if _BIG_ENDIAN else (0, 1)
        self._keys: array[int] = halves[high::2]
        self._positions: array[int] = array("i")
        self._positions.frombytes(halves[low::2].tobytes())

    def __getstate__(self) -> tuple[array[int], array[int]]:
        return self._keys, self._positions

    def __setstate__(self, state: tuple[array[int], array[int]]) -> None:
        self._keys, self._positions = state

    def positions(self, gram: str) -> list[int]:
        key = _key(gram)
        lo = bisect_left(self._keys, key)
        hi = bisect_right(self._keys, key, lo, min(lo + MAX_HITS + 1, len(self._keys)))
        if hi - lo > MAX_HITS:
            return []
        return list(self._positions[lo:hi])


def seeds(table: GramTable, quote: str, lo: int, hi: int) -> list[tuple[int, int]]:
    """``(quote_pos, doc_pos)`` pairs of shared grams with ``lo <= doc_pos < hi``."""
    found: list[tuple[int, int]] = []
    for qpos in range(len(quote) - GRAM + 1):
        for dpos in table.positions(quote[qpos : qpos + GRAM]):
            if lo <= dpos and dpos + GRAM <= hi:
                found.append((qpos, dpos))
    return found
