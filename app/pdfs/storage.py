"""The one owner of PDF files: where they live, what they hash to, and whether the file on disk is
still the one a document was ingested with.

Everything that opens a stored PDF goes through ``PdfStorage``. ``verify`` runs on every open, not
only when an index is built: a PDF replaced or truncated under a running service must never be
highlighted with rectangles computed from its old content. It costs one ``stat`` while the file is
untouched; any change to its identity (device, inode, size, mtime, ctime) triggers a full re-hash.
ctime cannot be set by a user, so even a rewrite that keeps size and mtime is noticed.

Errors raised here are ``AppError`` subclasses; callers that answer per citation turn
``PdfMissing``, ``PdfChanged`` and ``StorageUnavailable`` into the reasons ``pdf_unavailable``,
``pdf_changed`` and ``storage_unavailable``. ``PdfMissing`` (a 404) means the storage was asked
and has no such file; a storage that cannot be asked (here: the PDF folder itself is gone, an
unmounted volume) is ``StorageUnavailable`` (a 503), so no client concludes a document is gone
during an outage.

``PdfStorage`` is the local-folder backend (``HIGHLIGHT_STORAGE_URL`` empty, the default);
``objects.py`` holds the object-store backend (S3-compatible, or obstore's local and
memory stores), a subclass with the same surface. ``build_storage`` picks one from the settings.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Protocol

from app.alignment.text import clean_extracted
from app.core.errors import BadRequest
from app.core.files import temp_file
from app.pdfs.errors import (
    InvalidSourcePath,
    PdfChanged,
    PdfMissing,
    StorageUnavailable,
    UnreadablePdf,
)
from app.pdfs.pdf import open_pdf
from app.pdfs.structure import cut_short, lost_pages
from app.pdfs.titles import usable_title
from app.pdfs.workers import PdfWorkers

if TYPE_CHECKING:  # PyMuPDF is imported where a PDF is opened: in the PDF workers
    import pymupdf

COPY_DIR = "ingested"
# Most file systems refuse a name longer than this many bytes (ENAMETOOLONG).
MAX_NAME_BYTES = 255

Fingerprint = tuple[int, int, int, int, int]


class Blobs(Protocol):
    """Named blobs shared by every replica (the text indexes): what ``IndexCache`` takes as
    ``shared`` (``alignment.index.SharedBlobs``). A cache: ``get`` answers None on any miss or
    error, ``put`` never raises."""

    def get(self, name: str) -> bytes | None: ...

    def put(self, name: str, data: bytes) -> None: ...


@dataclass(frozen=True)
class SavedPdf:
    source_path: str  # where it is, relative to the storage's root (its key in an object store)
    newly_stored: bool  # False: the same content was already there, nothing was rewritten


@dataclass(frozen=True)
class PdfFacts:
    sha256: str
    page_count: int
    title: str = ""  # the PDF's own metadata title, when it has one


def source_path_problem(source_path: str) -> str | None:
    """Why ``source_path`` cannot name a file under the root, or None. Pure, so the API model can
    refuse it with a 422 naming the field before anything touches the disk."""
    if "\x00" in source_path:
        return "must not contain NUL characters"
    if "\\" in source_path or PurePosixPath(source_path).is_absolute():
        return "must be relative to the PDF root (forward slashes, no leading '/')"
    parts = PurePosixPath(source_path).parts
    if not parts:
        return "must name a file"
    if ".." in parts:
        return "must not contain '..' (it would point outside the PDF root)"
    too_long = [p for p in parts if len(p.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES]
    if too_long:
        return f"has a path part of more than {MAX_NAME_BYTES} bytes, which no file system accepts"
    return None


def sha256_of_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fingerprint(stat: os.stat_result) -> Fingerprint:
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def _mupdf_errors() -> tuple[type[Exception], ...]:
    """What PyMuPDF raises for a structurally broken document (FzErrorBase is MuPDF's own
    family)."""
    import pymupdf

    return (ValueError, RuntimeError, pymupdf.mupdf.FzErrorBase)


def inspect_pdf(data: bytes | Path, name: str) -> tuple[int, str]:
    """Blocking: the page count and metadata title of a whole PDF (``structure.py``) that can be
    read without a password. ``name`` (never a server path) is what error messages show."""
    import pymupdf

    incomplete = cut_short(data, name)
    if incomplete:
        raise UnreadablePdf(incomplete)
    try:
        doc = open_pdf(data)
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
        raise UnreadablePdf(f"{name} cannot be opened as a PDF (damaged or not a PDF)") from exc
    with doc:
        if not doc.is_pdf:
            raise UnreadablePdf(f"{name} is not a PDF")
        if doc.needs_pass:
            raise UnreadablePdf(
                f"{name} is encrypted with a user password; store a decrypted copy "
                "(e.g. `qpdf --decrypt in.pdf out.pdf`) and ingest that"
            )
        try:
            page_count = int(doc.page_count)
        except _mupdf_errors() as exc:
            # e.g. /Count -1 or 99999999: MuPDF raises only when the count is first read.
            raise UnreadablePdf(
                f"{name} cannot be indexed: its page tree is invalid ({_reason(exc)})"
            ) from None
        _check_pages(doc, page_count, name)
        lost = lost_pages(doc, page_count)
        if lost:
            raise UnreadablePdf(
                f"{name} is damaged: its page tree declares {page_count} pages, but "
                f"{'page ' if len(lost) == 1 else f'{len(lost)} pages from page '}{lost[0]} "
                "is not in the file; send the whole file"
            )
        title = " ".join(clean_extracted(str((doc.metadata or {}).get("title") or "")).split())
        # A converter's placeholder ("Microsoft Word - x.doc") is no title: the caller's or the
        # file name's is used instead (titles.py).
        return page_count, (usable_title(title) or "")[:500]


def _check_pages(doc: pymupdf.Document, page_count: int, name: str) -> None:
    """Every page the page tree declares can be loaded: a PDF whose /Count lies, or whose page
    tree loops back on itself, is accepted by ``page_count`` but can never be highlighted on the
    pages it claims. Loading a page object costs about 0.1 ms (no content is parsed)."""
    if page_count < 1:
        raise UnreadablePdf(f"{name} has no pages")
    for number in range(page_count):
        try:
            doc.load_page(number)
        except _mupdf_errors() as exc:
            raise UnreadablePdf(
                f"{name} cannot be indexed: its page tree declares {page_count} pages, but page "
                f"{number + 1} cannot be read ({_reason(exc)})"
            ) from None


def _reason(exc: Exception) -> str:
    """MuPDF's own words without its code prefix ("code=7: cycle in page tree")."""
    return str(exc).split(": ", 1)[-1] or type(exc).__name__


