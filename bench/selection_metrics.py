"""Judging chosen sentences against labelled evidence, for bench/selection_eval.py. Pure; no I/O.

**Tokens.** NFKC, case-folded, accents removed; a run of letters is one token and a number is one
token without its thousands separators ("3,142,308" -> "3142308", "8.4" stays "8.4"). Nothing is
stemmed and nothing is dropped: the judge must not share the selector's notion of a word, or
the benchmark would grade the selector by its own rules.

**A sentence is evidence for a passage** when all three hold:

1. words in order: at least 60% of its token bigrams occur in the passage (a one-token sentence:
   its token does), so a sentence made of the passage's words in another order does not count;
2. figures: at least 60% of its numbers occur in the passage, because financial text repeats one
   template with other figures ("an increase of 36%" is not the evidence "an increase of 77%");
3. substance: at least 4 of its tokens occur in the passage (all of the passage's, when it has
   fewer), so a bare heading or column header ("MGM China", "December 31,") is not evidence on
   its own: it shows the reader nothing the passage says.

**The chunks holding a passage** are the ones a retriever would cite for it: among the chunks whose
page range includes the evidence page, taken best first by how many of the passage's token
5-grams they contain, each chunk that adds at least 10% of the passage's 5-grams not already held,
until 90% are held. A passage no chunk holds 10% of is *unreachable* and counts as a miss.

**Scores** of one method on a set of questions (each question: its passages and the sentences the
method chose, per cited chunk):

* evidence hit: share of passages for which at least one chosen sentence of the question is
  evidence;
* evidence-token coverage: per passage, the passage's tokens (as a multiset) found in the chosen
  sentences that are evidence for it, over the passage's tokens found in its holding chunks at
  all (what any choice could reach); averaged over passages;
* precision: share of chosen sentences that are evidence for some passage of their question.

The random baseline draws, per cited chunk, as many sentences as the method chose there,
uniformly without replacement, and averages the same scores over many seeded draws.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

_TOKEN = re.compile(r"[^\W\d_]+|\d+(?:[.,]\d+)*")
ORDER_SHARE = 0.6
FIGURE_SHARE = 0.6
MIN_SUBSTANCE = 4
HOLD_GRAM = 5
HOLD_STEP = 0.10
HOLD_ENOUGH = 0.90


def tokens(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return [t.replace(",", "") if t[0].isdigit() else t for t in _TOKEN.findall(folded)]


def _is_number(token: str) -> bool:
    return token[0].isdigit()


def _grams(seq: Sequence[str], n: int) -> list[tuple[str, ...]]:
    if len(seq) < n:
        return [tuple(seq)] if seq else []
    return [tuple(seq[i : i + n]) for i in range(len(seq) - n + 1)]


@dataclass(frozen=True)
class Passage:
    """One labelled evidence passage, its page (1-based) and its tokens prepared for judging."""

    text: str
    page: int
    words: tuple[str, ...] = field(init=False)
    vocabulary: frozenset[str] = field(init=False)
    bigrams: frozenset[tuple[str, ...]] = field(init=False)
    counts: Counter[str] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        words = tuple(tokens(self.text))
        object.__setattr__(self, "words", words)
        object.__setattr__(self, "vocabulary", frozenset(words))
        object.__setattr__(self, "bigrams", frozenset(_grams(words, 2)))
        object.__setattr__(self, "counts", Counter(words))


def is_evidence(sentence: str, passage: Passage) -> bool:
    words = tokens(sentence)
    if not words or not passage.words:
        return False
    pairs = _grams(words, 2)
    if len(words) == 1:
        in_order = 1.0 if words[0] in passage.vocabulary else 0.0
    else:
        in_order = sum(p in passage.bigrams for p in pairs) / len(pairs)
    figures = [w for w in words if _is_number(w)]
    figure_share = sum(f in passage.vocabulary for f in figures) / len(figures) if figures else 1.0
    substance = sum(w in passage.vocabulary for w in words)
    return (
        in_order >= ORDER_SHARE
        and figure_share >= FIGURE_SHARE
        and substance >= min(MIN_SUBSTANCE, len(passage.vocabulary))
    )


@dataclass(frozen=True)
class ChunkText:
    id: str
    text: str
    page_start: int
    page_end: int


def holding_chunks(passage: Passage, chunks: Iterable[ChunkText]) -> list[str]:
    """Ids of the chunks a retriever would cite for ``passage`` (see the module docstring)."""
    wanted = set(_grams(passage.words, HOLD_GRAM))
    if not wanted:
        return []
    on_page = [c for c in chunks if c.page_start <= passage.page <= c.page_end]
    held_by = {c.id: wanted & set(_grams(tokens(c.text), HOLD_GRAM)) for c in on_page}
    order = sorted(on_page, key=lambda c: -len(held_by[c.id]))
    held: set[tuple[str, ...]] = set()
    chosen: list[str] = []
    for chunk in order:
        if len(held) >= HOLD_ENOUGH * len(wanted):
            break
        if len(held_by[chunk.id] - held) >= HOLD_STEP * len(wanted):
            chosen.append(chunk.id)
            held |= held_by[chunk.id]
    return chosen


def _overlap(a: Counter[str], b: Counter[str]) -> int:
    return sum((a & b).values())


@dataclass(frozen=True)
class Judged:
    """One sentence: for which passages of its question it is evidence, and its tokens."""

    verdict: tuple[bool, ...]
    counts: Counter[str]


@dataclass
class Question:
    """A question's passages, the chunks cited for them, and each passage's reachable tokens."""

    passages: list[Passage]
    chunks: dict[str, list[str]]  # cited chunk id -> its sentences, as the service splits them
    holders: list[list[str]]  # per passage: the ids of the chunks holding it
    reachable: list[int] = field(init=False)
    judged: dict[str, list[Judged]] = field(init=False)

    def __post_init__(self) -> None:
        self.reachable = []
        for passage, holders in zip(self.passages, self.holders, strict=True):
            chunk_counts: Counter[str] = Counter()
            for cid in holders:
                chunk_counts.update(tokens(" ".join(self.chunks[cid])))
            self.reachable.append(_overlap(passage.counts, chunk_counts))
        self.judged = {
            cid: [self.judge(s) for s in sentences] for cid, sentences in self.chunks.items()
        }

    def judge(self, sentence: str) -> Judged:
        return Judged(
            tuple(is_evidence(sentence, p) for p in self.passages), Counter(tokens(sentence))
        )


@dataclass
class Score:
    """Sums over passages and chosen sentences; ``add`` puts questions (or weighted draws)
    together."""

    passages: int = 0
    hits: float = 0.0
    coverage: float = 0.0
    chosen: float = 0.0
    evidence: float = 0.0

    def add(self, other: Score, weight: float = 1.0) -> None:
        self.hits += weight * other.hits
        self.coverage += weight * other.coverage
        self.chosen += weight * other.chosen
        self.evidence += weight * other.evidence

    def summary(self) -> dict[str, float]:
        return {
            "passages": self.passages,
            "evidence_hit": self.hits / self.passages if self.passages else 0.0,
            "coverage": self.coverage / self.passages if self.passages else 0.0,
            "precision": self.evidence / self.chosen if self.chosen else 0.0,
            "highlights": self.chosen,
        }


def _score(question: Question, judged: Sequence[Judged]) -> Score:
    score = Score(passages=len(question.passages), chosen=len(judged))
    score.evidence = sum(any(j.verdict) for j in judged)
    for i, passage in enumerate(question.passages):
        shown: Counter[str] = Counter()
        for j in judged:
            if j.verdict[i]:
                shown.update(j.counts)
        score.hits += any(j.verdict[i] for j in judged)
        if question.reachable[i]:
            score.coverage += _overlap(passage.counts, shown) / question.reachable[i]
    return score


def score_choice(question: Question, chosen: Mapping[str, Sequence[str]]) -> Score:
    """Score the sentences chosen per cited chunk (texts; chunks not cited are ignored)."""
    return _score(
        question,
        [
            question.judge(t)
            for cid, texts in chosen.items()
            if cid in question.chunks
            for t in texts
        ],
    )


def random_baseline(
    question: Question, counts: Mapping[str, int], draws: int, rng: random.Random
) -> Score:
    """Expected score of drawing ``counts[chunk]`` sentences uniformly from each cited chunk."""
    total = Score(passages=len(question.passages))
    for _ in range(draws):
        judged = [
            j
            for cid, sentences in question.judged.items()
            for j in rng.sample(sentences, min(counts.get(cid, 0), len(sentences)))
        ]
        total.add(_score(question, judged), 1.0 / draws)
    return total
