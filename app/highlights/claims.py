"""Which claims of the answer each citation supports (``app.selection.claims`` finds them from the
markers), as the batch carries them: per citation, its claims with their answer offsets; per
cited chunk, the claims it is to be chosen for."""

from __future__ import annotations

from collections.abc import Collection
from itertools import accumulate

from app.highlights.schemas import Claim, HighlightBatchRequest
from app.selection.claims import claims_by_citation
from app.selection.selection import Span

# Per citation of the request, in order: its claims, each as the span the selector reads and the
# offsets the answer reports.
CitationClaims = list[list[tuple[Span, Claim]]]


# Bounds on what one request can ask for: every claim is a passage for the LLM and a query for
# the lexical selector. A citation keeps its first MAX_CLAIMS_PER_CITATION claims; once the batch
# has MAX_PASSAGES (chunk, claim) pairs, later citations support the answer as a whole.
MAX_CLAIMS_PER_CITATION = 10
MAX_PASSAGES = 100


def _utf16_offsets(text: str) -> list[int] | None:
    """Per code point offset, the UTF-16 offset (an astral character takes two units); None when
    the two are the same everywhere (no astral character)."""
    if text.isascii() or max(map(ord, text)) <= 0xFFFF:
        return None
    return [0, *accumulate(2 if ord(ch) > 0xFFFF else 1 for ch in text)]


def _label(index: int, citation_id: str | None, marker: str | None) -> str | None:
    """What a citation's markers are looked up by: its id, or for a citation with only a literal
    marker a key no marker text can name."""
    if citation_id is not None:
        return citation_id
    return f"\x00{index}" if marker else None


def citation_claims(request: HighlightBatchRequest) -> CitationClaims:
    """Per citation of the request, its claims (bounded, see MAX_CLAIMS_PER_CITATION). Linear in
    the answer and the markers; CPU work for a worker thread."""
    answer = request.answer
    labels = [_label(i, c.citation_id, c.marker) for i, c in enumerate(request.citations)]
    explicit = {
        label: c.marker
        for label, c in zip(labels, request.citations, strict=True)
        if label is not None and c.marker
    }
    known = [label for label in labels if label is not None]
    found = (
        claims_by_citation(answer, known, explicit, limit=MAX_CLAIMS_PER_CITATION) if known else {}
    )
    units = _utf16_offsets(answer)
    pairs: set[tuple[str, Span]] = set()
    out: CitationClaims = []
    for label, citation in zip(labels, request.citations, strict=True):
        claims = found.get(label, []) if label is not None else []
        mine = {(citation.chunk_id, (c.start, c.end)) for c in claims}
        if len(pairs | mine) > MAX_PASSAGES:
            claims = []  # this citation supports the whole answer
        pairs |= mine if claims else {(citation.chunk_id, None)}
        out.append(
            [
                (
                    (c.start, c.end),
                    Claim(
                        start=c.start,
                        end=c.end,
                        utf16_start=units[c.start] if units else c.start,
                        utf16_end=units[c.end] if units else c.end,
                        text=c.text,
                    ),
                )
                for c in claims
            ]
        )
    return out


def wanted_claims(
    request: HighlightBatchRequest, claims: CitationClaims, known: Collection[str]
) -> dict[str, list[Span]]:
    """Per stored cited chunk, the claims its citations are for, each once, in answer order of
    citation; None where a citation has no claims (its marker is not in the answer)."""
    wanted: dict[str, dict[Span, None]] = {}
    for citation, mine in zip(request.citations, claims, strict=True):
        if citation.chunk_id not in known:
            continue
        spans: list[Span] = [span for span, _ in mine] or [None]
        wanted.setdefault(citation.chunk_id, {}).update(dict.fromkeys(spans))
    return {cid: list(spans) for cid, spans in wanted.items()}
