"""Which of several identical places is the quoted one? Ask the chunk the quote came from.

A sentence repeated word for word ("December 31,", a boilerplate paragraph) matches equally
well in each place it is printed. The service knows more than the sentence: the text of the
chunk it was cut from and where in that chunk it starts. The chunk's text just before and just
after the sentence is aligned with the document's text before and after each candidate; the
candidate whose surroundings are the chunk's wins when they clearly are. Context repeated along
with the sentence fits several candidates alike and decides nothing: only a true tie stays
ambiguous.

Before the chunk is asked, the quote itself may tell: the skeleton folds case and punctuation,
so "NET INCOME", "Net income" and "Net income," are one place to it, but a quote copied from
one of them keeps its wording (``verbatim``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from rapidfuzz.distance import Indel

from app.alignment.edges import EDIT_GAP
from app.alignment.index import DocumentIndex
from app.alignment.matcher import Match
from app.alignment.text import normalize_text

# The winner's surroundings must account for at least this share of the chunk's context (and
# MIN_SUPPORT characters): a chunk really printed around a candidate agrees with it almost
# everywhere, while a little agreement is what a third occurrence the search did not list (or
# another extractor's order) leaves behind. The context fitting it alone need only be
# MIN_SUPPORT characters (a few words), but MIN_RATIO times the runner-up's: a boilerplate
# notice printed in two documents shares most of its context, and the sentence or two beyond
# it that differ are all the evidence there is; two places with much the same surroundings (a
# figure printed twice, drawn in different orders) still leave no clear winner.
MIN_SHARE = 0.2
MIN_SUPPORT = 24
MIN_RATIO = 1.5
# Context compared on each side of the sentence (skeleton characters): far context says little
# about which nearby repetition is meant.
REACH = 400
# The document's text may run this much longer than the chunk's (order, furniture, edits).
SLACK = EDIT_GAP + REACH // 8
# Only runs of at least this many characters count as agreement (as a gram seed would).
MIN_BLOCK = 6

# What PDFs and quoters print differently anyway: quote-mark styles; hyphens and dashes, which
# a line end may add ("care-" "fully") or hide ("206-231-" "3195" quoted as "206-231- 3195").
_STYLES = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033", '"'),
        **dict.fromkeys("-\u00ad\u2010\u2011\u2012\u2013\u2014\u2015\u2212", None),
    }
)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class ChunkHint:
    """The cited chunk's text and the sentence's character offset in it."""

    text: str
    start: int


def _agreeing(context: str, document: str, sign: int) -> set[int]:
    """Positions of ``context`` (tagged by side) in runs the document text shares with it."""
    found: set[int] = set()
    if not context or not document:
        return found
    for block in Indel.opcodes(context, document).as_matching_blocks():
        if block.size >= MIN_BLOCK:
            found.update(sign * (1 + i) for i in range(block.a, block.a + block.size))
    return found


def _support(text: str, before: str, after: str, candidate: Match, lo: int, hi: int) -> set[int]:
    """The chunk context (``before`` the sentence, ``after`` it) found around ``candidate``."""
    left = text[max(lo, candidate.start - len(before) - SLACK) : candidate.start]
    right = text[candidate.end : min(hi, candidate.end + len(after) + SLACK)]
    # Left context is matched reversed so that its positions count from the sentence outwards.
    return _agreeing(before[::-1], left[::-1], -1) | _agreeing(after, right, 1)


def choose(
    index: DocumentIndex, hint: ChunkHint, quote: str, candidates: list[Match], lo: int, hi: int
) -> Match | None:
    """The candidate the chunk puts the sentence at, or None when the chunk does not say.

    ``quote`` is the sentence's skeleton; ``candidates`` are the equally good places for it.
    """
    if len(candidates) < 2 or not 0 <= hint.start <= len(hint.text):
        return None
    chunk = normalize_text(hint.text)
    at = len(normalize_text(hint.text[: hint.start]))
    before = chunk[max(0, at - REACH) : at]
    after = chunk[at + len(quote) : at + len(quote) + REACH]
    text = index.norm.text
    support = [_support(text, before, after, candidate, lo, hi) for candidate in candidates]
    exclusive = [
        len(own - set().union(*(other for j, other in enumerate(support) if j != i)))
        for i, own in enumerate(support)
    ]
    ranked = sorted(range(len(candidates)), key=lambda i: -exclusive[i])
    winner, runner_up = ranked[0], ranked[1]
    bar = max(MIN_SUPPORT, MIN_SHARE * (len(before) + len(after)))
    if len(support[winner]) < bar:
        return None
    if exclusive[winner] < max(MIN_SUPPORT, MIN_RATIO * exclusive[runner_up]):
        return None
    return candidates[winner]


def surface(text: str) -> str:
    """``text``'s case and punctuation from its first to its last letter or digit, as far as
    PDFs and quoters agree on them: no white space, dashes or compatibility forms, one style
    of quote marks."""
    text = _SPACE.sub("", unicodedata.normalize("NFKC", text).translate(_STYLES))
    alnum = [i for i, char in enumerate(text) if char.isalnum()]
    return text[alnum[0] : alnum[-1] + 1] if alnum else ""


def verbatim(index: DocumentIndex, quote: str, candidates: list[Match]) -> Match | None:
    """The one candidate printed with the quote's (raw text ``quote``) own case and
    punctuation; None when none is, or several are: those stay a tie."""
    key = surface(quote)
    if not key:
        return None
    same = [
        candidate
        for candidate in candidates
        if surface(
            "\n".join(
                index.chars[start:end]
                for segment in candidate.segments
                for start, end in index.norm.source_runs(*segment)
            )
        )
        == key
    ]
    return same[0] if len(same) == 1 else None
