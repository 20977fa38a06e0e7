"""The edges of a chain of matching blocks: quote words dropped or changed next to it.

A chain (``matcher._best_chain``) ends where the quote and the document stop agreeing. Its
unmatched quote edges are looked for again just beside it, over words the quote dropped or a
changed word, so that the highlight starts and ends where the quoted words do.
"""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz.distance import Indel

from app.core.scripts import CJK

# Quote/document gap difference still read as an edit rather than a jump (about a long word).
EDIT_GAP = 20
EDGE_SIMILARITY = 0.5
# An unmatched quote edge is found again next to the chain (over words the quote dropped) from
# this many characters on: a short word such as "Los" in "Attorney [General,] Los" counts.
MIN_EDGE_RUN = 3
# ... also when the chain borrowed up to this many of its letters (see _regrown_head).
MAX_GIVE_BACK = 4


@dataclass(frozen=True, slots=True)
class Chain:
    """Quote range ``[q_start, q_end)`` aligned to skeleton range ``[d_start, d_end)``."""

    q_start: int
    q_end: int
    d_start: int
    d_end: int
    matched: int
    longest: int


def _edge_run(part: str) -> int:
    """Shortest run of a quote's edge found again on its own: two ideographs say as much as a
    short Latin word (an OCR'd "搞權等" for "質權等" keeps its "權等")."""
    return 2 if len(part) >= 2 and CJK.match(part[-1]) and CJK.match(part[0]) else MIN_EDGE_RUN


def _head(text: str, part: str, lo: int, end: int) -> tuple[int, int]:
    """(new start, matched chars) for an unmatched quote head ending at document ``end``:
    over words dropped from the quote, then over a changed word next to the matched rest."""
    if not part or len(part) > EDIT_GAP:
        return end, 0
    area = max(lo, end - len(part) - EDIT_GAP)
    for cut in range(0, len(part) - _edge_run(part) + 1):
        found = text.rfind(part[: len(part) - cut], area, end)
        if found >= 0:
            return found, len(part) - cut
    near = text[max(lo, end - len(part)) : end]
    similar = Indel.normalized_similarity(part, near) >= EDGE_SIMILARITY
    return (end - len(near), 0) if similar else (end, 0)


def _tail(text: str, part: str, start: int, hi: int) -> tuple[int, int]:
    if not part or len(part) > EDIT_GAP:
        return start, 0
    area = min(hi, start + len(part) + EDIT_GAP)
    for cut in range(0, len(part) - _edge_run(part) + 1):
        found = text.find(part[cut:], start, area)
        if found >= 0:
            return min(area, found + len(part) - cut), len(part) - cut
    near = text[start : min(hi, start + len(part))]
    similar = Indel.normalized_similarity(part, near) >= EDGE_SIMILARITY
    return (start + len(near), 0) if similar else (start, 0)


def _regrown_head(text: str, quote: str, chain: Chain, lo: int) -> tuple[int, int]:
    """(new start, net matched chars) when the chain borrowed the end of a short quote head.

    "erat [volutpat] Ut wisi" with the bracketed word dropped: the chain aligns the quote's
    "at" with the end of "volutpat", leaving only "er" unmatched. Give back a few chain
    characters and look for the whole word ("erat") just before the chain instead.
    """
    q, d = chain.q_start, chain.d_start
    for give in range(1, MAX_GIVE_BACK + 1):
        if q + give > len(quote) or quote[q + give - 1] != text[d + give - 1]:
            break
        part = quote[: q + give]
        if len(part) < MIN_EDGE_RUN:
            continue
        found = text.rfind(part, max(lo, d - len(part) - EDIT_GAP), d)
        if found >= 0:
            return found, len(part) - give
    return d, 0


def _regrown_tail(text: str, quote: str, chain: Chain, hi: int) -> tuple[int, int]:
    q, d = chain.q_end, chain.d_end
    for give in range(1, MAX_GIVE_BACK + 1):
        if q - give < 0 or quote[q - give] != text[d - give]:
            break
        part = quote[q - give :]
        if len(part) < MIN_EDGE_RUN:
            continue
        found = text.find(part, d, min(hi, d + len(part) + EDIT_GAP))
        if found >= 0:
            return found + len(part), len(part) - give
    return d, 0


def extend_edges(text: str, quote: str, chain: Chain, lo: int, hi: int) -> Chain:
    head_q, tail_q = quote[: chain.q_start], quote[chain.q_end :]
    d_start, head_matched = _head(text, head_q, lo, chain.d_start)
    if 0 < len(head_q) < MIN_EDGE_RUN and not head_matched:
        regrown, net = _regrown_head(text, quote, chain, lo)
        if net > 0:
            d_start, head_matched = regrown, net
    d_end, tail_matched = _tail(text, tail_q, chain.d_end, hi)
    if 0 < len(tail_q) < MIN_EDGE_RUN and not tail_matched:
        regrown, net = _regrown_tail(text, quote, chain, hi)
        if net > 0:
            d_end, tail_matched = regrown, net
    return Chain(
        0 if d_start < chain.d_start else chain.q_start,
        len(quote) if d_end > chain.d_end else chain.q_end,
        d_start,
        d_end,
        chain.matched + head_matched + tail_matched,
        chain.longest,
    )
