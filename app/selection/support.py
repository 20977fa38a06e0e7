"""Does a chunk support a claim, and with which of its sentences? Pure.

A claim is read into what a source must show to support it (``Claim.of``):

* its telling words, each weighed by how rare it is in the cited chunk's whole document
  (``stats.py``): "Creative Cloud" is worth much, "revenue" and "fiscal" in a 10-K little. A
  lower-case word the document never uses is the answer's own wording ("company level"): no
  chunk of it could show it, so it does not count; a name it never uses does, and no chunk
  shows it. An abbreviation is shown by the words it abbreviates ("PPNE", "PP&E": property,
  plant and equipment), and the usual words for up and down stand for each other ("fell",
  "declined");
* its figures, as values (``values.py``): "$10,459 million" is shown by a row "10,459" under
  "(In millions)", where the sentence also says what it measures (a word of the claim, its
  question or its heading); years and periods only date a claim. A figure is also shown by a
  table row
  whose two figures it is the change of ("a decline of ~42%": 1,093 against 1,874) when the
  row's label shares a word of the claim, and, for a measure computed from statement lines
  (``operands.py``: "quick ratio", "inventory turnover"), by the lines it is computed from,
  which is all a source can show of a computed figure. Together the figures weigh
  ``FIGURES`` of the words;
* a claim with almost nothing of its own ("Yes", "There are none") is read with its question's
  words, which are then all there is to go on.

A sentence (a table row counts as one, ``rows.py``) *shows* a word when it has it, or, at
``CONTEXT``, when its heading has it. Sentences are chosen greedily, each for what it adds to
what the chosen ones show, so a list's items each get their sentence, a computed measure gets a
row per operand, and a row that repeats what is shown is not taken.

The verdict is the share of the claim the chosen sentences show (``support_score``: their
weight over that of the claim's ``ENOUGH`` weightiest items, at most 1; a long answer's every
word is more than one passage says): ``supported`` from ``SUPPORTED``, ``partial`` from
``PARTIAL``, else ``unsupported``, and then nothing is chosen. A chunk that states one of the
claim's figures differently for the same measure (every word of it, and another value of the
same kind) contradicts the claim: ``unsupported``, score 0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from app.selection.operands import operand_lines
from app.selection.stats import DocumentStats
from app.selection.terms import STOPWORDS, Language, read, terms
from app.selection.values import Value, agrees, values

Support = Literal["supported", "partial", "unsupported"]

# Verdict thresholds on the share of the claim's weight shown (bench/support_eval.py, with
# leave-one-company-out folds).
SUPPORTED = 0.6
PARTIAL = 0.35
# A sentence is chosen only for what it adds: more than this share of the claim (of ``enough``).
MIN_GAIN = 0.2
# A heading's words count this much for the sentences under it.
CONTEXT = 0.5
# A claim with fewer telling words and figures than this is read with its question's words.
SHORT_CLAIM = 2
# All of a claim's figures together weigh this share of its words; as much as its words when
# they are a named measure's, computed from statement lines.
FIGURES = 0.5
FIGURES_COMPUTED = 1.0
# Showing this many of a claim's weightiest items is showing all of it.
ENOUGH = 5
# What saying "rose" or "fell" is worth, whichever word says it.
DIRECTION = 0.5
# How many operand lines of a named measure stand for one of its figures.
OPERANDS_PER_FIGURE = 2
# Bounds on what one claim is read into: a 20,000-character answer cited as a whole holds
# thousands of words and figures, and every sentence of every cited chunk is held against each
# of them. A claim says far fewer; past these, what says least is left out.
MAX_WORDS = 100
MAX_FIGURES = 20
MAX_ABBREVIATIONS = 20

_UP = "increas rose rise risen higher gain up improv jump".split()
_DOWN = "decreas declin fell fall fallen drop lower down reduc decelerat shrank".split()
_DIRECTION = {**dict.fromkeys(_UP, "+direction"), **dict.fromkeys(_DOWN, "-direction")}
# Words that date or frame a claim or a question, never what it states.
_FRAMING_WORDS = (
    "fy fiscal year years quarter quarters month months period ended ending end q1 q2 q3 q4 "
    "h1 h2 ytd able much many any approximately roughly about around nearly based using data "
    "calculate calculated answer question company companies assume assumes million millions "
    "billion billions thousand thousands percent percentage through clearly clear round rounded "
    "decimal place places unit units utilize utilizing line lines item items statement "
    "statements shown show state explain please metric metrics useful define defined "
    "following best abilities drawing conclusions information provided stated only relevant "
    "respect terms times"
).split()
_FRAMING = frozenset(_FRAMING_WORDS) | frozenset(
    t for w in _FRAMING_WORDS for t in terms(w, "english")
)
_ACRONYM = re.compile(r"\b[A-Z][A-Z&]{1,6}\b")
# Citation markers ("[1]", "[2, 3]", "[1-50]", "【1】", "<sup>1</sup>"): their numbers are no
# figures of the claim (a claim cited as the whole answer keeps the other citations' markers).
_MARKER = re.compile(r"\[\^?[\d,\s\-–]+\]|【[\d,\s\-–]+】|<sup>[\d,\s]+</sup>")
# A capitalised word that does not start a sentence: a name.
_NAME = re.compile(r"(?<=[\w,;:)] )[A-Z][a-z]+")
_SKIPPABLE = frozenset({"and", "of", "the", "&", "for"})
_WORD = re.compile(r"[A-Za-z]+|&")
_FIGURE = re.compile(r"\d[\d,.]*")


def directed(found: set[str]) -> set[str]:
    """Terms with the words for up and down added as their direction, and "revenue" beside
    "sales" (a statement's "Total net sales" is the answer's "revenue")."""
    return (
        found
        | {_DIRECTION[t] for t in found if t in _DIRECTION}
        | ({"revenu"} if "sale" in found else set())
    )


def spells(letters: str, text: str) -> bool:
    """Do consecutive words of ``text`` have ``letters`` as initials ("PPNE": property, plant
    and equipment; "SG&A": selling, general and administrative; "COGS": cost of goods sold)?
    "and", "of", "the", "for" may be skipped or give their initial ("and" its N); no other
    function word gives one ("EBITDAR of $3.1 billion in the" does not spell EBIT), and a
    figure between the words ends the run."""
    wanted = letters.lower().replace("&", "")
    if len(wanted) < 2:
        return False
    runs = [[w.lower() for w in _WORD.findall(part)] for part in _FIGURE.split(text)]
    return any(_spells_from(wanted, words) for words in runs)


def _spells_from(wanted: str, words: list[str]) -> bool:
    """``spells`` on one run of words, starting at any word that is not a function word. Read
    word by word, keeping the set of letters reached so far: a skippable word may be skipped or
    read, and trying each way of reading a run of them in turn took a second for 40 "and"s and
    hours for 100 (and ran out of stack for 1,000)."""
    reached: set[int] = set()  # how many letters are spelt so far, by each way of reading
    for word in words:
        if word[0] == wanted[0] and word not in STOPWORDS:
            reached.add(0)  # a start here
        after: set[int] = set()
        for j in reached:
            if word in _SKIPPABLE:
                after.add(j)
            if word in ("and", "&"):  # "PPNE": property, plant aNd equipment
                if wanted[j] == "n":
                    after.add(j + 1)
            elif word in STOPWORDS and word not in _SKIPPABLE:  # "COGS": cost Of goods sold
                continue
            elif word[0] == wanted[j]:
                after.add(j + 1)
        if len(wanted) in after:
            return True
        reached = after
    return False


@dataclass(frozen=True)
class Unit:
    """A sentence as support is judged: its position, terms, its heading's, its values."""

    position: int
    text: str
    own: set[str]
    context: set[str]
    values: list[Value]
    scale: float


