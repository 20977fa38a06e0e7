"""Each cited document's text, kept per content, and the selectors it gives highlights."""

from __future__ import annotations

from datetime import UTC, datetime

from app.alignment.selectors import TextQuote, resolve_quote
from app.highlights.cited import StoredChunk
from app.highlights.schemas import (
    CitationResult,
    CitationStatus,
    Highlight,
    HighlightBatchResponse,
    TextPositionSelector,
    TextQuoteSelector,
)
from app.highlights.sources import SourceText, SourceTexts, with_selectors

CHUNKS = [("d-c0", "First chunk. It says a thing."), ("d-c1", "Second chunk. It says a thing.")]


def chunk(cid: str, updated: int = 1, sha: str = "s") -> StoredChunk:
    text = dict(CHUNKS)[cid]
    return StoredChunk(
        cid, "d", "D", text, 1, 1, "p.pdf", sha, datetime(2026, 1, updated, tzinfo=UTC)
    )


def test_the_text_is_the_chunks_joined_by_a_blank_line() -> None:
    source = SourceText.of(CHUNKS)
    assert source.text == "First chunk. It says a thing.\n\nSecond chunk. It says a thing."
    assert source.offsets == {"d-c0": 0, "d-c1": 31}


def test_texts_are_kept_per_content_and_read_again_when_it_changes() -> None:
    texts = SourceTexts(max_documents=1)
    cited = {"d-c1": chunk("d-c1")}
    assert texts.missing(cited) == {"d"}
    assert texts.of(cited, {"d": CHUNKS})["d-c1"].offsets["d-c1"] == 31
    assert texts.missing(cited) == set()
    assert texts.missing({"d-c1": chunk("d-c1", updated=2)}) == {"d"}  # re-chunked
    assert texts.missing({"d-c1": chunk("d-c1", sha="t")}) == {"d"}  # new content
    assert texts.of({"d-c1": chunk("d-c1", updated=2)}, {}) == {}  # not read: no selectors


def test_every_highlight_gets_selectors_that_find_it() -> None:
    source = SourceText.of(CHUNKS)
    sentence = "It says a thing."
    start = CHUNKS[1][1].index(sentence)
    highlight = Highlight(
        highlight_id="h_1",
        sentence_id=2,
        text=sentence,
        start=start,
        end=start + len(sentence),
        page=1,
        page_width=0,
        page_height=0,
        score=100,
        rects=[],
        normalized_rects=[],
    )
    result = CitationResult(
        citation_id="1",
        chunk_id="d-c1",
        document_id="d",
        status=CitationStatus.highlighted,
        reason=None,
        link=None,
        highlights=[highlight],
    )
    response = HighlightBatchResponse(
        status="complete", method="lexical", llm_tier=None, results=[result]
    )
    for web in ([], ["d-c1"]):
        [out] = with_selectors(response, {"d-c1": source}, web).results[0].highlights
        quote, position = out.selectors
        assert isinstance(quote, TextQuoteSelector)
        assert isinstance(position, TextPositionSelector)
        # The sentence is in both chunks: the context names the second.
        found = resolve_quote(source.text, TextQuote(quote.exact, quote.prefix, quote.suffix))
        assert found == (position.start, position.end) == (45, 61)
        assert (out.text_fragment is not None) == bool(web)
    # A chunk whose document text was not read is left as it is.
    assert with_selectors(response, {}).results[0].highlights[0].selectors == []
