"""Each cited document's text, kept in this process, and the W3C selectors it gives a highlight.

A document's text is a PDF's own text, its chunks placed in it at PUT (``pdfs/reading.py``;
each passage once, whatever the chunks' overlaps), or its chunks' texts joined by a blank line,
in order (a web or text source's chunks tile the text extracted from its file, so it is that
text; a PDF stored before placing is served so). GET /v2/documents/{id}/text serves the same
string. A highlight's ``selectors`` locate its sentence in it (``app.alignment.selectors``); an
HTML source's also get a URL text fragment.

Selectors are added to every answer as it is sent, cached or not, as links are, and to every
highlight read by id (stored.py), from the document's text as it is then; the stored rows keep
none. The offsets depend on the document's other chunks, which neither the result cache's key
nor a highlight's id covers: a document put again with an earlier chunk changed keeps both.

The texts are read in the batch's own database transaction (one query for the documents this
process does not keep) and kept for at most ``MAX_DOCUMENTS`` documents, by content (hash, and
when its chunks last changed); a batch holds the texts it found kept (``held``) until it is
answered, whatever other batches evict meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from app.alignment.selectors import quote_selector, text_fragment
from app.highlights.cited import StoredChunk
from app.highlights.kept import MAX_DOCUMENTS, KeptPerDocument, key_of
from app.highlights.schemas import (
    Highlight,
    HighlightBatchResponse,
    TextPositionSelector,
    TextQuoteSelector,
)

SEPARATOR = "\n\n"


@dataclass(frozen=True)
class SourceText:
    text: str
    # Where each chunk's text starts in ``text``.
    offsets: Mapping[str, int]

    @classmethod
    def of(cls, chunks: Iterable[tuple[str, str]]) -> SourceText:
        """From (chunk id, text) in order."""
        offsets: dict[str, int] = {}
        parts: list[str] = []
        at = 0
        for chunk_id, text in chunks:
            if parts:
                at += len(SEPARATOR)
            offsets[chunk_id] = at
            parts.append(text)
            at += len(text)
        return cls(SEPARATOR.join(parts), offsets)


NO_TEXT = SourceText("", {})


class SourceTexts:
    def __init__(self, max_documents: int = MAX_DOCUMENTS) -> None:
        self._kept: KeptPerDocument[SourceText] = KeptPerDocument(max_documents)

    def held(self, chunks: Mapping[str, StoredChunk]) -> dict[str, SourceText]:
        """Per cited chunk id, its document's text when this process keeps it. The batch holds
        on to these until it is answered: another batch may evict them meanwhile, and the
        documents left out are the ones the batch reads."""
        return self._kept.per_chunk(chunks)

    def of(
        self,
        chunks: Mapping[str, StoredChunk],
        read: Mapping[str, list[tuple[str, str]]],
        held: Mapping[str, SourceText],
        own: Mapping[str, SourceText] | None = None,
    ) -> dict[str, SourceText]:
        """Per chunk id, its document's text: ``held`` (what ``held`` gave when the batch read
        its chunks), a PDF's ``own`` text (document id -> its text and its placed chunks'
        offsets), and the texts of ``read`` (document id -> its (chunk id, text) in order)
        for the others; kept from now on."""
        out = dict(held)
        built: dict[str, SourceText] = dict(own or {})
        for cid, chunk in chunks.items():
            if cid in out or (chunk.document_id not in read and chunk.document_id not in built):
                continue
            if chunk.document_id not in built:
                built[chunk.document_id] = SourceText.of(read[chunk.document_id])
            out[cid] = built[chunk.document_id]
        self._kept.put(
            {key_of(c): built[c.document_id] for c in chunks.values() if c.document_id in built}
        )
        return out


def selected(highlight: Highlight, source: SourceText, chunk_id: str, web: bool) -> Highlight:
    """The highlight with its selectors (and, from a web page, its text fragment) in ``source``;
    without any when its chunk is not in that text or says something else there now (a
    selector must never point at other words)."""
    at = source.offsets.get(chunk_id)
    start, end = (at + highlight.start, at + highlight.end) if at is not None else (0, 0)
    if at is None or source.text[start:end] != highlight.text:
        return highlight.model_copy(update={"selectors": [], "text_fragment": None})
    quote = quote_selector(source.text, start, end)
    selectors = [
        TextQuoteSelector(exact=quote.exact, prefix=quote.prefix, suffix=quote.suffix),
        TextPositionSelector(start=start, end=end),
    ]
    fragment = text_fragment(source.text, start, end) if web else None
    return highlight.model_copy(update={"selectors": selectors, "text_fragment": fragment})


def with_selectors(
    response: HighlightBatchResponse,
    sources: Mapping[str, SourceText],
    web: Iterable[str] = (),
) -> HighlightBatchResponse:
    """Every highlight of ``response`` with its selectors. ``sources``: per chunk id, its
    document's text; ``web``: the chunk ids of HTML documents (they get text fragments)."""
    html = set(web)
    results = []
    for result in response.results:
        if not result.highlights:
            results.append(result)
            continue
        # No text: no selectors, rather than the ones a cached answer was stored with.
        source = sources.get(result.chunk_id, NO_TEXT)
        highlights = [
            selected(h, source, result.chunk_id, result.chunk_id in html) for h in result.highlights
        ]
        results.append(result.model_copy(update={"highlights": highlights}))
    return response.model_copy(update={"results": results})
