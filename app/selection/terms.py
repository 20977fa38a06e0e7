"""Index terms for the lexical selector: what an answer and a sentence must share to count as
saying the same thing. Pure (PyStemmer is C code with no I/O).

* figures in one canonical form (``app.selection.numbers``): "3,142,308" == "3142308";
* content words, case-folded, stemmed for the batch's language (Snowball: "revenues" and
  "revenue" -> "revenu", "organically" and "organic" -> "organic") and then accent-folded; a
  few English nouns first become the verb they name ("retention" -> "retain", "growth" ->
  "grow"), which the stemmer does not join;
  Stemming comes before folding because the French stemmer reads the accents ("adoptée" ->
  "adopt", but "adoptee" -> "adopte");
* Chinese and Japanese runs as character bigrams, because they have no spaces to split on.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable
from itertools import chain, repeat
from typing import Literal, NamedTuple

import Stemmer

from app.core.scripts import is_cjk
from app.selection.numbers import figures

Language = Literal["english", "french"]

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_ASCII_WORD = re.compile(r"[A-Za-z]+")
# Function words, and the words of a question or a bare verdict ("yes", "no") that no source
# sentence needs to share with it.
ENGLISH_STOPWORDS = frozenset(
    """
    the a an and or but nor of to in on at by for with from as is are was were be been being it
    its this that these those which who whom whose what when where why how not no yes than then
    there their they them he she his her we our you your i me my has have had do does did done
    will would shall should can could may might must also into over under about after before
    between during such per so if up out off all any each other some own same too very just
    only both either neither here us vs versus
    """.split()
)
FRENCH_STOPWORDS = frozenset(
    """
    le la les un une des du de et ou en au aux est sont pour par sur dans que qui ce cette ces
    il elle ils elles pas plus ne se sa son ses leur leurs nous vous je tu on lui y ont été
    était être avec sans mais donc car ni oui non quel quelle quels quelles comme
    """.split()
)
STOPWORDS = ENGLISH_STOPWORDS | FRENCH_STOPWORDS
# Words that say which language a text is in (common, and not words of the other language).
_MARKERS: dict[Language, frozenset[str]] = {
    "english": frozenset("the and of to is was that for with were this which has have".split()),
    "french": frozenset("le la les des du et est une que qui dans pour sur au aux été".split()),
}

# English nouns whose stem is not their verb's ("retention" -> "retent", "retain" -> "retain"):
# a claim says "retained card members", the filing "Card Member retention".
_DERIVED = {
    "retention": "retain",
    "acquisition": "acquire",
    "acquisitions": "acquire",
    "separation": "separate",
    "reduction": "reduce",
    "reductions": "reduce",
    "production": "produce",
    "subscription": "subscribe",
    "subscriptions": "subscribe",
    "payment": "pay",
    "payments": "pay",
    "paid": "pay",
    "growth": "grow",
    "grew": "grow",
    "expansion": "expand",
    "decision": "decide",
    "description": "describe",
    "sold": "sell",
    "sales": "sale",
    "bought": "buy",
    "spent": "spend",
    "spending": "spend",
    "borrowings": "borrow",
    "borrowing": "borrow",
    "issuance": "issue",
    "conversion": "convert",
    "repurchases": "repurchase",
    "contribution": "contribute",
    "contributions": "contribute",
    "adj": "adjusted",  # "Adj. EBITDA"
}

# "U.S.", "US" and "USA" are the United States, not the pronoun "us" (a stopword) or two
# one-letter words; read before case is folded.
_UNITED_STATES = re.compile(r"\bU\.S\.(?:A\.)?|\bUSA?\b|\bUnited States\b")

_local = threading.local()


def _stemmer(language: Language) -> Stemmer.Stemmer:
    # PyStemmer objects are not thread-safe: one per thread and language.
    stemmers: dict[str, Stemmer.Stemmer] = _local.__dict__.setdefault("stemmers", {})
    if language not in stemmers:
        stemmers[language] = Stemmer.Stemmer(language)
    return stemmers[language]


def language_of(texts: Iterable[str]) -> Language | None:
    """English or French by their commonest words; None when neither shows (Chinese, a list of
    figures), and then words are not stemmed."""
    return language_by_counts([marker_counts(text) for text in texts])


def language_by_counts(per_text: Iterable[tuple[int, ...]]) -> Language | None:
    """``language_of`` from each text's ``marker_counts``: they add up over texts."""
    totals = [sum(column) for column in zip(*per_text, strict=True)] or [0] * len(_MARKERS)
    counts = dict(zip(_MARKERS, totals, strict=True))
    best = max(counts, key=lambda language: counts[language])
    return best if counts[best] else None


