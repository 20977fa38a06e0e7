"""Chain a page's line pieces into columns and cells, and read the chains column by column.

Two pieces are linked when one sits right below the other and they share most of their width:
the next line of a paragraph, a bullet, or a wrapped table cell. A chain is then read to its
end before the next one starts, and chains are read by x-band (left to right), each band top
to bottom. That is the order a reader follows on a multi-column page, whatever order the PDF
drew its lines in, and it keeps each table cell's lines together.
"""

from __future__ import annotations

from bisect import bisect_right

from app.alignment.layout import Segment

# A piece below another within this many line heights (top to top) continues it ...
LINK_GAP = 1.9
# ... when the horizontal overlap is at least this share of the narrower piece.
MIN_OVERLAP = 0.5
# Chains whose left edges lie within this many line heights read as one column.
BAND = 2.0


def _overlap(a: Segment, b: Segment) -> float:
    return min(a.x1, b.x1) - max(a.x0, b.x0)


def _links(pieces: list[Segment]) -> dict[int, int]:
    """Index of each piece's successor below it (at most one predecessor per piece)."""
    by_top = sorted(range(len(pieces)), key=lambda i: pieces[i].y0)
    tops = [pieces[i].y0 for i in by_top]
    pairs: list[tuple[float, int, int]] = []
    for i, a in enumerate(pieces):
        first = bisect_right(tops, a.y0 + 0.5 * a.height)
        last = bisect_right(tops, a.y0 + LINK_GAP * a.height)
        for j in by_top[first:last]:
            b = pieces[j]
            if _overlap(a, b) >= MIN_OVERLAP * min(a.width, b.width) > 0:
                pairs.append((b.y0 - a.y0, i, j))
    links: dict[int, int] = {}
    taken: set[int] = set()
    for _, i, j in sorted(pairs):
        if i not in links and j not in taken:
            links[i] = j
            taken.add(j)
    return links


def chains(pieces: list[Segment]) -> list[list[Segment]]:
    links = _links(pieces)
    heads = sorted(set(range(len(pieces))) - set(links.values()))
    found = []
    for head in heads:
        chain, at = [pieces[head]], head
        while at in links:
            at = links[at]
            chain.append(pieces[at])
        found.append(chain)
    return found


def column_order(pieces: list[Segment]) -> list[Segment]:
    """The pieces chain by chain, chains by x-band left to right and top to bottom."""
    found = chains(pieces)
    if not found:
        return []
    found.sort(key=lambda chain: chain[0].x0)
    bands: list[list[list[Segment]]] = [[found[0]]]
    for chain in found[1:]:
        height = chain[0].height
        if chain[0].x0 - bands[-1][-1][0].x0 > BAND * height:
            bands.append([])
        bands[-1].append(chain)
    return [
        piece
        for band in bands
        for chain in sorted(band, key=lambda chain: (chain[0].y0, chain[0].x0))
        for piece in chain
    ]
