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
* Claims (``select_claims``): a citation whose markers close claims of the answer is chosen for
  each claim, the claim's terms counting as the answer's, the question's as for a whole answer,
  the rest of the answer's at a quarter weight and never enough to qualify a sentence; at most
  one sentence per statement of the claim. Where one chunk is cited for several claims, each
  sentence goes to the claims that score it nearly as well as the best, so a sentence on net
  income is not also the revenue claim's.
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
# Less length normalisation than BM25's usual 0.75: a bare table row ("Total 1.3 % 13.6 %") must
# not outscore the sentence that says the same figure in words. Swept on both QA files (53
# questions: hit 0.887 at 0.75 and 0.6, 0.903 from 0.5 down to 0.3; precision 0.803 at 0.5 and
# 0.4, 0.797 at 0.3; the 7 unchanged throughout).
B = 0.5
QUESTION_WEIGHT = 0.5
# Answers with fewer terms than this lean on the question's terms in full.
SHORT_ANSWER = 3
# What a term of the heading above a sentence is worth to it, against its own terms.
CONTEXT_WEIGHT = 0.5
# A further sentence of a chunk must reach this share of the chunk's best score.
RELATIVE = 0.5
# Per chunk, at least this many sentences may be chosen, however short the answer.
MIN_PER_CHUNK = 2
# What a term of the answer outside the citation's own claim is worth: context, like the
# question, never enough to qualify a sentence.
REST_WEIGHT = 0.25
# Per chunk and claim, at most one sentence per statement of the claim (its sentences, and the
# clauses a sentence joins with ";" or ", and"): bench/claims_eval.py, two per claim cost 0.02-0.07
# of own-claim precision for 0.01 more claims highlighted.
MIN_PER_CLAIM = 1
# Where a chunk is cited for several claims, a claim takes a sentence it scores at least this
# share of the best claim's score for it.
SHARE = 0.8


# A claim (start, end) of the answer, or None: the answer as a whole.
Span = tuple[int, int] | None


@dataclass(frozen=True)
class Query:
    weights: dict[str, float]
    figures: frozenset[str]  # the claim's (or answer's) claimed figures
    # Terms that may qualify a sentence (``_supports``): the claim's, the question's and the
    # operands'. The rest of the answer only helps rank what qualified.
    primary: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls,
        answer: str,
        question: str,
        language: Language | None,
        claim: Span = None,
        answer_terms_all: set[str] | None = None,
    ) -> Query:
        """``answer_terms_all``: the whole answer's terms, when the caller has them (a batch of
        many claims reads the answer once)."""
        said = answer if claim is None else answer[claim[0] : claim[1]]
        answer_terms, claimed, _ = read(said, language)
        question_weight = QUESTION_WEIGHT if len(answer_terms) >= SHORT_ANSWER else 1.0
        weights = dict.fromkeys(terms(question, language), question_weight)
        # A computed answer ("the quick ratio was 0.54") is supported by the lines it was
        # computed from, which it does not name: they count as the answer's own terms.
        for line in operand_lines(f"{question}\n{said}"):
            weights.update(dict.fromkeys(terms(line, language), 1.0))
        weights.update(dict.fromkeys(answer_terms, 1.0))
        primary = frozenset(weights)
        if claim is not None and REST_WEIGHT > 0:
            # The rest of the answer is other citations' business: it only helps rank what the
            # claim (and the question) qualified. Measured: without it, or with the question as
            # context only, fewer claims got a highlight of their own at no gain in precision.
            everything = terms(answer, language) if answer_terms_all is None else answer_terms_all
            rest = everything - primary
            weights.update(dict.fromkeys(rest, REST_WEIGHT))
        return cls(weights, frozenset(claimed), primary)


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
    wanted = query.primary or query.weights.keys()
    own = candidate.own & wanted
    inherited = (candidate.context - candidate.own) & wanted
    # Under "Online Channel", "Net sales fell 12%" shares "sales" itself and the rest through
    # its heading; a sentence sharing nothing itself, or only a date, is not chosen for its
    # heading alone.
    telling = bool(own - candidate.dates)
    return (telling and len(own | inherited) >= 2) or bool(candidate.figures & query.figures)


