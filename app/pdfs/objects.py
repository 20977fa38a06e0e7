"""PDFs in an object store shared by every replica, with a read-through copy on each.

``HIGHLIGHT_STORAGE_URL=s3://bucket/prefix`` is any S3-compatible store (AWS, MinIO, Ceph,
R2), reached with obstore; its endpoint and credentials come from the standard ``AWS_*``
variables (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_REGION``, ``AWS_ALLOW_HTTP``; obstore reads the environment itself).
``file:///abs/path`` (obstore's LocalStore) serves one machine and tests; ``memory://`` one
process.

A document's ``source_path`` is a key under the store's prefix. What the service stores itself
(uploads, ``ingest``) is content-addressed, ``ingested/<sha256>.pdf`` (a web or text source's
text ``texts/<sha256>.txt``, an original file ``originals/<sha256>.<ext>``), so "changed" is a
hash comparison and a key, once written, never changes. An upstream may also put its own objects
and name them in a document PUT.

PyMuPDF and the PDF response need a file, so every PDF that is opened is first copied into the
replica's cache (``HIGHLIGHT_STORAGE_CACHE_DIR/<sha256>.pdf``, written atomically and named by
the hash of the bytes actually received). Then, per open:

- a content-addressed key whose copy is here needs no network: the copy is checked like a local
  file (one ``stat``; re-hashed when its identity changed, as ``PdfStorage`` does);
- any other key costs one HEAD: an unchanged e_tag, size and modification time mean the copy
  made from it still stands; otherwise it is downloaded and hashed again.

Errors keep the local folder's contract: ``verify`` raises ``PdfMissing`` only when the store
answered that there is no such object (the per-citation reason ``pdf_unavailable``), or
``PdfChanged``; a store that cannot be reached, times out, fails or refuses raises
``StorageUnavailable`` (503 with Retry-After; the per-citation reason ``storage_unavailable``),
reads and writes alike. Readiness asks whether the store takes writes (``WriteProbe``: an empty
object put and deleted, at most once a minute). Every call has a timeout, and
the readiness probe's own client gives up within 2 s.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, TypeVar

from obstore.exceptions import (
    AlreadyExistsError,
    NotFoundError,
    PermissionDeniedError,
    UnauthenticatedError,
)
from obstore.store import LocalStore

from app.core.files import temp_file
from app.pdfs.errors import (
    InvalidSourcePath,
    PdfChanged,
    PdfMissing,
    StorageUnavailable,
    UnreadablePdf,
)
from app.pdfs.object_store import ObjectBlobs, WriteProbe, open_store, summary
from app.pdfs.storage import (
    Blobs,
    Fingerprint,
    PdfFacts,
    PdfStorage,
    SavedPdf,
    content_key,
    fingerprint,
    inspect_pdf,
    sha256_of_file,
    source_path_problem,
    write_atomically,
)
from app.pdfs.workers import PdfWorkers

if TYPE_CHECKING:
    from obstore.store import ObjectStore

log = logging.getLogger(__name__)
T = TypeVar("T")

# Keys this service names by their content: a PDF, a text source's text, an original file
# (``originals.py``, ``documents/text_sources.py``); a cached copy of that content is the object.
_CONTENT_KEY = re.compile(
    r"^(?:ingested/([0-9a-f]{64})\.pdf|texts/([0-9a-f]{64})\.txt|originals/([0-9a-f]{64})\.[a-z]+)$"
)
_DOWNLOAD_CHUNK = 1 << 20


class _Absent(Exception):
    """No object at the key."""


class _Unreachable(Exception):
    """The store failed; the message is a one-line summary without URLs or paths."""


class _TooLarge(Exception):
    pass


@dataclass(frozen=True)
class _Version:
    """What a HEAD says about an object, and the hash of the bytes last downloaded from it."""

    e_tag: str | None
    size: int
    last_modified: datetime
    sha256: str


def _content_hash(key: str) -> str | None:
    match = _CONTENT_KEY.match(key)
    return next((group for group in match.groups() if group), None) if match else None


class ObjectPdfStorage(PdfStorage):
    """``PdfStorage`` over an object store; ``root`` is this replica's cache folder. Thread-safe
    like its parent: two threads wanting the same object download it once."""

    def __init__(
        self,
        store: ObjectStore,
        cache_dir: Path,
        workers: PdfWorkers | None = None,
        *,
        probe: ObjectStore | None = None,
        name: str = "the object store",
        max_bytes: int | None = None,
    ) -> None:
        super().__init__(cache_dir, workers)
        self.store = store
        self.name = name
        # An object larger than an upload may be cannot be a document's content.
        self.max_bytes = max_bytes
        self._probe = probe or store
        self._blobs = ObjectBlobs(store)
        self.writes = WriteProbe(self._probe, name)
        self._versions: dict[str, _Version] = {}
        self._fetch_locks: dict[str, threading.Lock] = {}

    @classmethod
    def from_url(
        cls,
        url: str,
        cache_dir: Path,
        workers: PdfWorkers | None = None,
        *,
        max_bytes: int | None = None,
    ) -> ObjectPdfStorage:
        store, probe, name = open_store(url)
        return cls(store, cache_dir, workers, probe=probe, name=name, max_bytes=max_bytes)

    # -- the PdfStorage surface ------------------------------------------------------------

    def resolve(self, source_path: str) -> Path:
        """Blocking: the local copy of the object at ``source_path`` as it is now (an object has
        no path of its own on this machine). Raises InvalidSourcePath or PdfMissing."""
        return self.current_file(source_path)

    def relative(self, path: Path) -> str | None:
        return None  # a file on this machine is never inside the object store: ingest copies it

    def normalize(self, source_path: str) -> str:
        return self._key(source_path)

    def facts(self, source_path: str) -> PdfFacts:
        key = self._key(source_path)
        name = PurePosixPath(key).name
        try:
            path, sha256 = self._local_copy(key)
        except _Absent:
            raise InvalidSourcePath(
                f"no PDF at source_path {source_path!r} in the object store; upload it first "
                "(PUT /v2/documents/{id}/pdf answers the source_path to send)"
            ) from None
        except _TooLarge:
            raise UnreadablePdf(
                f"{name} is larger than this service accepts ({self.max_bytes} bytes, "
                "HIGHLIGHT_MAX_PDF_BYTES)"
            ) from None
        except _Unreachable as exc:
            raise StorageUnavailable(f"{self.name} cannot be used: {exc}") from None
        page_count, title = self.workers.run(inspect_pdf, path, name, name=name)
        return PdfFacts(sha256, page_count, title)

    def save(self, data: bytes, sha256: str) -> SavedPdf:
        key = content_key(sha256)
        try:
            found = self.store.head(key)
        except (FileNotFoundError, NotFoundError):
            found = None
        except Exception as exc:
            raise StorageUnavailable(f"{self.name} cannot be used: {summary(exc)}") from None
        # The same size under a content-addressed key is the same content (only this service
        # writes these keys, after hashing); another size is a damaged object, replaced.
        newly_stored = found is None or found["size"] != len(data)
        if newly_stored:
            try:
                self.store.put(key, data, mode="create" if found is None else "overwrite")
            except AlreadyExistsError:
                newly_stored = False  # an upload of the same content won the race
            except (PermissionDeniedError, UnauthenticatedError) as exc:
                # The store answered, and said no: readiness learns it now, not in a minute.
                problem = self.writes.refusal(exc, "put")
                self.writes.note(problem)
                raise StorageUnavailable(
                    f"the PDF was not stored: {problem}; the store refused this service's write "
                    "(a read-only bucket or key), so nothing was kept: tell the operator"
                ) from None
            except Exception as exc:
                raise StorageUnavailable(
                    f"the PDF was not stored: {self.name} could not be reached ({summary(exc)}); "
                    "retry after the Retry-After header's seconds"
                ) from None
            self.writes.note(None)
        if self._cached(sha256) is None:
            self._keep(data, sha256)
        return SavedPdf(key, newly_stored)

    def read_record(self, key: str, max_bytes: int = 4096) -> bytes | None:
        try:
            return bytes(self._call(lambda: self.store.get(key).bytes()))[:max_bytes]
        except _Absent:
            return None
        except _Unreachable as exc:
            raise StorageUnavailable(f"{self.name} cannot be used: {exc}") from None

    def has_record(self, key: str) -> bool:
        try:
            self._call(lambda: self.store.head(key))
        except _Absent:
            return False
        except _Unreachable as exc:
            raise StorageUnavailable(f"{self.name} cannot be used: {exc}") from None
        return True

    def put_record(self, key: str, data: bytes, *, replace: bool = False) -> bool:
        try:
            self.store.put(key, data, mode="overwrite" if replace else "create")
        except AlreadyExistsError:
            return False
        except Exception as exc:
            raise StorageUnavailable(f"{self.name} did not store it: {summary(exc)}") from None
        return True

    def verify(self, source_path: str, sha256: str) -> Path:
        path, actual = self._copy_or_missing(source_path, expected=sha256)
        self._check(source_path, sha256, actual)
        return path

    def read_verified(self, source_path: str, sha256: str) -> bytes:
        path = self.verify(source_path, sha256)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise PdfMissing(f"the PDF {source_path!r} cannot be read") from exc
        self._check(source_path, sha256, hashlib.sha256(data).hexdigest())
        return data

    def current_file(self, source_path: str) -> Path:
        return self._copy_or_missing(source_path)[0]

    def problem(self) -> str | None:
        if isinstance(self.store, LocalStore) and not (
            self.store.prefix is not None and self.store.prefix.is_dir()
        ):
            return f"{self.name} has no folder"
        if self.root.exists() and not os.access(self.root, os.W_OK | os.X_OK):
            return "the storage cache folder (HIGHLIGHT_STORAGE_CACHE_DIR) cannot be written"
        try:
            # One request that needs the bucket and the credentials, answering nearly nothing.
            self._probe.list_with_delimiter(".readyz")
        except Exception as exc:
            return f"{self.name} cannot be used: {summary(exc)}"
        return None

    def write_problem(self) -> str | None:
        # Asked at most once a minute whatever the callers (WriteProbe).
        return self.writes.problem()

    def index_blobs(self) -> Blobs:
        return self._blobs

    # -- keys, copies, downloads -----------------------------------------------------------

    def _key(self, source_path: str) -> str:
        problem = source_path_problem(source_path)
        if problem:
            raise InvalidSourcePath(f"source_path {problem}")
        return PurePosixPath(source_path).as_posix()

    def _copy_or_missing(self, source_path: str, expected: str | None = None) -> tuple[Path, str]:
        """``_local_copy`` with the errors ``verify`` promises."""
        try:
            key = self._key(source_path)
        except InvalidSourcePath as exc:
            raise PdfMissing(f"the PDF {source_path!r} is not a valid object key") from exc
        try:
            return self._local_copy(key)
        except _Absent:
            raise PdfMissing(f"the PDF {source_path!r} is missing from the object store") from None
        except _Unreachable as exc:
            # Not PdfMissing: a 404 tells a client the document is gone, and it is not.
            raise StorageUnavailable(
                f"the PDF {source_path!r} cannot be fetched now: {self.name} failed ({exc}); "
                "retry after the Retry-After header's seconds"
            ) from None
        except _TooLarge:
            # The ingested content fitted the limit; what is there now is something else.
            raise PdfChanged(
                f"the PDF {source_path!r} is not the file that was ingested (it is now larger "
                f"than HIGHLIGHT_MAX_PDF_BYTES, expected sha256 {(expected or '?')[:12]}…); "
                "re-ingest the document"
            ) from None

    def _local_copy(self, key: str) -> tuple[Path, str]:
        """Blocking: a verified local copy of the object at ``key`` and its hash."""
        named = _content_hash(key)
        if named is not None:
            cached = self._cached(named)
            if cached is not None:
                return cached, named
            return self._download(key)
        meta = self._call(lambda: self.store.head(key))
        with self._lock:
            known = self._versions.get(key)
        if known is not None and (known.e_tag, known.size, known.last_modified) == (
            meta["e_tag"],
            meta["size"],
            meta["last_modified"],
        ):
            cached = self._cached(known.sha256)
            if cached is not None:
                return cached, known.sha256
        return self._download(key)

    @staticmethod
    def _call(request: Callable[[], T]) -> T:
        try:
            return request()
        except (FileNotFoundError, NotFoundError):
            raise _Absent from None
        except Exception as exc:  # the caller's error says it, with this summary
            raise _Unreachable(summary(exc)) from None

    def _download(self, key: str) -> tuple[Path, str]:
        """Blocking: the object's bytes into the cache, hashed as they arrive; one download at a
        time per key (a second thread then finds the copy made by the first)."""
        with self._lock:
            lock = self._fetch_locks.setdefault(key, threading.Lock())
        with lock:
            named = _content_hash(key)
            cached = self._cached(named) if named is not None else None
            if named is not None and cached is not None:
                return cached, named
            result = self._call(lambda: self.store.get(key))
            meta = result.meta
            if self.max_bytes is not None and meta["size"] > self.max_bytes:
                raise _TooLarge
            path, sha256 = self._write_copy(result.stream(min_chunk_size=_DOWNLOAD_CHUNK))
            with self._lock:
                self._versions[key] = _Version(
                    meta["e_tag"], meta["size"], meta["last_modified"], sha256
                )
            return path, sha256

    def _write_copy(self, chunks: Iterable[bytes]) -> tuple[Path, str]:
        self.root.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        size = 0
        fd, tmp = temp_file(self.root)
        try:
            with os.fdopen(fd, "wb") as handle:
                try:
                    for chunk in chunks:
                        size += len(chunk)
                        if self.max_bytes is not None and size > self.max_bytes:
                            raise _TooLarge
                        digest.update(chunk)
                        handle.write(chunk)
                except _TooLarge:
                    raise
                except Exception as exc:  # the connection broke mid-download
                    raise _Unreachable(summary(exc)) from None
            sha256 = digest.hexdigest()
            target = self._copy_path(sha256)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._remember(target, _fingerprint_of(target), sha256)
        return target, sha256

    def _keep(self, data: bytes, sha256: str) -> None:
        """This replica's copy of what it has just stored: the first open needs no download."""
        target = self._copy_path(sha256)
        write_atomically(target, data)
        self._remember(target, _fingerprint_of(target), sha256)

    def _copy_path(self, sha256: str) -> Path:
        return self.root / f"{sha256}.pdf"

    def _cached(self, sha256: str) -> Path | None:
        """The cached copy of this content, checked as ``PdfStorage`` checks a file: one stat
        while it is untouched, a re-hash when it changed (a damaged copy is dropped)."""
        path = self._copy_path(sha256)
        try:
            current = _fingerprint_of(path)
        except OSError:
            return None
        with self._lock:
            known = self._verified.get(path)
        if known == (current, sha256):
            return path
        if sha256_of_file(path) != sha256:
            log.warning("cached PDF copy %s… is damaged; fetching it again", sha256[:12])
            path.unlink(missing_ok=True)
            return None
        self._remember(path, current, sha256)
        return path


def _fingerprint_of(path: Path) -> Fingerprint:
    return fingerprint(path.stat())
