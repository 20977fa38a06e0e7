"""Each cited document's term statistics, kept in this process: the word weights of the lexical
judge (``app.selection.stats``).

Counting a 10-K's terms takes about 0.3 s, so it is done once per document and content (its PDF
hash, and when its chunks last changed: an upstream may re-chunk the same PDF) and kept for at
most ``MAX_DOCUMENTS`` documents, the least recently used leaving first. The texts are read in the
batch's own database transaction (one query for the documents it lacks); the counting runs in
the batch's worker thread, off the event loop.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.highlights.cited import StoredChunk
from app.highlights.kept import MAX_DOCUMENTS, KeptPerDocument, key_of
from app.selection.stats import DocumentStats


class TermStatistics:
    def __init__(self, max_documents: int = MAX_DOCUMENTS) -> None:
        self._kept: KeptPerDocument[DocumentStats] = KeptPerDocument(max_documents)

    def missing(self, chunks: Mapping[str, StoredChunk]) -> set[str]:
        """The documents of ``chunks`` whose statistics are not kept."""
        return {c.document_id for c in chunks.values() if not self._kept.has(c)}

    def of(
        self, chunks: Mapping[str, StoredChunk], texts: Mapping[str, list[str]]
    ) -> dict[str, DocumentStats]:
        """Per chunk id, its document's statistics, counting (blocking) those of ``texts``
        (document id -> its chunk texts) that are not kept yet."""
        for chunk in chunks.values():
            found = texts.get(chunk.document_id)
            if found is not None and not self._kept.has(chunk):
                self._kept.put({key_of(chunk): DocumentStats.of_document(found)})
        return self._kept.per_chunk(chunks)