@dataclass(frozen=True)
class Figure:
    value: Value
    label: frozenset[str]  # the claim's words: what the figure measures
    weight: float


@dataclass
class Claim:
    words: dict[str, float]  # term -> weight
    letters: dict[str, str]  # term -> the abbreviation it was read from
    figures: list[Figure]
    operands: list[frozenset[str]]  # a named measure's lines, as terms
    # Ranks sentences that show the same: the question's words and the rest of the answer.
    context: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.words.values()) + sum(f.weight for f in self.figures)

    @property
    def enough(self) -> float:
        """What showing all of the claim amounts to: its ``ENOUGH`` weightiest items (a long
        answer's every word is more than any one passage says)."""
        weights = sorted([*self.words.values(), *(f.weight for f in self.figures)], reverse=True)
        return sum(weights[:ENOUGH]) or 1.0

    @classmethod
    def of(
        cls,
        said: str,
        question: str,
        stats: DocumentStats,
        language: Language | None,
        rest: str | set[str] = "",
    ) -> Claim:
        """``rest``: the rest of the answer, or its terms when the caller has read them once
        for many claims."""
        said = _MARKER.sub(" ", said)
        figures = list(
            {
                (v.amount, v.percent): v for v in values(said) if not v.date and not v.enumerator
            }.values()
        )[:MAX_FIGURES]
        words = _telling(said, stats, language)
        if len({t for t in words if t[0] not in "+-"}) + len(figures) < SHORT_CLAIM:
            words |= _telling(question, stats, language)
        weighed = {t: (DIRECTION if t[0] in "+-" else stats.idf(t)) for t in sorted(words)}
        # The weightiest, in the claim's term order: what is cut is what says least.
        kept = set(sorted(weighed, key=lambda t: -weighed[t])[:MAX_WORDS])
        weights = {t: w for t, w in weighed.items() if t in kept}
        letters: dict[str, str] = {}
        for found in _ACRONYM.findall(f"{said} {question}"):
            for term in terms(found, language):
                if term in weights and len(letters) < MAX_ABBREVIATIONS:
                    letters.setdefault(term, found)
        operands = [
            frozenset(terms(line, language)) for line in operand_lines(f"{question}\n{said}")
        ]
        # A named measure's figure is computed: what the claim is about, and what its
        # operands' rows show.
        share = FIGURES_COMPUTED if operands else FIGURES
        each = share * sum(weights.values()) / len(figures) if figures and weights else 1.0
        label = frozenset(t for t in weights if t[0] not in "+-")
        rest_terms = terms(rest, language) if isinstance(rest, str) else rest
        context = dict.fromkeys(rest_terms, 0.25)
        context.update(dict.fromkeys(terms(question, language), 0.5))
        return cls(weights, letters, [Figure(v, label, each) for v in figures], operands, context)


