"""Lexical selector: the sentences of each cited chunk that share the most telling terms with the
answer (and the question). Pure.

It serves when no LLM is configured or the LLM fails, so a reader still gets highlights.

* Terms (``app.selection.terms``): stemmed words, canonical figures, CJK bigrams.
* Weights: BM25 over the sentences of all the batch's cited chunks, so a term that every sentence
  has ("net sales" in a sales report) says little and a figure found once says a lot.
* The question's terms count half as much as the answer's: the answer says what was found, the
  question only what was looked for. When the answer has almost no terms of its own ("Yes",
  "36%", "zero") the question's count in full, since they are all there is to go on.
* An answer computed from the chunk names a measure ("quick ratio", "inventory turnover"), not
  its operands: the lines a named measure is computed from (``app.selection.operands``) count
  as the answer's own terms.
* Running headers and footers (a page number beside a short title) are never chosen.
* Headings (``app.selection.sections``) are never chosen; their terms count, at half weight and
  without BM25's length normalisation, for the sentences of their section.
* A sentence must share at least two terms with the answer and question (one of them its own
  and not a date, the other may be its heading's), or state one of the answer's figures, to be
  chosen at all.
* Per chunk the best sentence is taken, then every other scoring at least half as well; a
  sentence stating an answer figure that no sentence taken so far states is taken whatever its
  score, because each figure is a claim of its own ("cost 12.5 billion ...; deficit 5.1 per
  cent").
* The answer's size bounds how much of one chunk can support it: per chunk, at most one
  sentence per sentence of the answer (two at least, for a comparison made in one sentence).
  Lexical scores cannot tell a table row from the same row of the next table, or a bullet from
  its same-store twin; choosing fewer of them is what keeps precision up.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.selection.operands import operand_lines
from app.selection.sections import Line, sections
from app.selection.sentences import Sentence, split_sentences
from app.selection.terms import Language, language_of, read, terms

__all__ = ["select_batch", "select_sentences", "terms"]

K1 = 1.2
B = 0.75
QUESTION_WEIGHT = 0.5
# Answers with fewer terms than this lean on the question's terms in full.
SHORT_ANSWER = 3
# What a term of the heading above a sentence is worth to it, against its own terms.
CONTEXT_WEIGHT = 0.5
# A further sentence of a chunk must reach this share of the chunk's best score.
RELATIVE = 0.5
# Per chunk, at least this many sentences may be chosen, however short the answer.
MIN_PER_CHUNK = 2


@dataclass(frozen=True)
class Query:
    weights: dict[str, float]
    figures: frozenset[str]  # the answer's claimed figures

    @classmethod
    def of(cls, answer: str, question: str, language: Language | None) -> Query:
        answer_terms, claimed, _ = read(answer, language)
        question_weight = QUESTION_WEIGHT if len(answer_terms) >= SHORT_ANSWER else 1.0
        weights = dict.fromkeys(terms(question, language), question_weight)
        # A computed answer ("the quick ratio was 0.54") is supported by the lines it was
        # computed from, which it does not name: they count as the answer's own terms.
        for line in operand_lines(f"{question}\n{answer}"):
            weights.update(dict.fromkeys(terms(line, language), 1.0))
        weights.update(dict.fromkeys(answer_terms, 1.0))
        return cls(weights, frozenset(claimed))


@dataclass(frozen=True)
class Candidate:
    """A sentence as the selector sees it."""

    position: int
    own: set[str]
    context: set[str]
    figures: set[str]
    dates: set[str]


@dataclass(frozen=True)
class Collection:
    """BM25 statistics over every sentence of the batch."""

    idf: dict[str, float]
    mean_length: float

    @classmethod
    def of(cls, documents: Sequence[set[str]]) -> Collection:
        df: Counter[str] = Counter()
        for doc in documents:
            df.update(doc)
        n = len(documents)
        # BM25's idf kept positive (Lucene's form): a term most sentences have still counts a bit.
        idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        mean = sum(len(d) for d in documents) / n if n else 1.0
        return cls(idf, mean or 1.0)

    def _weight(self, found: set[str], query: Query) -> float:
        return sum(query.weights[t] * self.idf.get(t, 0.0) for t in found & query.weights.keys())

    def score(self, candidate: Candidate, query: Query) -> float:
        # Terms are sets (tf = 1): a sentence is too short for repetition to mean much. Length
        # normalises what the sentence says itself, not its heading, or a bare column caption
        # ("2022 December 31,") would ride its table's title to the top.
        length = len(candidate.own) / self.mean_length
        norm = (K1 + 1) / (1 + K1 * (1 - B + B * length))
        inherited = self._weight(candidate.context - candidate.own, query)
        return norm * self._weight(candidate.own, query) + CONTEXT_WEIGHT * inherited


def _supports(candidate: Candidate, query: Query) -> bool:
    own = candidate.own & query.weights.keys()
    inherited = (candidate.context - candidate.own) & query.weights.keys()
    # Under "Online Channel", "Net sales fell 12%" shares "sales" itself and the rest through
    # its heading; a sentence sharing nothing itself, or only a date, is not chosen for its
    # heading alone.
    telling = bool(own - candidate.dates)
    return (telling and len(own | inherited) >= 2) or bool(candidate.figures & query.figures)


def _choose(
    candidates: list[Candidate], query: Query, collection: Collection, limit: int
) -> list[int]:
    """Positions of the chosen candidates, best first (see the module docstring)."""
    scored = sorted(
        ((collection.score(c, query), c) for c in candidates if _supports(c, query)),
        key=lambda item: (-item[0], item[1].position),
    )
    chosen: list[int] = []
    stated: set[str] = set()
    for score, candidate in scored:
        if len(chosen) == limit:
            break
        figures = candidate.figures & query.figures
        if score >= RELATIVE * scored[0][0] or figures - stated:
            chosen.append(candidate.position)
            stated |= figures
    return chosen


# A running header or footer: a page number before or after a short title ("23 Verizon 2022
# Annual Report on Form 10-K"), once years and form names are set aside. Such a line shares the
# company's name and the year with every question about the filing, and supports none.
_PAGE_NUMBER_AND_TITLE = re.compile(r"\s*\d{1,3}\s+\D+|\D+\s\d{1,3}\s*")
_YEARS_AND_FORMS = re.compile(r"\b(?:19|20)\d\d\b|\b10-[KQ]\b")
_FURNITURE_WORDS = 12


def is_page_furniture(text: str) -> bool:
    if len(text.split()) > _FURNITURE_WORDS:
        return False
    return bool(_PAGE_NUMBER_AND_TITLE.fullmatch(_YEARS_AND_FORMS.sub("", text)))


def _read(
    sentences: Sequence[Sentence], language: Language | None
) -> tuple[list[Candidate], list[set[str]]]:
    """A chunk's candidates (its sentences but the headings) and every sentence's terms."""
    lines = [Line(s.text, *read(s.text, language)) for s in sentences]
    headings, context = sections(lines)
    candidates = [
        Candidate(i, line.terms, context[i], line.figures, line.dates)
        for i, line in enumerate(lines)
        if not headings[i] and not is_page_furniture(line.text)
    ]
    return candidates, [line.terms for line in lines]


def select_batch(
    chunks: Mapping[str, Sequence[Sentence]], answer: str, query: str, limit: int
) -> dict[str, list[int]]:
    """Per chunk id, the ids of up to ``limit`` sentences that support the answer, best first;
    an empty list for a chunk where nothing echoes it. The chunks are the batch's cited ones:
    together they are the collection terms are weighed against."""
    texts = [answer, query, *(s.text for sentences in chunks.values() for s in sentences)]
    language = language_of(texts)
    read = {cid: _read(sentences, language) for cid, sentences in chunks.items()}
    collection = Collection.of([doc for _, docs in read.values() for doc in docs])
    wanted = Query.of(answer, query, language)
    limit = min(limit, max(MIN_PER_CHUNK, len(split_sentences(answer))))
    return {
        cid: [chunks[cid][i].index for i in _choose(candidates, wanted, collection, limit)]
        for cid, (candidates, _) in read.items()
    }


def select_sentences(sentences: list[Sentence], answer: str, query: str, limit: int) -> list[int]:
    """``select_batch`` for a single chunk."""
    return select_batch({"": sentences}, answer, query, limit)[""]
