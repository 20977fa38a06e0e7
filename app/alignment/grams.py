"""Seed finder: where do short exact pieces of a quote occur in a document skeleton?

A sorted table of hashed 6-grams taken at every third skeleton position keeps the lookup at a
few microseconds per gram even on a book, in a few MB. Any exact run of at least
``GRAM + STRIDE - 1`` characters shared by quote and document is guaranteed a seed.
"""

from __future__ import annotations

import threading
import weakref
from array import array
from bisect import bisect_left, bisect_right

from app.alignment.index import DocumentIndex

GRAM = 6
STRIDE = 3
# A gram seen more often than this says little about where a quote is ("ofthe", "tion...").
MAX_HITS = 40


class GramTable:
    def __init__(self, text: str) -> None:
        hashed = [
            (hash(text[pos : pos + GRAM]), pos) for pos in range(0, len(text) - GRAM + 1, STRIDE)
        ]
        hashed.sort()
        self._keys: array[int] = array("q", (key for key, _ in hashed))
        self._positions: array[int] = array("i", (pos for _, pos in hashed))

    def positions(self, gram: str) -> list[int]:
        key = hash(gram)
        lo = bisect_left(self._keys, key)
        hi = bisect_right(self._keys, key, lo, min(lo + MAX_HITS + 1, len(self._keys)))
        if hi - lo > MAX_HITS:
            return []
        return list(self._positions[lo:hi])


# Built lazily per process and never pickled: str hashes are salted per interpreter.
_TABLES: weakref.WeakKeyDictionary[DocumentIndex, GramTable] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def gram_table(index: DocumentIndex) -> GramTable:
    with _LOCK:
        table = _TABLES.get(index)
    if table is None:
        table = GramTable(index.norm.text)
        with _LOCK:
            table = _TABLES.setdefault(index, table)
    return table


def seeds(table: GramTable, quote: str, lo: int, hi: int) -> list[tuple[int, int]]:
    """``(quote_pos, doc_pos)`` pairs of shared grams with ``lo <= doc_pos < hi``."""
    found: list[tuple[int, int]] = []
    for qpos in range(len(quote) - GRAM + 1):
        for dpos in table.positions(quote[qpos : qpos + GRAM]):
            if lo <= dpos and dpos + GRAM <= hi:
                found.append((qpos, dpos))
    return found