def _telling(text: str, stats: DocumentStats, language: Language | None) -> set[str]:
    """The words of ``text`` a source must show: not figures, not framing; and either used
    somewhere in the document or a name (capitalised inside a sentence, or an abbreviation). A
    lower-case word the document never uses is the answer's own wording ("company level"), no
    chunk of it could show; a name it never uses ("Creative Cloud" cited to another company's
    filing) is what no chunk of it supports."""
    found = directed(read(text, language).terms)
    names = {t for n in _NAME.findall(text) for t in terms(n, language)}
    names |= {t for a in _ACRONYM.findall(text) for t in terms(a, language)}
    return {
        t
        for t in found
        if not t[0].isdigit()
        and t not in _FRAMING
        and (t[0] in "+-" or stats.df.get(t, 0) > 0 or t in names)
    }


@dataclass(frozen=True)
class Shown:
    """What one unit shows of a claim."""

    words: dict[str, float]  # term -> 1, or CONTEXT through its heading
    figures: tuple[bool, ...]
    operands: frozenset[int]


def shown_by(unit: Unit, claim: Claim) -> Shown:
    # From the sentence's few terms, not the claim's many.
    words = dict.fromkeys(unit.context & claim.words.keys(), CONTEXT)
    words.update(dict.fromkeys(unit.own & claim.words.keys(), 1.0))
    for term, letters in claim.letters.items():
        if term not in unit.own and spells(letters, unit.text):
            words[term] = 1.0
    # A figure is shown where the sentence also says what it measures (a word of the claim or
    # of its question, or of the sentence's heading): a bare "20,215" in another table is not
    # the claim's "$20 billion".
    labelled = any(t[0] not in "+-" for t in words) or bool(
        (unit.own | unit.context) & claim.context.keys()
    )
    figures = tuple(
        labelled and (any(agrees(f.value, v, unit.scale) for v in unit.values) or _derived(f, unit))
        for f in claim.figures
    )
    # A statement line: the row's own label (not its heading's) and a figure (not a footnote's
    # or a list's number).
    stated = any(not v.date and v.written >= 10 for v in unit.values)
    operands = frozenset(
        i for i, line in enumerate(claim.operands) if stated and line and line <= unit.own
    )
    return Shown(words, figures, operands)


def _derived(figure: Figure, unit: Unit) -> bool:
    """A percentage change or a difference of two figures of one row whose label shares a word
    of the claim ("a decline of ~42%": cash 1,093 against 1,874)."""
    plain = [v for v in unit.values if not v.percent and not v.date and v.amount]
    if not 2 <= len(plain) <= 6 or not (figure.label & unit.own):
        return False
    claim = figure.value
    for a in plain:
        for b in plain:
            if a is b:
                continue
            gap = abs(a.amount - b.amount)
            if claim.percent:
                change = gap / b.amount * 100
                if agrees(claim, Value(change, change, 0.0, True, False, False)):
                    return True
            elif gap and agrees(claim, Value(gap, gap, 0.0, False, False, False), unit.scale):
                return True
    return False


