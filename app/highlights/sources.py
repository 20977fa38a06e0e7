"""Each cited document's text, kept in this process, and the W3C selectors it gives a highlight.

A document's text is its chunks' texts joined by a blank line, in order (a web or text source's
chunks tile the text extracted from its file, so it is that text; a PDF's is the text the
service serves of it). GET /v2/documents/{id}/text serves the same string. A highlight's
``selectors`` locate its sentence in it (``app.alignment.selectors``); an HTML source's also get
a URL text fragment.

Selectors are added to every answer as it is sent, cached or not, as links are: the offsets
depend on the document's other chunks, which the result cache's key leaves out, and an answer
cached before the field existed gets them too. The texts are read in the batch's own database
transaction (one query for the documents this process does not keep) and kept for at most
``MAX_DOCUMENTS`` documents, by content (hash, and when its chunks last changed).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from app.alignment.selectors import quote_selector, text_fragment
from app.highlights.cited import StoredChunk
from app.highlights.schemas import (
    Highlight,
    HighlightBatchResponse,
    TextPositionSelector,
    TextQuoteSelector,
)

MAX_DOCUMENTS = 64
SEPARATOR = "\n\n"

Key = tuple[str, str, str]  # document id, content hash, when its chunks last changed


def _key(chunk: StoredChunk) -> Key:
    changed = chunk.updated_at.isoformat() if chunk.updated_at else ""
    return chunk.document_id, chunk.sha256, changed


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


class SourceTexts:
    def __init__(self, max_documents: int = MAX_DOCUMENTS) -> None:
        self._known: OrderedDict[Key, SourceText] = OrderedDict()
        self._lock = threading.Lock()
        self.max_documents = max_documents

    def missing(self, chunks: Mapping[str, StoredChunk]) -> set[str]:
        with self._lock:
            return {c.document_id for c in chunks.values() if _key(c) not in self._known}

    def of(
        self, chunks: Mapping[str, StoredChunk], read: Mapping[str, list[tuple[str, str]]]
    ) -> dict[str, SourceText]:
        """Per chunk id, its document's text, keeping those of ``read`` (document id -> its
        (chunk id, text) in order) that are not kept yet."""
        out: dict[str, SourceText] = {}
        with self._lock:
            for cid, chunk in chunks.items():
                key = _key(chunk)
                if key not in self._known and chunk.document_id in read:
                    self._known[key] = SourceText.of(read[chunk.document_id])
                kept = self._known.get(key)
                if kept is not None:
                    self._known.move_to_end(key)
                    out[cid] = kept
            while len(self._known) > self.max_documents:
                self._known.popitem(last=False)
        return out


def selected(highlight: Highlight, source: SourceText, chunk_id: str, web: bool) -> Highlight:
    """The highlight with its selectors (and, from a web page, its text fragment); unchanged
    when the chunk is not in the text it was read with."""
    at = source.offsets.get(chunk_id)
    if at is None:
        return highlight
    start, end = at + highlight.start, at + highlight.end
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
        source = sources.get(result.chunk_id)
        if source is None or not result.highlights:
            results.append(result)
            continue
        highlights = [
            selected(h, source, result.chunk_id, result.chunk_id in html) for h in result.highlights
        ]
        results.append(result.model_copy(update={"highlights": highlights}))
    return response.model_copy(update={"results": results})
