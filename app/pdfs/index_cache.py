"""The cache of built text indexes, keyed by the PDF's content hash: in memory, in a local
directory and in a store shared by replicas, as data-only blobs (``index_codec.py``) bound to
their PDF and signed (``index_signing.py``).

Whom a blob is believed from: the shared store only with signing keys (anyone who may write the
bucket could put a well-formed index of the wrong lines there), and every blob it holds must
verify. The local folder is written by this service's processes on this host alone: with keys
its blobs are verified too; without, they are believed while the folder is private to this user
(owned by it, writable by no one else), which is as far as the host's own permissions go anyway
(whoever can write there as this user can change the service itself). A folder that is not
private is left unused, with one warning.
"""

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
from app.core import metrics
from app.core.files import temp_file
from app.pdfs import index_codec, index_signing
from app.pdfs.index_signing import Binding, RejectedBlob, SigningKeys
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
    to both, a shared hit to the local file. A file or blob that fails its checks (signature,
    PDF, version, format) is a miss, counted in ``highlight_index_blobs_rejected_total``, and
    overwritten; one signed by an older key is signed again by the current one. Concurrent
    ``get`` calls for the same file build it once; other files proceed in parallel.
    ``on_build`` is told each build's seconds (the caller's metrics). The built index itself
    usually comes back from a PDF worker process through pebble, which pickles it over a pipe:
    that channel is between this service's own processes and stays as it is.
    """

    def __init__(
        self,
        cache_dir: Path | None = None,
        max_entries: int = 16,
        shared: SharedBlobs | None = None,
        on_build: Callable[[float], None] | None = None,
        ocr: OcrOptions | None = None,
        signing: SigningKeys | None = None,
    ) -> None:
        # How scanned pages are read: the builder's business, but an index read with other OCR
        # settings is another index, so it is part of the blob names.
        self.ocr = ocr
        self._variant = _variant(ocr)
        self._cache_dir = cache_dir
        self._keys = signing or SigningKeys()
        self._private: bool | None = None  # whether the local folder is this user's alone
        if shared is not None and not self._keys:
            log.warning(
                "text index blobs are not shared through the object store: without "
                "HIGHLIGHT_INDEX_SIGNING_KEYS a blob there could have been written by anyone"
            )
            shared = None
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
            index = self._load(sha256, name)
            if index is None:
                index = self._build(sha256, name, build)
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

    def _load(self, sha256: str, name: str) -> DocumentIndex | None:
        """The index from the local file, else from the shared store (then kept locally)."""
        binding = Binding(sha256, self._variant)
        data = self._read_local(name)
        if data is not None:
            found = self._open(data, binding, "local", name)
            if found is not None:
                index, resigned = found
                if resigned is not None:
                    self._write_local(name, resigned)
                return index
        data = self._read_shared(name)
        if data is None:
            return None
        found = self._open(data, binding, "shared", name)
        if found is None:
            return None
        index, resigned = found
        if resigned is not None:
            self._write_shared(name, resigned)
        self._write_local(name, resigned or data)
        return index

    def _open(
        self, data: bytes, binding: Binding, source: str, name: str
    ) -> tuple[DocumentIndex, bytes | None] | None:
        """The index ``data`` holds and, when a key other than the current one signed it, the
        blob signed again by the current one (so the old key can be dropped without rebuilds);
        None, counted and logged, when it fails any check."""
        try:
            # Unverified only from the private folder of a deployment without keys.
            verify = source == "shared" or bool(self._keys)
            opened = index_signing.open_blob(data, binding, self._keys, verify=verify)
            index = index_codec.decode_index(opened.payload)
        except (RejectedBlob, index_codec.CorruptIndex) as exc:
            reason = exc.reason if isinstance(exc, RejectedBlob) else "corrupt"
            metrics.INDEX_BLOBS_REJECTED.labels(source, reason).inc()
            where = "cached" if source == "local" else "shared"
            log.warning(
                "%s index %s is unusable and is replaced (%s: %s)", where, name, reason, exc
            )
            return None
        current = self._keys.current
        if not verify or current is None or opened.key_id == current.key_id:
            return index, None
        return index, index_signing.seal(bytes(opened.payload), binding, current)

    def _build(self, sha256: str, name: str, build: Callable[[], DocumentIndex]) -> DocumentIndex:
        started = time.perf_counter()
        index = build()
        if self._on_build is not None:
            self._on_build(time.perf_counter() - started)
        if self._cache_dir is not None or self._shared is not None:
            try:
                payload = index_codec.encode_index(index)
            except ValueError as exc:  # a non-finite page size: kept in memory only
                log.warning("index %s is not cached (%s)", name, exc)
                return index
            binding = Binding(sha256, self._variant)
            data = index_signing.seal(payload, binding, self._keys.current)
            self._write_local(name, data)
            self._write_shared(name, data)
        return index

    def _local_dir(self) -> Path | None:
        """The local folder, when blobs may be kept there: always with keys (each is verified),
        without only while it is private (its blobs are believed)."""
        if self._cache_dir is None or self._keys:
            return self._cache_dir
        if self._private is None:
            self._private = _private_folder(self._cache_dir)
            if not self._private:
                log.warning(
                    "the index cache folder (HIGHLIGHT_INDEX_CACHE_DIR) is not used: without "
                    "HIGHLIGHT_INDEX_SIGNING_KEYS it must be owned by this user and writable by "
                    "no one else"
                )
        return self._cache_dir if self._private else None

    def _read_local(self, name: str) -> bytes | None:
        cache_dir = self._local_dir()
        if cache_dir is None:
            return None
        try:
            # Non-blocking, so that a FIFO planted under the name cannot hang the reader.
            fd = os.open(cache_dir / name, os.O_RDONLY | os.O_NONBLOCK)
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
        cache_dir = self._local_dir()
        if cache_dir is None:
            return
        tmp_name: str | None = None
        try:
            cache_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            # Write-then-rename so a concurrent reader in another process never sees half a file.
            fd, tmp_name = temp_file(cache_dir, prefix=f".{name}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp_name, cache_dir / name)
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


def _private_folder(folder: Path) -> bool:
    """Whether ``folder`` (made if missing, private) is this user's and no one else may write it."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        facts = folder.stat()
    except OSError:
        return False
    return facts.st_uid == os.geteuid() and not facts.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _why(exc: OSError) -> str:
    """An OS error without the absolute path its message carries."""
    return exc.strerror or type(exc).__name__
