"""Where is a caller's chunk in the document's own text?

A chat system's chunks are made by its own loader and splitter (LangChain, LlamaIndex,
PyMuPDF4LLM, pdfminer ...): the same words as the document's own text (``pdfs/reading.py``) but
cut, spaced and marked up otherwise: lines joined by blank lines, "com- pile" for "compile",
Markdown links and bold runs, table pipes, a running header at a page break, columns read across.
All of that vanishes in the skeleton (``text.py``: letters and digits only, case-folded), where a
chunk is a run of the document's skeleton with a few insertions (its furniture, a link's URL)
and gaps (what its extractor dropped).

So a chunk is placed as a sentence is, at the scale of a chunk: the 6-grams of its skeleton
(every other one) are looked up in the document's gram table (``grams.py``: bounded hits per
gram), the densest stretch of the document no longer than the chunk allows (``_window``) wins,
the longest chain of seeds in order within it (``_chain``) gives the span, and an alignment of
the chunk with the span (``_share``) the share of the chunk found there. Bounded work: one
lookup per two skeleton characters of the chunk, a chain over at most ``MAX_SEEDS`` seeds, and
an alignment of at most ``MAX_ALIGNED`` characters (a longer chunk's share is its seeds').
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from operator import itemgetter

from rapidfuzz.distance import Indel

from app.alignment.grams import GRAM, GramTable
from app.alignment.text import Normalized, normalize_text

# Marks the skeleton drops that end a figure, a sentence or a quote, and those that open one:
# kept at a span's ends ("2%." not "2": the figure read as a bare 2 contradicted the claim).
_CLOSING = frozenset(
    "%\u2030\u00b0.!?;:)]}\"'\u2019\u201d\u00bb\u3002\uff01\uff1f\u300d\u300f\uff09"
)
_OPENING = frozenset("$\u20ac\u00a3\u00a5([{\"'\u2018\u201c\u00ab\u300c\u300e\uff08")
# A Markdown link's or image's target ("[text](https://...)"): not words of the page.
_MARKDOWN_TARGET = re.compile(r"\]\([^()\s]{1,2000}\)")
# A chunk is found when this share of its skeleton lies in one stretch of the document, in
# order; below FOUND it is only part of the chunk (placed in part, with its share said), and
# below PARTIAL not there: an invented sentence sharing a clause with the page ("the programme
# will cost 12.5 billion shillings ...") explains a third of itself.
FOUND = 0.9
PARTIAL = 0.5
# ... or found whole when this share of it is there and it holds nearly all the span prints.
HOLDS = 0.75
# The document's stretch may be this much longer than the chunk's skeleton (the document's own
# furniture or a figure's text that the caller's extractor left out), plus SLACK characters.
STRETCH = 1.5
SLACK = 400
# Every other chunk position is looked up: the table holds every third document position, so
# any run of GRAM + 4 characters the two share still gives a seed (a chunk shares runs of
# dozens), at half the lookups; the edges are then grown character by character.
SEED_STRIDE = 2
# A gram the document holds more often than this says little about where a chunk is (the
# chunk's other grams do): not a seed.
SEED_HITS = 8
# Seeds kept for the chain (a chunk repeating one line a thousand times makes a seed per line
# per occurrence): evenly thinned beyond this.
MAX_SEEDS = 20_000
# Consecutive seeds whose document gap differs from their chunk gap by more than DRIFT (plus
# a quarter of the chunk gap) part runs; an end run explaining at most STRAY characters, or
# STRAY_SHARE of the chain, beyond a gap the chunk does not explain, is a coincidence
# (``_trimmed``).
DRIFT = 48
STRAY = 3 * GRAM
STRAY_SHARE = 0.15
# Runs shorter than this do not count towards a chunk's share (``_share``), and chunks longer
# than this (skeleton characters; the service's own are at most 1,600) are not aligned: an
# alignment costs their length times the span's, over 64.
MIN_RUN = 5
MAX_ALIGNED = 20_000
# The seeds whose diagonal an end seed is snapped to.
SNAP = 8
# Skeletons shorter than a few grams are found only verbatim and only where they are unique.
MIN_SEEDED = 3 * GRAM


@dataclass(frozen=True)
class Placement:
    """The chunk's span in the document's text (``start``, ``end``: code points) and the share
    of the chunk's skeleton found there, in order."""

    start: int
    end: int
    share: float
    # Share of the span's own skeleton that the chunk holds (1.0: nothing printed there is
    # missing from the chunk, whatever text of its own the chunk adds).
    covers: float = 1.0

    @property
    def found(self) -> bool:
        """Found whole: nearly all of the chunk is there, or the chunk holds all the PDF prints
        there and most of it is the PDF's (the rest its extractor's: a running header and page
        number inside a paragraph crossing a page break, a link's target)."""
        return self.share >= FOUND or (self.share >= HOLDS and self.covers >= FOUND)


