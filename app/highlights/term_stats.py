"""Each cited document's term statistics, kept in this process: the word weights of the lexical
judge (``app.selection.stats``).

Counting a 10-K's terms takes about 0.3 s, so it is done once per document and content (its PDF
hash, and when its chunks last changed: an upstream may re-chunk the same PDF) and kept for at
most ``MAX_DOCUMENTS`` documents, the least recently used leaving first. The texts are read in the
batch's own database transaction (one query for the documents it lacks); the counting runs in
the batch's worker thread, off the event loop.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping

from app.highlights.cited import StoredChunk
from app.selection.stats import DocumentStats

MAX_DOCUMENTS = 64

Key = tuple[str, str, str]  # document id, PDF hash, when its content last changed


def _key(chunk: StoredChunk) -> Key:
    changed = chunk.updated_at.isoformat() if chunk.updated_at else ""
    return chunk.document_id, chunk.sha256, changed


class TermStatistics:
    def __init__(self, max_documents: int = MAX_DOCUMENTS) -> None:
        self._known: OrderedDict[Key, DocumentStats] = OrderedDict()
        self._lock = threading.Lock()
        self.max_documents = max_documents

    def missing(self, chunks: Mapping[str, StoredChunk]) -> set[str]:
        """The documents of ``chunks`` whose statistics are not kept."""
        with self._lock:
            return {c.document_id for c in chunks.values() if _key(c) not in self._known}

    def of(
        self, chunks: Mapping[str, StoredChunk], texts: Mapping[str, list[str]]
    ) -> dict[str, DocumentStats]:
        """Per chunk id, its document's statistics, counting (blocking) those of ``texts``
        (document id -> its chunk texts) that are not kept yet."""
        for chunk in chunks.values():
            found = texts.get(chunk.document_id)
            with self._lock:
                if found is None or _key(chunk) in self._known:
                    continue
            stats = DocumentStats.of_document(found)
            with self._lock:
                self._known[_key(chunk)] = stats
                while len(self._known) > self.max_documents:
                    self._known.popitem(last=False)
        out: dict[str, DocumentStats] = {}
        with self._lock:
            for cid, chunk in chunks.items():
                kept = self._known.get(_key(chunk))
                if kept is not None:
                    self._known.move_to_end(_key(chunk))
                    out[cid] = kept
        return out
