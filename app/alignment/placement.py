"""Which of several identical places is the quoted one? Ask the chunk the quote came from.

A sentence repeated word for word ("December 31,", a boilerplate paragraph) matches equally
well in each place it is printed. The service knows more than the sentence: the text of the
chunk it was cut from and where in that chunk it starts. Placing the chunk's own text in the
document (every shared gram "votes" for the chunk being at some offset) says where the
sentence should be; the candidate at that spot wins when the vote is clear. The sentence's own
grams, and any context that is repeated too, vote for every candidate alike and so decide
nothing: only a true tie stays ambiguous.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from app.alignment.grams import seeds
from app.alignment.index import DocumentIndex
from app.alignment.matcher import EDIT_GAP, Match
from app.alignment.text import normalize_text

# The winner needs votes from at least this share of the chunk's grams near the sentence (and
# MIN_VOTES): a chunk really printed around a candidate agrees with it almost everywhere, while
# a few stray votes are what a third occurrence the search did not list (or text from another
# extractor's order) leaves behind. Of the votes for it alone, MIN_VOTES and MIN_RATIO times
# the runner-up's.
MIN_SHARE = 0.2
MIN_VOTES = 8
MIN_RATIO = 1.5
# Extraction order and edits shift the chunk's text against the document's the further a seed
# is from the sentence: its tolerance grows by one character per this many of distance.
DRIFT = 8
# Only the chunk's text this close to the sentence (skeleton characters) votes: far context
# says little about which nearby repetition is meant, and its tolerance is too wide to.
REACH = 400


@dataclass(frozen=True, slots=True)
class ChunkHint:
    """The cited chunk's text and the sentence's character offset in it."""

    text: str
    start: int


def _votes(
    index: DocumentIndex, chunk: str, at: int, length: int, lo: int, hi: int
) -> list[tuple[int, int]]:
    """(offset from the sentence in the chunk, implied document position of the sentence) for
    every chunk gram near the sentence but outside it that the document has in ``lo:hi``."""
    base = max(0, at - REACH)
    near = chunk[base : at + length + REACH]
    return [
        (qpos + base - at, dpos - qpos - base + at)
        for qpos, dpos in seeds(index.grams, near, lo, hi)
        if not at <= qpos + base < at + length
    ]


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
    votes = sorted(
        (position, offset) for offset, position in _votes(index, chunk, at, len(quote), lo, hi)
    )
    context = min(at, REACH) + min(len(chunk) - at - len(quote), REACH)
    widest = EDIT_GAP + (REACH + len(quote)) // DRIFT
    voters: list[set[int]] = []
    for candidate in candidates:
        first = bisect_left(votes, (candidate.start - widest, -len(chunk)))
        last = bisect_right(votes, (candidate.start + widest, len(chunk)))
        voters.append(
            {
                offset
                for position, offset in votes[first:last]
                if abs(position - candidate.start) <= EDIT_GAP + abs(offset) // DRIFT
            }
        )
    # Context repeated along with the sentence votes for several candidates and decides
    # nothing; what counts is the context that fits one place only.
    exclusive = [
        len(own - set().union(*(v for j, v in enumerate(voters) if j != i)))
        for i, own in enumerate(voters)
    ]
    ranked = sorted(range(len(candidates)), key=lambda i: -exclusive[i])
    winner, runner_up = ranked[0], ranked[1]
    if len(voters[winner]) < max(MIN_VOTES, MIN_SHARE * context):
        return None
    if exclusive[winner] < max(MIN_VOTES, MIN_RATIO * exclusive[runner_up]):
        return None
    return candidates[winner]
