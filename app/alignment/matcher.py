"""Skeleton-level matching: exact search, then seeded fuzzy alignment.

A fuzzy match is a chain of exactly matching blocks (rapidfuzz Indel alignment of the quote
against a window chosen by gram seeds). Small gaps inside a chain are edits (dropped, changed
or added words) and are highlighted; a large gap means the PDF's text order inserted something
the reader does not see as part of the sentence (a running header at a page break, a footnote,
the other half of a comparison table), so the rest of the quote is located separately nearby and
only the matched pieces are highlighted.
"""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz.distance import Indel

from app.alignment.grams import GramTable, seeds
from app.alignment.text import information

# Quote/document gap difference still read as an edit rather than a jump (about a long word).
EDIT_GAP = 20
# How far (skeleton characters) the rest of a quote may be from its first matched piece.
JUMP = 4000
# Pieces of a quote smaller than this (Latin-letter equivalents) are not searched on their own.
MIN_PIECE_INFO = 14.0
MAX_CANDIDATES = 4
MAX_DEPTH = 3


@dataclass(frozen=True, slots=True)
class Match:
    segments: tuple[tuple[int, int], ...]  # skeleton half-open ranges, in document order
    matched: int  # quote characters aligned to identical document characters
    quote_len: int

    @property
    def covered(self) -> int:
        return sum(end - start for start, end in self.segments)

    @property
    def start(self) -> int:
        return self.segments[0][0]

    @property
    def end(self) -> int:
        return self.segments[-1][1]

    @property
    def score(self) -> float:
        total = self.quote_len + self.covered
        return 100.0 * 2 * self.matched / total if total else 0.0


@dataclass(frozen=True, slots=True)
class _Chain:
    q_start: int
    q_end: int
    d_start: int
    d_end: int
    matched: int


def exact_all(text: str, quote: str, lo: int, hi: int, limit: int = 64) -> list[int]:
    found: list[int] = []
    pos = text.find(quote, lo, hi)
    while pos >= 0 and len(found) < limit:
        found.append(pos)
        pos = text.find(quote, pos + 1, hi)
    return found


def _clusters(pairs: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """Group seeds by diagonal; ``(support, min_diag, max_diag)``, best supported first."""
    diagonals = sorted((dpos - qpos, qpos) for qpos, dpos in pairs)
    groups: list[tuple[int, int, int]] = []
    start = 0
    for i in range(1, len(diagonals) + 1):
        if i == len(diagonals) or diagonals[i][0] - diagonals[i - 1][0] > EDIT_GAP:
            support = len({qpos for _, qpos in diagonals[start:i]})
            groups.append((support, diagonals[start][0], diagonals[i - 1][0]))
            start = i
    groups.sort(key=lambda group: (-group[0], group[1]))
    return groups


def _compatible(gap_quote: int, gap_doc: int) -> bool:
    return abs(gap_doc - gap_quote) <= EDIT_GAP


def _best_chain(quote: str, window: str, offset: int) -> _Chain | None:
    min_block = 2 if information(quote) > 1.5 * len(quote) else 3
    blocks = [b for b in Indel.opcodes(quote, window).as_matching_blocks() if b.size >= min_block]
    best: _Chain | None = None
    first = 0
    for i in range(1, len(blocks) + 1):
        if i < len(blocks):
            prev, cur = blocks[i - 1], blocks[i]
            if _compatible(cur.a - prev.a - prev.size, cur.b - prev.b - prev.size):
                continue
        run = blocks[first:i]
        matched = sum(b.size for b in run)
        if best is None or matched > best.matched:
            last = run[-1]
            best = _Chain(
                run[0].a,
                last.a + last.size,
                offset + run[0].b,
                offset + last.b + last.size,
                matched,
            )
        first = i
    return best


def _extend_edges(chain: _Chain, quote_len: int, lo: int, hi: int) -> _Chain:
    """A changed first/last word leaves a short unmatched quote edge: cover the same width."""
    head = chain.q_start if chain.q_start <= EDIT_GAP else 0
    tail = quote_len - chain.q_end if quote_len - chain.q_end <= EDIT_GAP else 0
    return _Chain(
        chain.q_start - head,
        chain.q_end + tail,
        max(lo, chain.d_start - head),
        min(hi, chain.d_end + tail),
        chain.matched,
    )


def _locate_piece(
    text: str, table: GramTable, piece: str, lo: int, hi: int, depth: int
) -> Match | None:
    if information(piece) < MIN_PIECE_INFO:
        return None
    hits = exact_all(text, piece, lo, hi, limit=2)
    if len(hits) == 1:
        return Match(((hits[0], hits[0] + len(piece)),), len(piece), len(piece))
    if hits:
        return None  # ambiguous nearby: guessing would risk the wrong words
    return fuzzy(text, table, piece, lo, hi, depth + 1)


def _complete(
    text: str, table: GramTable, quote: str, chain: _Chain, bounds: tuple[int, int], depth: int
) -> Match:
    """Locate what the chain left out of the quote (before and after it) near the chain."""
    lo, hi = bounds
    segments = [(chain.d_start, chain.d_end)]
    matched = chain.matched
    if depth < MAX_DEPTH:
        near = (max(lo, chain.d_start - JUMP), min(hi, chain.d_end + JUMP))
        for piece in (quote[: chain.q_start], quote[chain.q_end :]):
            found = _locate_piece(text, table, piece, near[0], near[1], depth)
            if found is None or found.score < 80.0:
                continue
            if any(s < e2 and s2 < e for s, e in found.segments for s2, e2 in segments):
                continue
            segments.extend(found.segments)
            matched += found.matched
    return Match(tuple(sorted(segments)), matched, len(quote))


def fuzzy(
    text: str, table: GramTable, quote: str, lo: int, hi: int, depth: int = 0
) -> Match | None:
    best: Match | None = None
    slack = EDIT_GAP + len(quote) // 5
    for support, min_diag, max_diag in _clusters(seeds(table, quote, lo, hi))[:MAX_CANDIDATES]:
        if support < 2:
            break
        w_lo = max(lo, min_diag - slack)
        w_hi = min(hi, max_diag + len(quote) + slack)
        chain = _best_chain(quote, text[w_lo:w_hi], w_lo)
        if chain is None:
            continue
        chain = _extend_edges(chain, len(quote), lo, hi)
        match = _complete(text, table, quote, chain, (lo, hi), depth)
        if best is None or match.score > best.score:
            best = match
    return best
