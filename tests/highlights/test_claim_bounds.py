"""What one request can make the service do with claims is bounded: a hostile answer full of
markers gets at most MAX_CLAIMS_PER_CITATION claims per citation and about MAX_PASSAGES (chunk,
claim) passages per batch (the rest support the answer as a whole). Time is not measured here:
bench/claim_storm.py prints it."""

from __future__ import annotations

from app.highlights.claims import (
    MAX_CLAIMS_PER_CITATION,
    MAX_PASSAGES,
    citation_claims,
    wanted_claims,
)
from app.highlights.schemas import HighlightBatchRequest


def request(answer: str, citations: list[dict[str, str]]) -> HighlightBatchRequest:
    return HighlightBatchRequest.model_validate(
        {"query": "q", "answer": answer, "citations": citations}
    )


def test_a_marker_storm_is_bounded() -> None:
    answer = ("Ab c [1-50]. " * 2000)[:20_000]
    citations = [{"chunk_id": f"c{i}", "citation_id": str(i)} for i in range(1, 51)]
    batch = request(answer, citations)
    claims = citation_claims(batch)
    assert all(len(mine) <= MAX_CLAIMS_PER_CITATION for mine in claims)
    assert any(claims)  # the first citations keep theirs
    wanted = wanted_claims(batch, claims, {c["chunk_id"] for c in citations})
    assert sum(len(spans) for spans in wanted.values()) <= MAX_PASSAGES + len(citations)


def test_a_one_letter_literal_marker_is_bounded_and_stands_alone() -> None:
    answer = " ".join(["a b"] * 5000)
    batch = request(answer, [{"chunk_id": "c", "citation_id": "x", "marker": "a"}])
    (claims,) = citation_claims(batch)
    assert len(claims) == MAX_CLAIMS_PER_CITATION
    # "a" inside a word is no marker: only the standalone ones close claims.
    (none,) = citation_claims(request("banana bread.", batch.model_dump()["citations"]))
    assert none == []


def test_utf16_offsets_count_astral_characters_twice() -> None:
    answer = "Revenue \U0001f600 rose 8% [1]. Net income \U0001f600\U0001f600 fell [2]."
    batch = request(
        answer, [{"chunk_id": "c", "citation_id": "1"}, {"chunk_id": "c", "citation_id": "2"}]
    )
    (first,), (second,) = ((c for _, c in mine) for mine in citation_claims(batch))
    assert answer[first.start : first.end] == first.text == "Revenue \U0001f600 rose 8%"
    assert (first.utf16_start, first.utf16_end) == (first.start, first.end + 1)
    assert answer[second.start : second.end] == second.text
    assert (second.utf16_start, second.utf16_end) == (second.start + 1, second.end + 3)
    # What a JavaScript string sees: the same text at the UTF-16 offsets.
    units = answer.encode("utf-16-le")
    assert units[2 * second.utf16_start : 2 * second.utf16_end].decode("utf-16-le") == second.text