def place(
    document: Normalized,
    table: GramTable,
    text: str,
    source: str,
    near: tuple[int, int] | None = None,
) -> Placement | None:
    """The chunk ``text`` in ``source`` (the document's text; ``document`` its skeleton and
    ``table`` the skeleton's grams), or None when too little of it is there (``PARTIAL``).
    ``near``: a skeleton range where the caller says it is (its pages); among stretches that
    explain about as much of the chunk, the one there wins."""
    skeleton = normalize_text(_MARKDOWN_TARGET.sub("]", text))
    if not skeleton or not document.text:
        return None
    if len(skeleton) < MIN_SEEDED:
        return _verbatim(document, skeleton, text, source)
    seeds = _seeds(table, skeleton)
    if not seeds:
        return None
    window = _window(seeds, int(len(skeleton) * STRETCH) + SLACK, near)
    chain = _trimmed(_chain(window))
    covered = _covered(chain)
    if near is not None:
        # A passage printed twice within one stretch: the caller's pages decide, when the
        # seeds there explain about as much of the chunk.
        there = [seed for seed in window if near[0] <= seed[1] < near[1]]
        if there:
            local = _trimmed(_chain(there))
            if _covered(local) * 20 >= covered * 19 and local[0][1] != chain[0][1]:
                chain, covered = local, _covered(local)
    if covered < PARTIAL * len(skeleton) / 2:
        return None  # nothing like the chunk anywhere: not worth aligning
    first_q, first_d = _snapped(chain[:SNAP], document.text, skeleton, chain[0])
    last_q, last_d = _snapped(chain[-SNAP:], document.text, skeleton, chain[-1])
    lo, hi = _grown(document.text, skeleton, first_q, first_d, last_q + GRAM, last_d + GRAM)
    span = document.text[lo:hi]
    share = _share(skeleton, span) if len(skeleton) <= MAX_ALIGNED else covered / len(skeleton)
    if share < PARTIAL:
        return None
    covers = share * len(skeleton) / max(1, len(span))
    start, end = document.source_span(lo, hi)
    start, end = _with_marks(source, text, start, end)
    return Placement(start, end, round(min(1.0, share), 3), round(min(1.0, covers), 3))


def _verbatim(document: Normalized, skeleton: str, text: str, source: str) -> Placement | None:
    at = document.text.find(skeleton)
    if at < 0 or document.text.find(skeleton, at + 1) >= 0:
        return None
    start, end = document.source_span(at, at + len(skeleton))
    start, end = _with_marks(source, text, start, end)
    return Placement(start, end, 1.0)


def _seeds(table: GramTable, skeleton: str) -> list[tuple[int, int]]:
    """(chunk position, document position) of every gram they share; a gram the chunk repeats
    is looked up once."""
    seen: dict[str, list[int]] = {}
    found: list[tuple[int, int]] = []
    for at in range(0, len(skeleton) - GRAM + 1, SEED_STRIDE):
        gram = skeleton[at : at + GRAM]
        hits = seen.get(gram)
        if hits is None:
            hits = seen[gram] = table.positions(gram)
            if len(hits) > SEED_HITS:
                hits = seen[gram] = []  # said too often to tell where the chunk is
        if hits:
            found.extend((at, hit) for hit in hits)
    if len(found) > MAX_SEEDS:
        step = len(found) / MAX_SEEDS
        found = [found[int(k * step)] for k in range(MAX_SEEDS)]
    return found


def _window(
    seeds: list[tuple[int, int]], width: int, near: tuple[int, int] | None
) -> list[tuple[int, int]]:
    """The seeds in the document stretch of ``width`` holding the most seeds (a chunk position
    seeds one stretch once unless the document repeats it within the stretch). Ties within a
    twentieth go to the stretch overlapping ``near``, then to the first."""
    ordered = sorted(seeds, key=itemgetter(1))
    positions = [d for _, d in ordered]
    ends = [bisect_left(positions, start + width) for start in positions]
    counts = [end - lo for lo, end in enumerate(ends)]
    top = max(counts)
    close = [lo for lo, count in enumerate(counts) if count * 20 >= top * 19]
    if near is not None:
        inside = [
            lo
            for lo in close
            if positions[lo] < near[1] and positions[ends[lo] - 1] + GRAM > near[0]
        ]
        close = inside or close
    lo = max(close, key=lambda at: (counts[at], -at))
    return ordered[lo : ends[lo]]