def shown_weight(claim: Claim, shown: Sequence[Shown]) -> float:
    """The weight of the claim that ``shown`` shows together."""
    total = 0.0
    for term, weight in claim.words.items():
        total += weight * max((s.words.get(term, 0.0) for s in shown), default=0.0)
    operands = len(frozenset().union(*(s.operands for s in shown))) if shown else 0
    by_operands = min(1.0, operands / OPERANDS_PER_FIGURE)
    for i, figure in enumerate(claim.figures):
        stated = any(s.figures[i] for s in shown)
        total += figure.weight * (1.0 if stated else by_operands)
    return total


class _Together:
    """What the chosen sentences show together, so a candidate's gain is read off its own
    words (``shown_weight`` of the chosen plus it, less theirs, without summing the claim's
    words again for every candidate)."""

    def __init__(self, claim: Claim) -> None:
        self.claim = claim
        self.words: dict[str, float] = {}
        self.figures = [False] * len(claim.figures)
        self.operands: set[int] = set()
        self.weight = 0.0

    def _figure_weight(self, figures: Sequence[bool], operands: int) -> float:
        by_operands = min(1.0, operands / OPERANDS_PER_FIGURE)
        return sum(
            f.weight * (1.0 if stated else by_operands)
            for f, stated in zip(self.claim.figures, figures, strict=True)
        )

    def gain(self, shown: Shown) -> float:
        weights = self.claim.words
        gain = sum(
            weights[t] * (s - self.words.get(t, 0.0))
            for t, s in shown.words.items()
            if s > self.words.get(t, 0.0)
        )
        if self.claim.figures:
            figures = [a or b for a, b in zip(self.figures, shown.figures, strict=True)]
            operands = len(self.operands | shown.operands)
            gain += self._figure_weight(figures, operands) - self._figure_weight(
                self.figures, len(self.operands)
            )
        return gain

    def add(self, shown: Shown) -> None:
        self.weight += self.gain(shown)
        for term, s in shown.words.items():
            self.words[term] = max(self.words.get(term, 0.0), s)
        self.figures = [a or b for a, b in zip(self.figures, shown.figures, strict=True)]
        self.operands |= shown.operands


@dataclass(frozen=True)
class Verdict:
    ids: tuple[int, ...]  # the chosen units' positions (or sentence ids), best first
    support: Support
    score: float


def judge(
    units: Sequence[Unit], claim: Claim, limit: int, allowed: set[int] | None = None
) -> Verdict:
    """Choose the units that show the claim, each for what it adds, and give the verdict (see
    the module docstring)."""
    total = claim.total
    pool = [u for u in units if allowed is None or u.position in allowed]
    if total <= 0 or not pool:
        return Verdict((), "unsupported", 0.0)
    shows = {u.position: shown_by(u, claim) for u in pool}
    rank = {u.position: sum(claim.context[t] for t in u.own & claim.context.keys()) for u in pool}
    shown = _Together(claim)
    chosen: list[int] = []
    while len(chosen) < limit:
        best: tuple[float, float, int, int] | None = None
        for unit in pool:
            if unit.position in chosen:
                continue
            key = (shown.gain(shows[unit.position]), rank[unit.position], -len(unit.text))
            if best is None or (*key, -unit.position) > best:
                best = (*key, -unit.position)
        # More than the share, computed exactly: a sentence adding exactly one of five equal
        # words is not taken (the sum of all words, less those chosen, left it a hair under).
        if best is None or best[0] <= MIN_GAIN * claim.enough + 1e-9:
            break
        chosen.append(-best[3])
        shown.add(shows[-best[3]])
    score = shown.weight
    share = round(min(1.0, score / claim.enough), 3)
    if _contradicted(pool, claim, [shows[p] for p in chosen]):
        return Verdict((), "unsupported", 0.0)
    if share >= SUPPORTED:
        return Verdict(tuple(chosen), "supported", share)
    if share >= PARTIAL and chosen:
        return Verdict(tuple(chosen), "partial", share)
    return Verdict((), "unsupported", share)


def _contradicted(units: Sequence[Unit], claim: Claim, chosen: Sequence[Shown]) -> bool:
    """A figure of the claim that no chosen sentence shows, while a sentence of the chunk has
    every word of the claim (two at least) and states another value of the same kind."""
    for i, figure in enumerate(claim.figures):
        if any(s.figures[i] for s in chosen) or len(figure.label) < 2:
            continue
        for unit in units:
            if figure.label <= unit.own and any(
                v.percent == figure.value.percent and not v.date for v in unit.values
            ):
                return True
    return False
