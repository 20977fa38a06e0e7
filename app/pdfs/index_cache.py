"""The cache of built text indexes, keyed by the PDF's content hash: in memory, in a local
directory and in a store shared by replicas, as data-only blobs (``index_codec.py``)."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Protocol

from app.alignment.index import INDEX_VERSION, DocumentIndex
from app.core.files import temp_file
from app.pdfs import index_codec
from app.pdfs.ocr import OcrOptions

log = logging.getLogger(__name__)


class IndexPending(Exception):
    """The index is still being built (in the background) after the caller's wait."""


def _variant(ocr: OcrOptions | None) -> str:
    if ocr is None or ocr.mode == "off":
        return ""
    return "ocr" + hashlib.sha256(ocr.tag().encode()).hexdigest()[:12]


class SharedBlobs(Protocol):
    """Index blobs shared between replicas (an object store): blocking calls. Names are flat
    (``<sha256>.v<INDEX_VERSION>.idx``). ``get`` is None when there is no such blob; any other
    failure may raise, and the cache carries on without the store."""

    def get(self, name: str) -> bytes | None: ...

    def put(self, name: str, data: bytes) -> None: ...


class IndexCache:
    """Thread-safe LRU of built indexes keyed by sha256, backed by an optional directory of
    index blobs (``index_codec``: data only, never pickle) and an optional shared store.

    A lookup tries memory, the local file, the shared blob, then ``build``; a build is written
    to both, a shared hit to the local file. A file or blob that does not decode is a miss (and
    is overwritten). Concurrent ``get`` calls for the same file build it once; other files
    proceed in parallel. ``on_build`` is told each build's seconds (for metrics; this package
    imports none). The built index itself usually comes back from a PDF worker process through
    pebble, which pickles it over a pipe: that channel is between this service's own processes
    and stays as it is.
    """

    def __init__(
        self,
        cache_dir: Path | None = None,
        max_entries: int = 16,
        shared: SharedBlobs | None = None,
        on_build: Callable[[float], None] | None = None,
        ocr: OcrOptions | None = None,
    ) -> None:
        # How scanned pages are read: the builder's business, but an index read with other OCR
        # settings is another index, so it is part of the blob names.
        self.ocr = ocr
        self._variant = _variant(ocr)
        self._cache_dir = cache_dir
        self._shared = shared
        self._on_build = on_build
        self._max_entries = max(1, max_entries)
        self._entries: OrderedDict[str, DocumentIndex] = OrderedDict()
        # Contents that could not be indexed within the limits, and why: asked again, they are
        # refused at once instead of costing another worker a minute.
        self._refused: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}
        self._building: dict[str, Future[DocumentIndex]] = {}
        self._background = ThreadPoolExecutor(max_workers=4, thread_name_prefix="index-build")

    def get(self, sha256: str, build: Callable[[], DocumentIndex]) -> DocumentIndex:
        """The index of the PDF whose content hashes to ``sha256``; ``build`` makes it on a miss.
        The cache trusts the key: checking that a file still has this content is the caller's
        job, on every open (``PdfStorage.verify``), not only on a miss."""
        persisted = self._cache_dir is not None or self._shared is not None
        if persisted and not _SHA256.fullmatch(sha256):
            # The key names files and blobs: only a digest may, never a path.
            raise ValueError(f"index cache key {sha256[:80]!r} is not a hex SHA-256")
        with self._lock:
            key_lock = self._key_locks.setdefault(sha256, threading.Lock())
        with key_lock:
            cached = self._lookup(sha256)
            if cached is not None:
                return cached
            name = blob_name(sha256, self._variant)
            index = self._load(name)
            if index is None:
                index = self._build(name, build)
            self._remember(sha256, index)
            return index

    def get_within(
        self, sha256: str, build: Callable[[], DocumentIndex], wait_s: float
    ) -> DocumentIndex:
        """``get``, waiting at most ``wait_s`` for a build (OCR of a scan takes minutes): past
        it, raises ``IndexPending`` while the build goes on in the background, so the next
        request finds the index ready. Concurrent callers share one build."""
        cached = self._lookup(sha256)
        if cached is not None:
            return cached
        with self._lock:
            future = self._building.get(sha256)
            if future is None:
                future = self._background.submit(self.get, sha256, build)
                self._building[sha256] = future
                future.add_done_callback(lambda done: self._done_building(sha256, done))
        try:
            return future.result(timeout=wait_s)
        except FutureTimeout:
            raise IndexPending(sha256) from None

    def _done_building(self, sha256: str, done: Future[DocumentIndex]) -> None:
        with self._lock:
            self._building.pop(sha256, None)
        failure = done.exception()
        if failure is not None:  # the batch that started it may have stopped waiting
            log.warning("building the text index of %s failed: %s", sha256[:12], failure)

    def refuse(self, sha256: str, reason: str) -> None:
        with self._lock:
            self._refused[sha256] = reason
            while len(self._refused) > 256:
                self._refused.popitem(last=False)

    def refusal(self, sha256: str) -> str | None:
        with self._lock:
            return self._refused.get(sha256)

    def _lookup(self, key: str) -> DocumentIndex | None:
        with self._lock:
            index = self._entries.get(key)
            if index is not None:
                self._entries.move_to_end(key)
            return index

    def _remember(self, key: str, index: DocumentIndex) -> None:
        with self._lock:
            self._entries[key] = index
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                evicted, _ = self._entries.popitem(last=False)
                self._key_locks.pop(evicted, None)

    def _load(self, name: str) -> DocumentIndex | None:
        """The index from the local file, else from the shared store (then kept locally)."""
        data = self._read_local(name)
        if data is not None:
            index = _decoded(data, f"cached index {name}")
            if index is not None:
                return index
        data = self._read_shared(name)
        if data is None:
            return None
        index = _decoded(data, f"shared index {name}")
        if index is not None:
            self._write_local(name, data)
        return index

    def _build(self, name: str, build: Callable[[], DocumentIndex]) -> DocumentIndex:
        started = time.perf_counter()
        index = build()
        if self._on_build is not None:
            self._on_build(time.perf_counter() - started)
        if self._cache_dir is not None or self._shared is not None:
            try:
                data = index_codec.encode_index(index)
            except ValueError as exc:  # a non-finite page size: kept in memory only
                log.warning("index %s is not cached (%s)", name, exc)
                return index
            self._write_local(name, data)
            self._write_shared(name, data)
        return index

    def _read_local(self, name: str) -> bytes | None:
        if self._cache_dir is None:
            return None
        try:
            # Non-blocking, so that a FIFO planted under the name cannot hang the reader.
            fd = os.open(self._cache_dir / name, os.O_RDONLY | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as handle:
                facts = os.fstat(fd)
                if stat.S_ISREG(facts.st_mode) and facts.st_size <= index_codec.MAX_BLOB_BYTES:
                    return handle.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("cannot read cached index %s (%s)", name, _why(exc))
            return None
        log.warning("cached index %s is not a file of an index's size and is replaced", name)
        return None

    def _write_local(self, name: str, data: bytes) -> None:
        if self._cache_dir is None:
            return
        tmp_name: str | None = None
        try:
            self._cache_dir.mkdir(parents=True, exist_ok=True)
            # Write-then-rename so a concurrent reader in another process never sees half a file.
            fd, tmp_name = temp_file(self._cache_dir, prefix=f".{name}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp_name, self._cache_dir / name)
        except OSError as exc:  # a full disk costs the next process a rebuild, not this request
            log.warning("cannot write cached index %s (%s)", name, _why(exc))
            if tmp_name is not None:
                Path(tmp_name).unlink(missing_ok=True)

    def _read_shared(self, name: str) -> bytes | None:
        if self._shared is None:
            return None
        try:
            return self._shared.get(name)
        except Exception as exc:  # an unreachable store is a miss: the index can be rebuilt
            log.warning("cannot read shared index %s (%s)", name, type(exc).__name__)
            return None

    def _write_shared(self, name: str, data: bytes) -> None:
        if self._shared is None:
            return
        try:
            self._shared.put(name, data)
        except Exception as exc:  # other replicas will build it themselves
            log.warning("cannot share index %s (%s)", name, type(exc).__name__)


_SHA256 = re.compile("[0-9a-f]{64}")


def blob_name(sha256: str, variant: str = "") -> str:
    """The file and blob name of the index of the PDF with this content hash (``variant``: the
    OCR settings it was built with, when OCR is on)."""
    return f"{sha256}.v{INDEX_VERSION}{'.' + variant if variant else ''}.idx"


def _decoded(data: bytes, what: str) -> DocumentIndex | None:
    try:
        return index_codec.decode_index(data)
    except index_codec.CorruptIndex as exc:
        log.warning("%s is unusable and is replaced (%s)", what, exc)
        return None


def _why(exc: OSError) -> str:
    """An OS error without the absolute path its message carries."""
    return exc.strerror or type(exc).__name__