def _choose(
    candidates: list[Candidate],
    query: Query,
    collection: Collection,
    limit: int,
    allowed: set[int] | None = None,
) -> list[int]:
    """Positions of the chosen candidates, best first (see the module docstring); only those in
    ``allowed`` when it is given."""
    scored = sorted(
        (
            (collection.score(c, query), c)
            for c in candidates
            if _supports(c, query) and (allowed is None or c.position in allowed)
        ),
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


def _shares(
    candidates: list[Candidate], queries: Mapping[Span, Query], collection: Collection
) -> dict[Span, set[int]]:
    """Where one chunk is cited for several claims, which candidates each claim may take: those
    it scores nearly as well as the claim that scores them best, or whose figures it states. A
    sentence on net income is then the net income claim's, not also the revenue claim's."""
    scores = {
        span: {c.position: collection.score(c, q) if _supports(c, q) else 0.0 for c in candidates}
        for span, q in queries.items()
    }
    best = {c.position: max(by[c.position] for by in scores.values()) for c in candidates}
    shares: dict[Span, set[int]] = {}
    for span, query in queries.items():
        shares[span] = {
            c.position
            for c in candidates
            if scores[span][c.position] > 0
            and (scores[span][c.position] >= SHARE * best[c.position] or c.figures & query.figures)
        }
    return shares


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


# Where one sentence of a claim joins two statements ("cost 12.5 billion, and each county pays
# one third"), each may have its own supporting sentence.
_CLAUSE_JOIN = re.compile(r";|,\s+(?:and|but|while|whereas)\s")


def _clauses(claim: str) -> int:
    return sum(1 + len(_CLAUSE_JOIN.findall(s.text)) for s in split_sentences(claim))


def select_claims(
    chunks: Mapping[str, Sequence[Sentence]],
    answer: str,
    query: str,
    wanted: Mapping[str, Sequence[Span]],
    limit: int,
) -> dict[str, dict[Span, list[int]]]:
    """Per chunk id and per claim it is cited for (``wanted``; None: the answer as a whole), the
    ids of up to ``limit`` sentences that support that claim, best first; an empty list where
    nothing echoes it. The chunks are the batch's cited ones: together they are the collection
    terms are weighed against."""
    texts = [answer, query, *(s.text for sentences in chunks.values() for s in sentences)]
    language = language_of(texts)
    read = {cid: _read(sentences, language) for cid, sentences in chunks.items()}
    collection = Collection.of([doc for _, docs in read.values() for doc in docs])
    spans = {span for spans in wanted.values() for span in spans}
    # The whole answer's terms serve every claim's context; a batch without claims needs none.
    everything = terms(answer, language) if spans - {None} else None
    queries = {span: Query.of(answer, query, language, span, everything) for span in spans}
    caps = {
        span: min(
            limit,
            max(MIN_PER_CHUNK, len(split_sentences(answer)))
            if span is None
            else max(MIN_PER_CLAIM, _clauses(answer[span[0] : span[1]])),
        )
        for span in spans
    }
    out: dict[str, dict[Span, list[int]]] = {}
    for cid, (candidates, _) in read.items():
        mine = {span: queries[span] for span in dict.fromkeys(wanted.get(cid, ()))}
        claimed: dict[Span, Query] = {span: q for span, q in mine.items() if span is not None}
        shares = _shares(candidates, claimed, collection) if len(claimed) > 1 else {}
        out[cid] = {}
        for span, q in mine.items():
            positions = _choose(candidates, q, collection, caps[span], shares.get(span))
            out[cid][span] = [chunks[cid][i].index for i in positions]
    return out


def select_batch(
    chunks: Mapping[str, Sequence[Sentence]], answer: str, query: str, limit: int
) -> dict[str, list[int]]:
    """``select_claims`` with every chunk cited for the answer as a whole."""
    wanted: dict[str, list[Span]] = {cid: [None] for cid in chunks}
    chosen = select_claims(chunks, answer, query, wanted, limit)
    return {cid: by_claim[None] for cid, by_claim in chosen.items()}


def select_sentences(sentences: list[Sentence], answer: str, query: str, limit: int) -> list[int]:
    """``select_batch`` for a single chunk."""
    return select_batch({"": sentences}, answer, query, limit)[""]