def _chain(seeds: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of seeds increasing in both chunk and document position (patience
    sorting: n log n)."""
    ordered = sorted(seeds)
    tails: list[int] = []  # document position ending the best chain of each length
    ends: list[int] = []  # index in ordered of that seed
    before: list[int] = [-1] * len(ordered)
    for k, (_, d) in enumerate(ordered):
        at = bisect_left(tails, d)
        if at == len(tails):
            tails.append(d)
            ends.append(k)
        else:
            tails[at] = d
            ends[at] = k
        before[k] = ends[at - 1] if at else -1
    chain: list[tuple[int, int]] = []
    k = ends[-1]
    while k >= 0:
        chain.append(ordered[k])
        k = before[k]
    chain.reverse()
    # Same chunk position twice (a document repeating a gram in the stretch): keep the first.
    out: list[tuple[int, int]] = []
    for seed in chain:
        if not out or seed[0] > out[-1][0]:
            out.append(seed)
    return out


def _trimmed(chain: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The chain without a stray run at either end: a few words of the chunk's first or last
    sentence found again further on ("... at runtime." and, a sentence later, "at run-time").
    Runs part where the document's gap and the chunk's gap differ by more than DRIFT (plus a
    quarter of the chunk's gap). An end run is stray when it is small beside the rest
    (STRAY_SHARE of what the chain explains) and the document's gap to it is not explained by
    the chunk: the document jumps further than the chunk does, or back. A chunk's own text
    between runs (a running header, a page number) makes the chunk's gap the larger one, and
    its last line after them is kept."""
    runs: list[list[tuple[int, int]]] = [[chain[0]]]
    for before, seed in zip(chain, chain[1:], strict=False):
        gap_q, gap_d = seed[0] - before[0], seed[1] - before[1]
        if abs(gap_d - gap_q) > DRIFT + gap_q // 4:
            runs.append([])
        runs[-1].append(seed)
    total = _covered(chain)

    def stray(run: list[tuple[int, int]], before: tuple[int, int], after: tuple[int, int]) -> bool:
        gap_q, gap_d = after[0] - before[0], after[1] - before[1]
        unexplained = gap_d > gap_q + DRIFT or gap_d < 0
        return unexplained and _covered(run) <= max(STRAY, STRAY_SHARE * total)

    while len(runs) > 1:
        ends = [
            (_covered(runs[0]), 0) if stray(runs[0], runs[0][-1], runs[1][0]) else None,
            (_covered(runs[-1]), -1) if stray(runs[-1], runs[-2][-1], runs[-1][0]) else None,
        ]
        strays = [end for end in ends if end is not None]
        if not strays:
            break
        runs.pop(min(strays)[1])  # the smaller first: the other may be the chunk's own
    return [seed for run in runs for seed in run]


def _share(skeleton: str, span: str) -> float:
    """Share of the chunk's skeleton in runs of at least MIN_RUN characters that the span holds
    in order (an alignment, bit-parallel: a 1,000-character chunk in microseconds). The seeds
    alone undercount: grams that a long document repeats more than the gram table keeps are
    not seeds. Scattered single letters do not count: unrelated text shares half its letters."""
    same = sum(
        op.src_end - op.src_start
        for op in Indel.opcodes(skeleton, span)
        if op.tag == "equal" and op.src_end - op.src_start >= MIN_RUN
    )
    return same / len(skeleton)


def _covered(chain: list[tuple[int, int]]) -> int:
    """Chunk skeleton characters inside the chain's grams."""
    covered, reach = 0, 0
    for q, _ in chain:
        covered += min(GRAM, q + GRAM - reach) if q < reach else GRAM
        reach = max(reach, q + GRAM)
    return covered


def _snapped(
    run: list[tuple[int, int]], document: str, skeleton: str, seed: tuple[int, int]
) -> tuple[int, int]:
    """The end seed moved onto its neighbours' diagonal where the text agrees there: the gram
    table holds every third document position, so a word repeated a few characters on ("fees
    meeting meeting") may seed the chunk's last gram on the repeat."""
    offsets = sorted(d - q for q, d in run)
    q = seed[0]
    d = q + offsets[len(offsets) // 2]
    return (q, d) if 0 <= d and document[d : d + GRAM] == skeleton[q : q + GRAM] else seed


def _grown(
    document: str, skeleton: str, q_lo: int, d_lo: int, q_hi: int, d_hi: int
) -> tuple[int, int]:
    """The chain's document span grown by the characters that still agree at both ends (the
    first and last seeds may start inside the run they belong to)."""
    while q_lo > 0 and d_lo > 0 and skeleton[q_lo - 1] == document[d_lo - 1]:
        q_lo, d_lo = q_lo - 1, d_lo - 1
    while q_hi < len(skeleton) and d_hi < len(document) and skeleton[q_hi] == document[d_hi]:
        q_hi, d_hi = q_hi + 1, d_hi + 1
    return d_lo, d_hi


def _with_marks(source: str, text: str, start: int, end: int) -> tuple[int, int]:
    """The span with the punctuation the skeleton drops at its ends, where the chunk has it
    too: a sentence's full stop, a closing bracket or quote, an opening one."""
    body = text.strip()
    if body and not body[-1].isalnum():
        while end < len(source) and not source[end].isalnum() and not source[end].isspace():
            end += 1
    if body and not body[0].isalnum():
        while start > 0 and not source[start - 1].isalnum() and not source[start - 1].isspace():
            start -= 1
    # A span that stops inside the chunk (the rest is text the PDF's own reading leaves out: a
    # footer "Page 9 of 15" after a footnote) still ends its sentence with the marks that close
    # it: without its full stop, "3. REVPAR is hotel revenue per available room" read as a
    # heading, and the word-overlap judge lit the footer under it.
    while end < len(source) and source[end] in _CLOSING:
        end += 1
    while start > 0 and source[start - 1] in _OPENING:
        start -= 1
    return start, end
