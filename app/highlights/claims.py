"""Which claims of the answer each citation supports (``app.selection.claims`` finds them from the
markers), as the batch carries them: per citation, its claims with their answer offsets; per
cited chunk, the claims it is to be chosen for."""

from __future__ import annotations

from collections.abc import Collection

from app.highlights.schemas import Claim, HighlightBatchRequest
from app.selection.claims import claims_by_citation
from app.selection.selection import Span

# Per citation of the request, in order: its claims, each as the span the selector reads and the
# offsets the answer reports.
CitationClaims = list[list[tuple[Span, Claim]]]


def _utf16(text: str, upto: int) -> int:
    """The UTF-16 offset of code point ``upto``: one more unit per astral character before it."""
    return upto + sum(1 for ch in text[:upto] if ord(ch) > 0xFFFF)


def _label(index: int, citation_id: str | None, marker: str | None) -> str | None:
    """What a citation's markers are looked up by: its id, or for a citation with only a literal
    marker a key no marker text can name."""
    if citation_id is not None:
        return citation_id
    return f"\x00{index}" if marker else None


def citation_claims(request: HighlightBatchRequest) -> CitationClaims:
    answer = request.answer
    labels = [_label(i, c.citation_id, c.marker) for i, c in enumerate(request.citations)]
    explicit = {
        label: c.marker
        for label, c in zip(labels, request.citations, strict=True)
        if label is not None and c.marker
    }
    known = [label for label in labels if label is not None]
    found = claims_by_citation(answer, known, explicit) if known else {}
    out: CitationClaims = []
    for label in labels:
        claims = found.get(label, []) if label is not None else []
        out.append(
            [
                (
                    (c.start, c.end),
                    Claim(
                        start=c.start,
                        end=c.end,
                        utf16_start=_utf16(answer, c.start),
                        utf16_end=_utf16(answer, c.end),
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
