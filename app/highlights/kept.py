"""What this process keeps per cited document, by its content: the word-overlap judge's term
statistics (``term_stats.py``) and the document's text for selectors (``sources.py``). Keyed by
document id, content hash and when its chunks last changed, so a changed document is a new
entry; past ``max_documents`` the least recently used goes."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Generic, TypeVar

from app.highlights.cited import StoredChunk

MAX_DOCUMENTS = 64

Key = tuple[str, str, str]  # document id, content hash, when its chunks last changed
V = TypeVar("V")


def key_of(chunk: StoredChunk) -> Key:
    changed = chunk.updated_at.isoformat() if chunk.updated_at else ""
    return chunk.document_id, chunk.sha256, changed


class KeptPerDocument(Generic[V]):
    def __init__(self, max_documents: int = MAX_DOCUMENTS) -> None:
        self._known: OrderedDict[Key, V] = OrderedDict()
        self._lock = threading.Lock()
        self.max_documents = max_documents

    def has(self, chunk: StoredChunk) -> bool:
        with self._lock:
            return key_of(chunk) in self._known

    def put(self, values: Mapping[Key, V]) -> None:
        """Keep ``values`` as the most recently used, then drop what is over the bound."""
        with self._lock:
            for key, value in values.items():
                self._known[key] = value
                self._known.move_to_end(key)
            while len(self._known) > self.max_documents:
                self._known.popitem(last=False)

    def per_chunk(self, chunks: Mapping[str, StoredChunk]) -> dict[str, V]:
        """Per chunk id, its document's kept value, for those kept (each marked used)."""
        out: dict[str, V] = {}
        with self._lock:
            for cid, chunk in chunks.items():
                kept = self._known.get(key_of(chunk))
                if kept is not None:
                    self._known.move_to_end(key_of(chunk))
                    out[cid] = kept
        return out