class PdfStorage:
    """PDFs under one root folder (``HIGHLIGHT_PDF_ROOT``), and the bounded workers that open
    them. Thread-safe: the batch opens PDFs from a worker thread while requests check them from
    the event loop's threads."""

    def __init__(self, root: Path, workers: PdfWorkers | None = None) -> None:
        self.root = root.resolve()
        # Where PyMuPDF runs on these files; inline (no limits) only for trusted files in tests.
        self.workers = workers or PdfWorkers(None)
        self._verified: dict[Path, tuple[Fingerprint, str]] = {}
        self._lock = threading.Lock()

    def resolve(self, source_path: str) -> Path:
        """The absolute path of ``source_path``, refusing anything that escapes the root
        (``..``, absolute paths, symlinks pointing out)."""
        problem = source_path_problem(source_path)
        if problem:
            raise InvalidSourcePath(f"source_path {problem}")
        resolved = (self.root / source_path).resolve()
        if not resolved.is_relative_to(self.root):
            raise InvalidSourcePath("source_path points outside the PDF root")
        return resolved

    def relative(self, path: Path) -> str | None:
        """``path`` relative to the root (forward slashes), or None when it lies outside."""
        resolved = path.resolve()
        if resolved.is_relative_to(self.root):
            return resolved.relative_to(self.root).as_posix()
        return None

    def facts(self, source_path: str) -> PdfFacts:
        """Blocking: hash and page count of a PDF under the root, refusing what cannot be read."""
        path = self.resolve(source_path)
        if not path.is_file():
            raise InvalidSourcePath(
                f"no PDF at source_path {source_path!r} under the PDF root; "
                "copy the file there first (or use `highlight-service ingest`)"
            )
        before = fingerprint(path.stat())
        sha256 = sha256_of_file(path)
        name = PurePosixPath(source_path).name
        page_count, title = self.workers.run(inspect_pdf, path, name, name=name)
        self._remember(path, before, sha256)
        return PdfFacts(sha256, page_count, title)

    def normalize(self, source_path: str) -> str:
        """The spelling a document stores for ``source_path`` (symlinks and ``./`` resolved)."""
        return self.relative(self.resolve(source_path)) or source_path

    def save(self, data: bytes, sha256: str) -> SavedPdf:
        """Blocking: write a PDF into the root named by its content (``data`` must hash to
        ``sha256``), so re-ingesting never overwrites a file that a stored document still points
        at. The same content again rewrites nothing."""
        relative = content_key(sha256)
        target = self.root / relative
        if target.is_file() and sha256_of_file(target) == sha256:
            return SavedPdf(relative, newly_stored=False)
        write_atomically(target, data)
        return SavedPdf(relative, newly_stored=True)

    def read_record(self, key: str, max_bytes: int = 4096) -> bytes | None:
        """Blocking: the start of a file this service wrote under the root (a conversion
        record, ``originals.py``), or None when there is none."""
        try:
            with (self.root / key).open("rb") as handle:
                return handle.read(max_bytes)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageUnavailable(f"the PDF folder cannot be read ({exc.strerror})") from None

    def has_record(self, key: str) -> bool:
        """Blocking: whether a file this service wrote is at ``key`` (``originals.py``)."""
        try:
            return (self.root / key).is_file()
        except OSError as exc:
            raise StorageUnavailable(f"the PDF folder cannot be read ({exc.strerror})") from None

    def put_record(self, key: str, data: bytes, *, replace: bool = False) -> bool:
        """Blocking: write ``data`` at ``key`` (a path this service names: ``originals.py``)
        unless a file is there already (False); ``replace``: whatever is there. Create-only is
        a hard link of a whole temporary file, so of two racing writers one wins, whole."""
        target = self.root / key
        if replace:
            write_atomically(target, data)
            return True
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = temp_file(target.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.link(tmp, target)
            return True
        except FileExistsError:
            return False
        finally:
            Path(tmp).unlink(missing_ok=True)

    def store_copy(self, data: bytes, sha256: str) -> str:
        """``save``, for callers that only need the path relative to the root."""
        return self.save(data, sha256).source_path

    def current_file(self, source_path: str) -> Path:
        """Blocking: the file as it is now, whatever its content (served without claiming to be
        the ingested one when ``verify`` found it changed). Raises PdfMissing."""
        return self._existing(source_path)

    def problem(self) -> str | None:
        """Blocking, quick: why PDFs cannot be read now (one line, no server path), or None."""
        if not self.root.is_dir():
            return "the PDF folder (HIGHLIGHT_PDF_ROOT) does not exist"
        if not os.access(self.root, os.R_OK | os.X_OK):
            return "the PDF folder (HIGHLIGHT_PDF_ROOT) cannot be read by the service"
        return None

    def write_problem(self) -> str | None:
        """Blocking: why PDFs cannot be stored now, or None. A local folder may be mounted
        read-only on purpose (documents named by source_path, no uploads): not a problem."""
        return None

    def index_blobs(self) -> Blobs | None:
        """Where replicas share built text indexes: nowhere for a local folder (one machine;
        ``HIGHLIGHT_INDEX_CACHE_DIR`` serves it)."""
        return None

    def verify(self, source_path: str, sha256: str) -> Path:
        """The path of a stored document's PDF, checked against the hash it was ingested with.
        Raises PdfMissing or PdfChanged."""
        path = self._existing(source_path)
        try:
            current = fingerprint(path.stat())
        except OSError as exc:
            raise PdfMissing(f"the PDF {source_path!r} is missing from the PDF root") from exc
        with self._lock:
            known = self._verified.get(path)
        if known == (current, sha256):
            return path
        actual = sha256_of_file(path)
        self._check(source_path, sha256, actual)
        self._remember(path, current, actual)
        return path

    def read_verified(self, source_path: str, sha256: str) -> bytes:
        """Blocking: the bytes of a stored document's PDF, hashed as read, so what is indexed is
        exactly what was checked. Raises PdfMissing or PdfChanged."""
        path = self._existing(source_path)
        try:
            before = fingerprint(path.stat())
            data = path.read_bytes()
        except OSError as exc:
            raise PdfMissing(f"the PDF {source_path!r} cannot be read") from exc
        self._check(source_path, sha256, hashlib.sha256(data).hexdigest())
        self._remember(path, before, sha256)
        return data

    def _existing(self, source_path: str) -> Path:
        try:
            path = self.resolve(source_path)
        except BadRequest as exc:
            # A stored path that no longer resolves (the root moved, a symlink changed).
            raise PdfMissing(f"the PDF {source_path!r} is not under the PDF root") from exc
        if not path.is_file():
            problem = self.problem()
            if problem:
                raise StorageUnavailable(f"{problem}; retry after the Retry-After header's seconds")
            raise PdfMissing(f"the PDF {source_path!r} is missing from the PDF root")
        return path

    @staticmethod
    def _check(source_path: str, expected: str, actual: str) -> None:
        if actual != expected:
            raise PdfChanged(
                f"the PDF {source_path!r} is not the file that was ingested "
                f"(sha256 {actual[:12]}…, expected {expected[:12]}…); re-ingest the document"
            )

    def _remember(self, path: Path, before: Fingerprint, sha256: str) -> None:
        # Only when the file did not change while it was hashed; otherwise the next open
        # simply hashes again.
        try:
            after = fingerprint(path.stat())
        except OSError:
            return
        if after == before:
            with self._lock:
                self._verified[path] = (after, sha256)


def content_key(sha256: str) -> str:
    """Where a PDF stored by its content lives, relative to the storage's root."""
    return f"{COPY_DIR}/{sha256}.pdf"


def write_atomically(target: Path, data: bytes) -> None:
    """A reader sees the old file or the whole new one, never a part (rename is atomic)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = temp_file(target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