def marker_counts(text: str) -> tuple[int, ...]:
    """How many of ``text``'s words mark each language (in ``_MARKERS``' order)."""
    words = Counter(_words(text.casefold()))
    # dict.get, not Counter's []: a missing marker called Counter.__missing__ in Python.
    return tuple(sum(map(words.get, markers, repeat(0))) for markers in _MARKERS.values())


def _words(folded: str) -> list[str]:
    """``_WORD.findall``: an ASCII text's letters are [A-Za-z], found faster."""
    return (_ASCII_WORD if folded.isascii() else _WORD).findall(folded)


def chunk_marker_counts(texts: tuple[str, ...]) -> tuple[int, ...]:
    """``marker_counts`` summed over a chunk's sentences: read as one text, which has the same
    words (a space keeps the sentences' apart, and case folding reads each character alone),
    so counted in one pass rather than one per sentence."""
    return marker_counts(" ".join(texts))


def _fold(word: str) -> str:
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _word_terms(word: str, language: Language | None) -> tuple[str, ...]:
    out: list[str] = []
    if not word.isascii():
        cjk = "".join(ch for ch in word if is_cjk(ch))
        if cjk:
            out.extend(cjk[i : i + 2] for i in range(max(1, len(cjk) - 1)))
            word = "".join(ch for ch in word if not is_cjk(ch))
    if len(word) < 2 or word in STOPWORDS or _fold(word) in STOPWORDS:
        return tuple(out)
    if language == "english":
        word = _DERIVED.get(word, word)
    stem = _stemmer(language).stemWord(word) if language else word
    out.append(_fold(stem))
    return tuple(out)


# Words repeat (Zipf), and a batch of twenty chunks has thousands of them: ``_word_terms`` is
# memoised per language, in a dict read through C (``map(memo.__getitem__, words)``: a hit
# costs a dict lookup, where lru_cache also built a key and moved it to the front).
_MEMO_WORDS = 65536


class _Memo(dict[str, tuple[str, ...]]):
    """``_word_terms(word, language)`` by word; emptied when full (bounded, as words of a
    hostile text could be any)."""

    def __init__(self, language: Language | None) -> None:
        super().__init__()
        self.language = language

    def __missing__(self, word: str) -> tuple[str, ...]:
        found = _word_terms(word, self.language)
        if len(self) >= _MEMO_WORDS:
            self.clear()
        self[word] = found
        return found


_MEMOS: dict[Language | None, _Memo] = {
    language: _Memo(language) for language in ("english", "french", None)
}


class Reading(NamedTuple):
    terms: set[str]
    claimed: set[str]  # figures stated as facts
    dates: set[str]  # figures only ever seen as dates here


def read(text: str, language: Language | None = None) -> Reading:
    """``terms(text, language)``, and which of its figures are claims and which dates."""
    text = unicodedata.normalize("NFKC", text)
    if "U" in text:  # every spelling of the United States starts with one
        text = _UNITED_STATES.sub(" unitedstates ", text)
    found, words = figures(text.casefold())
    out: set[str] = set()
    claimed: set[str] = set()
    dated: set[str] = set()
    for figure in found:
        if figure.telling:
            out.add(figure.term)
            (dated if figure.date else claimed).add(figure.term)
    memo = _MEMOS[language] if language in _MEMOS else _Memo(language)
    out.update(chain.from_iterable(map(memo.__getitem__, _words(words))))
    return Reading(out, claimed, dated - claimed)


def terms(text: str, language: Language | None = None) -> set[str]:
    """Content terms of ``text``: canonical figures, folded (and, given a language, stemmed)
    words, CJK bigrams. A lone one-digit figure is left out: "(1)" footnote marks and list
    numbers would match anything."""
    return read(text, language).terms
