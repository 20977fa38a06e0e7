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
# A located piece of a quote must itself be this convincing to be added to a match.
PIECE_SCORE = 80.0
# Each extra piece makes a match less certain than one continuous passage of equal similarity.
PIECE_PENALTY = 2.0
MAX_DEPTH = 3


@dataclass(frozen=True, slots=True)
class Match:
    segments: tuple[tuple[int, int], ...]  # skeleton half-open ranges, in document order
    matched: int  # quote characters aligned to identical document characters
    quote_len: int
    longest: int  # longest run of quote characters matched without a break

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
        similarity = 100.0 * 2 * self.matched / total if total else 0.0
        return similarity - PIECE_PENALTY * (len(self.segments) - 1)


@dataclass(frozen=True, slots=True)
class _Chain:
    q_start: int
    q_end: int
    d_start: int
    d_end: int
    matched: int
    longest: int


def exact_match(pos: int, quote: str) -> Match:
    return Match(((pos, pos + len(quote)),), len(quote), len(quote), len(quote))


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


Block = tuple[int, int, int]  # quote start, window start, size


def _grow(quote: str, window: str, block: Block) -> Block:
    """Extend an exact block as far as the characters agree on both sides."""
    a, b, size = block
    while a > 0 and b > 0 and quote[a - 1] == window[b - 1]:
        a, b, size = a - 1, b - 1, size + 1
    while a + size < len(quote) and b + size < len(window) and quote[a + size] == window[b + size]:
        size += 1
    return a, b, size


def _blocks(quote: str, window: str) -> list[Block]:
    """Exact matching blocks, largest first, then kept only if consistent with larger ones.

    An LCS alignment is optimal in length but not in shape: it happily matches a quote's "the"
    letter by letter across a dropped word. Growing each block and letting the largest win
    gives the alignment a reader would draw.
    """
    min_block = 2 if information(quote) > 1.5 * len(quote) else 3
    raw = Indel.opcodes(quote, window).as_matching_blocks()
    grown = sorted(
        (_grow(quote, window, (m.a, m.b, m.size)) for m in raw if m.size >= min_block),
        key=lambda block: -block[2],
    )
    kept: list[Block] = []
    for a, b, size in grown:
        if all(
            (a + size <= ka and b + size <= kb) or (ka + ks <= a and kb + ks <= b)
            for ka, kb, ks in kept
        ):
            kept.append((a, b, size))
    return sorted(kept)


def _best_chain(quote: str, window: str, offset: int) -> _Chain | None:
    blocks = _blocks(quote, window)
    best: _Chain | None = None
    first = 0
    for i in range(1, len(blocks) + 1):
        if i < len(blocks):
            (pa, pb, ps), (ca, cb, _) = blocks[i - 1], blocks[i]
            if _compatible(ca - pa - ps, cb - pb - ps):
                continue
        run = blocks[first:i]
        matched = sum(size for _, _, size in run)
        if best is None or matched > best.matched:
            (a0, b0, _), (a1, b1, s1) = run[0], run[-1]
            longest = max(size for _, _, size in run)
            best = _Chain(a0, a1 + s1, offset + b0, offset + b1 + s1, matched, longest)
        first = i
    return best


def _edge(quote_part: str, doc_part: str) -> int:
    """Width to extend over an unmatched quote edge: only where the document's neighbouring
    characters resemble it (a changed word), not for words the PDF puts elsewhere."""
    if not quote_part or len(quote_part) > EDIT_GAP:
        return 0
    similar = Indel.normalized_similarity(quote_part, doc_part) >= 0.5
    return len(quote_part) if similar else 0


def _extend_edges(text: str, quote: str, chain: _Chain, lo: int, hi: int) -> _Chain:
    head_q = quote[: chain.q_start]
    head = _edge(head_q, text[max(lo, chain.d_start - len(head_q)) : chain.d_start])
    tail_q = quote[chain.q_end :]
    tail = _edge(tail_q, text[chain.d_end : min(hi, chain.d_end + len(tail_q))])
    return _Chain(
        chain.q_start - head,
        chain.q_end + tail,
        max(lo, chain.d_start - head),
        min(hi, chain.d_end + tail),
        chain.matched,
        chain.longest,
    )


def _locate_piece(
    text: str, table: GramTable, piece: str, lo: int, hi: int, depth: int
) -> Match | None:
    if information(piece) < MIN_PIECE_INFO:
        return None
    hits = exact_all(text, piece, lo, hi, limit=2)
    if len(hits) == 1:
        return exact_match(hits[0], piece)
    if hits:
        return None  # ambiguous nearby: guessing would risk the wrong words
    candidates = fuzzy(text, table, piece, lo, hi, depth + 1)
    return candidates[0] if candidates else None


def _piece_near(
    text: str, table: GramTable, piece: str, areas: list[tuple[int, int]], depth: int
) -> Match | None:
    """First convincing placement of ``piece`` in ``areas``, tried in order of preference."""
    for lo, hi in areas:
        if lo < hi:
            found = _locate_piece(text, table, piece, lo, hi, depth)
            if found is not None and found.score >= PIECE_SCORE:
                return found
    return None


def _complete(
    text: str, table: GramTable, quote: str, chain: _Chain, bounds: tuple[int, int], depth: int
) -> Match:
    """Locate what the chain left out of the quote near the chain: the part before it
    preferably before it in the PDF's order, the part after it preferably after it."""
    lo, hi = bounds
    segments = [(chain.d_start, chain.d_end)]
    matched = chain.matched
    longest = chain.longest
    if depth < MAX_DEPTH:
        before = (max(lo, chain.d_start - JUMP), chain.d_start)
        after = (chain.d_end, min(hi, chain.d_end + JUMP))
        pieces = (
            (quote[: chain.q_start], [before, after]),
            (quote[chain.q_end :], [after, before]),
        )
        for piece, areas in pieces:
            found = _piece_near(text, table, piece, areas, depth)
            if found is None or _segments_overlap(found.segments, segments):
                continue
            segments.extend(found.segments)
            matched += found.matched
            longest = max(longest, found.longest)
    return Match(tuple(sorted(segments)), matched, len(quote), longest)


def _segments_overlap(
    a: tuple[tuple[int, int], ...] | list[tuple[int, int]],
    b: list[tuple[int, int]] | tuple[tuple[int, int], ...],
) -> bool:
    return any(s1 < e2 and s2 < e1 for s1, e1 in a for s2, e2 in b)


def _overlaps(a: Match, b: Match) -> bool:
    return _segments_overlap(a.segments, b.segments)


def fuzzy(text: str, table: GramTable, quote: str, lo: int, hi: int, depth: int = 0) -> list[Match]:
    """Candidate placements of ``quote`` in ``text[lo:hi]``, best first, none overlapping."""
    found: list[Match] = []
    slack = EDIT_GAP + len(quote) // 5
    for support, min_diag, max_diag in _clusters(seeds(table, quote, lo, hi))[:MAX_CANDIDATES]:
        if support < 2:
            break
        w_lo = max(lo, min_diag - slack)
        w_hi = min(hi, max_diag + len(quote) + slack)
        chain = _best_chain(quote, text[w_lo:w_hi], w_lo)
        if chain is None:
            continue
        chain = _extend_edges(text, quote, chain, lo, hi)
        found.append(_complete(text, table, quote, chain, (lo, hi), depth))
    found.sort(key=lambda match: (-match.score, match.start))
    distinct: list[Match] = []
    for match in found:
        if not any(_overlaps(match, kept) for kept in distinct):
            distinct.append(match)
    return distinct
