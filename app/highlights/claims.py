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


def citation_claims(request: HighlightBatchRequest) -> CitationClaims:
    answer = request.answer
    ids = [c.citation_id for c in request.citations if c.citation_id is not None]
    explicit = {c.citation_id: c.marker for c in request.citations if c.citation_id and c.marker}
    found = claims_by_citation(answer, ids, explicit) if ids else {}
    out: CitationClaims = []
    for citation in request.citations:
        claims = found.get(citation.citation_id, []) if citation.citation_id is not None else []
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
