"""How common each term is in a whole document, so "revenue" in a 10-K says little and "Creative
Cloud" says a lot. Pure.

The weights of a claim's words come from the document its citation belongs to, not from the few
chunks a batch cites: over three or four chunks every word looks rare (or, over one sentence,
every word looks equally common), and a sentence that shares "fiscal", "revenue" and "million"
with the claim looked as good as the one stating its figure.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from app.selection.terms import Language, language_of, terms

# The first chunks of a document say which language it is in.
LANGUAGE_SAMPLE = 50


@dataclass(frozen=True)
class DocumentStats:
    """Document frequencies of terms over a document's chunks."""

    chunks: int
    df: Mapping[str, int]
    language: Language | None = None

    @classmethod
    def of(cls, texts: Iterable[str], language: Language | None) -> DocumentStats:
        df: Counter[str] = Counter()
        count = 0
        for text in texts:
            df.update(terms(text, language))
            count += 1
        return cls(count, dict(df), language)

    @classmethod
    def of_document(cls, texts: Sequence[str]) -> DocumentStats:
        """``of`` a document's chunk texts, in the language its first chunks are in (reading all
        of them for it would cost as much again)."""
        return cls.of(texts, language_of(texts[:LANGUAGE_SAMPLE]))

    def idf(self, term: str) -> float:
        """Positive for every term; highest for one the document never uses."""
        return math.log((self.chunks + 1) / (self.df.get(term, 0) + 0.5))

    @property
    def unseen(self) -> float:
        """The weight of a term the document never uses (the most telling)."""
        return math.log((self.chunks + 1) / 0.5)
