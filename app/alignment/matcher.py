"""Skeleton-level matching: exact search, then seeded fuzzy alignment.

A fuzzy match is a chain of exactly matching blocks (rapidfuzz Indel alignment of the quote
against a window chosen by gram seeds). Small gaps inside a chain are edits (dropped, changed
or added words) and are highlighted; a large gap means the PDF's text order inserted something
the reader does not see as part of the sentence (a running header at a page break, a footnote,
the other half of a comparison table), so the rest of the quote is located separately nearby and
only the matched pieces are highlighted.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from rapidfuzz.distance import Indel

from app.alignment.edges import EDIT_GAP, Chain, extend_edges
from app.alignment.grams import GramTable, seeds
from app.alignment.text import information

# How far (skeleton characters) the rest of a quote may be from its first matched piece.
JUMP = 4000
# Pieces of a quote smaller than this (Latin-letter equivalents) are not searched on their own.
MIN_PIECE_INFO = 14.0
MAX_CANDIDATES = 4
MAX_TIED = 12
CHAIN_MIN_SHARE = 0.25
BETA2 = 4.0  # beta = 2
# Chain-end blocks shorter than this, detached from the chain by unmatched quote characters,
# are not trusted.
EDGE_BLOCK = 8
# A located piece of a quote must itself be this convincing to be added to a match.
PIECE_SCORE = 80.0
# Each extra piece makes a match less certain than one continuous passage of equal similarity.
PIECE_PENALTY = 2.0
# ... and far less certain when the PDF has the pieces in the opposite order (a table, a
# running header), which a partial quote matched in two unrelated places also looks like.
OUT_OF_ORDER_PENALTY = 8.0
MAX_DEPTH = 2


@dataclass(frozen=True, slots=True)
class Match:
    segments: tuple[tuple[int, int], ...]  # skeleton half-open ranges, in document order
    matched: int  # quote characters aligned to identical document characters
    quote_len: int
    longest: int  # longest run of quote characters matched without a break
    penalty: float = 0.0  # for assembling the quote from separately located pieces

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
        """F-beta of quote recall and highlight precision, less the piece penalty.

        Recall weighs double: leaving a quoted word unaccounted for (by not covering a changed
        word) must not beat covering it, and words the quote dropped are a lesser fault.
        """
        if not self.matched:
            return 0.0
        recall = self.matched / self.quote_len
        precision = self.matched / self.covered
        f_beta = (1 + BETA2) * precision * recall / (BETA2 * precision + recall)
        return 100.0 * f_beta - self.penalty


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
    for block in grown:
        for other in kept:
            block = _clip(block, other)
        if block[2] >= min_block:
            kept.append(block)
    return sorted(kept)


def _clip(block: Block, other: Block) -> Block:
    """The part of ``block`` consistent with the (larger) ``other``: entirely before or after it
    in both strings. Growing blocks can make neighbours overlap by a letter or two."""
    a, b, size = block
    oa, ob, osize = other
    if a + size <= oa and b + size <= ob or oa + osize <= a and ob + osize <= b:
        return block
    if a < oa and b < ob:  # before: cut the end
        return a, b, max(0, min(size, oa - a, ob - b))
    if a > oa and b > ob:  # after: cut the start
        cut = max(oa + osize - a, ob + osize - b, 0)
        return a + cut, b + cut, max(0, size - cut)
    return a, b, 0  # crossing: inconsistent


def _trim(run: list[Block]) -> list[Block]:
    """Drop short blocks at either end of a chain that are cut off from it by unmatched quote
    characters: a stray "comments" in "of those comments" must not stand in for the heading
    "Comments Invited" the PDF prints elsewhere (the rest is then searched separately)."""
    while len(run) > 1 and run[0][2] < EDGE_BLOCK and run[1][0] > run[0][0] + run[0][2]:
        run = run[1:]
    while len(run) > 1 and run[-1][2] < EDGE_BLOCK and run[-1][0] > run[-2][0] + run[-2][2]:
        run = run[:-1]
    return run


def _best_chain(quote: str, window: str, offset: int) -> Chain | None:
    blocks = _blocks(quote, window)
    best: Chain | None = None
    first = 0
    for i in range(1, len(blocks) + 1):
        if i < len(blocks):
            (pa, pb, ps), (ca, cb, _) = blocks[i - 1], blocks[i]
            if _compatible(ca - pa - ps, cb - pb - ps):
                continue
        run = _trim(blocks[first:i])
        matched = sum(size for _, _, size in run)
        if best is None or matched > best.matched:
            (a0, b0, _), (a1, b1, s1) = run[0], run[-1]
            longest = max(size for _, _, size in run)
            best = Chain(a0, a1 + s1, offset + b0, offset + b1 + s1, matched, longest)
        first = i
    return best


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


def _nearest(text: str, found: Match, chain: Chain) -> bool:
    """Is ``found`` paired with the chain as closely as the text allows? Neither the chain's
    text nor the adjacent piece of ``found`` may occur again between the two: a table whose
    rows or header cells repeat a label ("Net cash used in" under investing and under
    financing) would otherwise let a piece pair with the farther copy, the wrong cell."""
    if found.end <= chain.d_start:
        near, gap = found.segments[-1], (found.end, chain.d_start)
    elif found.start >= chain.d_end:
        near, gap = found.segments[0], (chain.d_end, found.start)
    else:
        return True
    for start, end in (near, (chain.d_start, chain.d_end)):
        if text.find(text[start:end], *gap) >= 0:
            return False
    return True


def _piece_near(
    text: str,
    table: GramTable,
    piece: str,
    areas: list[tuple[int, int]],
    depth: int,
    chain: Chain,
) -> Match | None:
    """First convincing placement of ``piece`` in ``areas``, tried in order of preference,
    that pairs with the chain as closely as the text allows (``_nearest``)."""
    for lo, hi in areas:
        if lo < hi:
            found = _locate_piece(text, table, piece, lo, hi, depth)
            if found is not None and found.score >= PIECE_SCORE and _nearest(text, found, chain):
                return found
    return None


def _neighbourhood(chain: Chain, bounds: tuple[int, int], pages: Sequence[int]) -> tuple[int, int]:
    """``bounds`` narrowed to the chain's pages and the page either side: a quoted sentence
    runs across one page break at most, so a piece two pages away is another passage (on
    sparse pages, a table's label on page 3 and another on page 5, JUMP apart or less)."""
    lo, hi = bounds
    if not pages:
        return lo, hi
    first = bisect_right(pages, chain.d_start)
    last = bisect_right(pages, chain.d_end - 1)
    return max(lo, pages[max(0, first - 2)]), min(hi, pages[min(len(pages) - 1, last + 1)])


def _complete(
    text: str,
    table: GramTable,
    quote: str,
    chain: Chain,
    bounds: tuple[int, int],
    depth: int,
    pages: Sequence[int],
) -> Match:
    """Locate what the chain left out of the quote near the chain: the part before it
    preferably before it in the PDF's order, the part after it preferably after it."""
    lo, hi = _neighbourhood(chain, bounds, pages)
    segments = [(chain.d_start, chain.d_end)]
    matched = chain.matched
    longest = chain.longest
    penalty = 0.0
    # The chain is a piece like any other: one too short to be searched on its own ("at end
    # of the") is no anchor for the rest of the quote, which it would pull to any place that
    # happens to print a few common words after it.
    anchored = information(quote) * chain.matched / len(quote) >= MIN_PIECE_INFO
    if depth < MAX_DEPTH and anchored:
        before = (max(lo, chain.d_start - JUMP), chain.d_start)
        after = (chain.d_end, min(hi, chain.d_end + JUMP))
        pieces = (
            (quote[: chain.q_start], [before, after]),
            (quote[chain.q_end :], [after, before]),
        )
        for number, (piece, areas) in enumerate(pieces):
            found = _piece_near(text, table, piece, areas, depth, chain)
            if found is None or _segments_overlap(found.segments, segments):
                continue
            segments.extend(found.segments)
            matched += found.matched
            longest = max(longest, found.longest)
            in_order = (found.start < chain.d_start) == (number == 0)
            penalty += found.penalty + (PIECE_PENALTY if in_order else OUT_OF_ORDER_PENALTY)
    return Match(tuple(sorted(segments)), matched, len(quote), longest, penalty)


def _segments_overlap(
    a: tuple[tuple[int, int], ...] | list[tuple[int, int]],
    b: list[tuple[int, int]] | tuple[tuple[int, int], ...],
) -> bool:
    return any(s1 < e2 and s2 < e1 for s1, e1 in a for s2, e2 in b)


def _top(clusters: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """The best supported clusters; ties with the last one are kept too (up to a cap), since
    a document repeating a passage (comparison tables) must show up as ambiguous."""
    top = [cluster for cluster in clusters[:MAX_TIED] if cluster[0] >= 2]
    if len(top) <= MAX_CANDIDATES:
        return top
    cutoff = top[MAX_CANDIDATES - 1][0]
    return [cluster for cluster in top if cluster[0] >= cutoff]


def _overlaps(a: Match, b: Match) -> bool:
    return _segments_overlap(a.segments, b.segments)


def fuzzy(
    text: str,
    table: GramTable,
    quote: str,
    lo: int,
    hi: int,
    depth: int = 0,
    pages: Sequence[int] = (),
) -> list[Match]:
    """Candidate placements of ``quote`` in ``text[lo:hi]``, best first, none overlapping.
    ``pages`` are the skeleton offsets where pages start (and the end): the rest of a quote
    is looked for on the pages next to its main match only."""
    found: list[Match] = []
    slack = EDIT_GAP + len(quote) // 5
    clusters = _clusters(seeds(table, quote, lo, hi))
    # Pieces of a quote (depth > 0) only need their best placement near the main match.
    for _support, min_diag, max_diag in _top(clusters) if depth == 0 else clusters[:2]:
        w_lo = max(lo, min_diag - slack)
        w_hi = min(hi, max_diag + len(quote) + slack)
        chain = _best_chain(quote, text[w_lo:w_hi], w_lo)
        if chain is None:
            continue
        chain = extend_edges(text, quote, chain, lo, hi)
        if chain.matched < CHAIN_MIN_SHARE * len(quote):
            # A few shared words: not worth searching the rest (it is almost always a
            # different passage, and this is where unrelated quotes would spend their time).
            found.append(
                Match(((chain.d_start, chain.d_end),), chain.matched, len(quote), chain.longest)
            )
            continue
        found.append(_complete(text, table, quote, chain, (lo, hi), depth, pages))
    found.sort(key=lambda match: (-match.score, match.start))
    distinct: list[Match] = []
    for match in found:
        if not any(_overlaps(match, kept) for kept in distinct):
            distinct.append(match)
    return distinct
