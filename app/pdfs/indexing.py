"""Building a PDF's text index in the bounded PDF workers, scanned pages read by OCR first.

The page count is read first (a job of milliseconds), so the jobs on the whole document get a CPU
budget sized to it (``WorkerLimits.cpu_budget``). Each scanned page is its own worker job
(``ocr.ocr_page``), so a page Tesseract cannot finish within a job's time costs that page, not
the document, and pages are read on every worker at once. Pages past the document's budget
(``HIGHLIGHT_OCR_MAX_PAGES``) are left without text: their citations keep the reason
``no_text_layer``. Blocking: call it from a thread.

A build that goes on after its batch stopped waiting says how far it is (``BuildProgress``): the
page count, and while scanned pages are read, how many of them are done, so the batch's
citations can say which is pending: the text layer being read, or OCR. Only a refusal that the
content decides (``PdfTooComplex``: memory, CPU time, a page too dense) is remembered; a job
stopped by the clock on a busy machine (``PdfWorkStalled``) is tried again by the next request.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from app.alignment.index import DocumentIndex
from app.core import metrics
from app.core.config import Settings
from app.core.errors import AppError
from app.pdfs.errors import PdfTooComplex, UnreadablePdf
from app.pdfs.index_cache import IndexCache, IndexPending
from app.pdfs.ocr import (
    OcrFailed,
    OcrOptions,
    OcrPage,
    ocr_page,
    pages_to_ocr,
    tesseract_languages,
)
from app.pdfs.storage import PdfStorage
from app.pdfs.workers import PdfJobFailed, PdfWorkers, WorkerLimits

log = logging.getLogger(__name__)


OCR_INSTALL = "apt-get install tesseract-ocr tesseract-ocr-<lang> (docs/scanned-pdfs.md)"


def ocr_options(settings: Settings, command: bool = False) -> OcrOptions | None:
    """What OCR this process can do, said once at start: None when it is off or Tesseract is not
    installed (scanned pages then keep ``no_text_layer``, as before). Configured languages that
    are not installed are left out, with a warning; none left is OCR off. ``command``: for a
    one-shot command (ingest), a missing Tesseract is only worth a line at INFO: an ingest it
    matters to is refused with the reason ("... and OCR is off")."""
    if settings.ocr_mode == "off" or settings.ocr_max_pages == 0:
        log.info("OCR is off (HIGHLIGHT_OCR_MODE)")
        return None
    installed = tesseract_languages()
    if installed is None:
        log.log(
            logging.INFO if command else logging.WARNING,
            "OCR is off: Tesseract is not installed, so scanned pages keep no_text_layer; "
            "install it with %s",
            OCR_INSTALL,
        )
        return None
    wanted = settings.ocr_languages.split("+")
    missing = [language for language in wanted if language not in installed]
    usable = [language for language in wanted if language in installed]
    if missing:
        log.warning(
            "OCR languages %s (HIGHLIGHT_OCR_LANGUAGES) are not installed and are left out; "
            "install them with %s",
            ", ".join(missing),
            OCR_INSTALL,
        )
    if not usable:
        log.warning("OCR is off: none of its languages is installed")
        return None
    return OcrOptions(
        languages="+".join(usable),
        dpi=settings.ocr_dpi,
        mode=settings.ocr_mode,
        max_pages=settings.ocr_max_pages,
        # Tesseract's CPU is capped by the worker's RLIMIT_CPU (it inherits it); its clock only
        # stops a stuck run, just before the worker's own backstop. A page slowed by a busy
        # machine then stalls the build (retried, not cached) instead of being left out of it.
        page_timeout_s=max(1.0, _job_limits(settings).wall_limit() - 5),
    )


def _job_limits(settings: Settings) -> WorkerLimits:
    return WorkerLimits(
        timeout_s=settings.pdf_job_timeout_s, wall_factor=settings.pdf_job_wall_factor
    )


Stage = Literal["survey", "ocr", "text"]


@dataclass(frozen=True)
class Pending:
    """What a build that is not done yet is doing: ``survey`` (reading the page count and which
    pages are scanned, or not started), ``ocr`` (``read`` of ``scanned`` pages read) or ``text``
    (the text layer of ``pages`` pages). ``pages`` is None until the page count is read."""

    stage: Stage = "survey"
    pages: int | None = None
    scanned: int = 0
    read: int = 0


@dataclass
class BuildProgress:
    """One index build's progress, updated by the build, read by the batches waiting for it."""

    stage: Stage = "survey"
    pages: int | None = None
    scanned: int = 0
    read: int = 0
    users: int = 0  # builds and waiters holding it on the board
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def restart(self) -> None:
        with self.lock:
            self.stage, self.pages, self.scanned, self.read = "survey", None, 0, 0

    def page_read(self) -> None:
        with self.lock:
            self.read += 1

    def now(self) -> Pending:
        with self.lock:
            return Pending(self.stage, self.pages, self.scanned, self.read)


class _Board:
    """The progress of this process's builds, by cache and content hash, kept while a build or
    a batch waiting for it holds it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._builds: dict[tuple[int, str], BuildProgress] = {}

    @contextmanager
    def holding(self, cache: IndexCache, sha256: str) -> Iterator[BuildProgress]:
        key = (id(cache), sha256)
        with self._lock:
            progress = self._builds.setdefault(key, BuildProgress())
            progress.users += 1
        try:
            yield progress
        finally:
            with self._lock:
                progress.users -= 1
                if progress.users == 0 and self._builds.get(key) is progress:
                    del self._builds[key]


_BOARD = _Board()


class IndexBuilding(IndexPending):
    """``IndexPending`` that says what is pending (``pending``)."""

    def __init__(self, sha256: str, pending: Pending) -> None:
        super().__init__(sha256)
        self.pending = pending


@dataclass(frozen=True)
class IndexWait:
    """How long a batch waits for an index being built: ``base_s``; while a text layer is read,
    ``page_s`` more per page; while it is not known yet what is pending (the page count and the
    scanned pages are being read), until it is; never past ``max_s`` (or ``base_s``)."""

    base_s: float
    page_s: float = 0.0
    max_s: float = 0.0

    def allowed(self, pending: Pending) -> float:
        cap = max(self.base_s, self.max_s)
        if pending.stage == "survey":
            return cap
        if pending.stage == "text" and pending.pages is not None:
            return min(cap, self.base_s + self.page_s * pending.pages)
        return self.base_s

    def within(self, seconds: float) -> IndexWait:
        """This wait, never past ``seconds``: what is left of a batch's one wait, so a batch
        citing several unbuilt PDFs waits at most once in all, not once per PDF."""
        left = max(0.0, seconds)
        return IndexWait(min(self.base_s, left), self.page_s, min(self.max_s, left))


# While it is not known what a build is doing, a waiting batch looks again this often.
_POLL_S = 0.1


def read_scanned_pages(
    workers: PdfWorkers,
    data: bytes,
    name: str,
    ocr: OcrOptions | None,
    pages: int = 0,
    progress: BuildProgress | None = None,
) -> dict[int, OcrPage]:
    """The pages of ``data`` that OCR reads, read (within the page budget). ``pages``: the
    document's page count (sizes the CPU budget of finding the scanned pages)."""
    if ocr is None or ocr.mode == "off":
        return {}
    wanted = workers.run(pages_to_ocr, data, ocr.mode, name=name, pages=pages)
    if not wanted:
        return {}
    chosen, skipped = wanted[: ocr.max_pages], len(wanted) - ocr.max_pages
    if skipped > 0:
        metrics.OCR_PAGES.labels("over_budget").inc(skipped)
        log.warning(
            "%s: %d scanned pages past the OCR budget of %d (HIGHLIGHT_OCR_MAX_PAGES) are left "
            "without text",
            name,
            skipped,
            ocr.max_pages,
        )

    if progress is not None:
        with progress.lock:
            progress.stage, progress.scanned = "ocr", len(chosen)

    def read(number: int) -> OcrPage | None:
        try:
            page = workers.run(ocr_page, data, number, ocr, name=name)
        except (PdfTooComplex, PdfJobFailed, OcrFailed) as exc:
            metrics.OCR_PAGES.labels("failed").inc()
            log.warning("%s: page %d could not be read by OCR (%s)", name, number, exc)
            return None
        finally:
            if progress is not None:
                progress.page_read()
        metrics.OCR_PAGES.labels("ok").inc()
        metrics.OCR_PAGE_SECONDS.observe(page.seconds)
        return page

    started = time.perf_counter()
    parallel = workers.limits.workers if workers.limits is not None else 1
    with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="ocr") as pool:
        done = [page for page in pool.map(read, chosen) if page is not None]
    seconds = time.perf_counter() - started
    if done:
        log.info(
            "%s: %d scanned pages read by OCR in %.1f s (%.2f s per page in a worker)",
            name,
            len(done),
            seconds,
            sum(p.seconds for p in done) / len(done),
        )
    return {page.page: page for page in done}


def build_in_workers(
    workers: PdfWorkers,
    data: bytes,
    name: str,
    ocr: OcrOptions | None,
    progress: BuildProgress | None = None,
) -> DocumentIndex:
    """The text index of ``data``: its page count, scanned pages through OCR, then the index
    itself, each job's CPU budget sized to the page count."""
    from app.pdfs import extract  # PyMuPDF: imported by the workers, not by the app

    progress = progress if progress is not None else BuildProgress()
    pages = workers.run(extract.page_count, data, name=name)
    with progress.lock:
        progress.pages = pages
    scanned = read_scanned_pages(workers, data, name, ocr, pages, progress)
    with progress.lock:
        progress.stage = "text"
    return workers.run(extract.build_index, data, scanned, name=name, pages=pages)


def cached_index(
    workers: PdfWorkers,
    cache: IndexCache,
    read: Callable[[], bytes],
    sha256: str,
    name: str,
    wait_s: float | IndexWait | None = None,
) -> DocumentIndex:
    """The index of the PDF whose content hashes to ``sha256`` (``read`` gives its bytes on a
    miss), built in ``workers`` with the cache's OCR settings. A PDF over the workers' limits
    is remembered as refused (PdfTooComplex at once next time); a job the clock stopped
    (PdfWorkStalled) is not. ``wait_s``: how long to wait for a build (``IndexWait``; a number
    is a fixed wait), past it IndexBuilding saying what is pending; None waits for the build."""
    refused = cache.refusal(sha256)
    if refused is not None:
        raise PdfTooComplex(refused)

    def build() -> DocumentIndex:
        # Called on a cache miss only: this counts and times real builds, not loads.
        refused = cache.refusal(sha256)  # found by a build that ended while this one queued
        if refused is not None:
            raise PdfTooComplex(refused)
        started = time.perf_counter()
        try:
            with _BOARD.holding(cache, sha256) as progress:
                progress.restart()
                index = build_in_workers(workers, read(), name, cache.ocr, progress)
        except PdfTooComplex as exc:
            # Here, not in the caller: a build a batch stopped waiting for ends in the
            # background, and its refusal must still be remembered.
            cache.refuse(sha256, exc.message)
            metrics.INDEX_BUILDS.labels("failed").inc()
            raise
        except BaseException:
            metrics.INDEX_BUILDS.labels("failed").inc()
            raise
        metrics.INDEX_BUILDS.labels("ok").inc()
        metrics.INDEX_BUILD_SECONDS.observe(time.perf_counter() - started)
        return index

    if wait_s is None:
        return cache.get(sha256, build)
    wait = wait_s if isinstance(wait_s, IndexWait) else IndexWait(wait_s)
    with _BOARD.holding(cache, sha256) as progress:
        return _waited(cache, sha256, build, wait, progress)


def _waited(
    cache: IndexCache,
    sha256: str,
    build: Callable[[], DocumentIndex],
    wait: IndexWait,
    progress: BuildProgress,
) -> DocumentIndex:
    """``cache.get_within`` for as long as ``wait`` allows what the build is doing."""
    started = time.monotonic()
    while True:
        pending = progress.now()
        left = started + wait.allowed(pending) - time.monotonic()
        if pending.stage == "survey":
            left = min(left, _POLL_S)
        try:
            return cache.get_within(sha256, build, max(0.0, left))
        except IndexPending:
            pending = progress.now()
            if time.monotonic() >= started + wait.allowed(pending):
                raise IndexBuilding(sha256, pending) from None


def open_index(
    storage: PdfStorage,
    cache: IndexCache,
    source_path: str,
    sha256: str,
    wait_s: float | IndexWait | None = None,
) -> DocumentIndex:
    """Blocking: the text index of a stored document's PDF. The file is checked against the
    ingested hash on every call, cached index or not (raises PdfMissing or PdfChanged).
    ``wait_s``: how long a build may keep the caller (IndexBuilding past it, the build going
    on); None waits for it (ingest, warm-up)."""
    storage.verify(source_path, sha256)
    name = PurePosixPath(source_path).name
    return cached_index(
        storage.workers,
        cache,
        lambda: storage.read_verified(source_path, sha256),
        sha256,
        name,
        wait_s,
    )


def index_or_refuse(
    storage: PdfStorage, cache: IndexCache, source_path: str, sha256: str
) -> DocumentIndex:
    """Blocking: ``open_index`` for ingest, where a PDF that cannot be indexed is refused with a
    reason (BadRequest) rather than stored and never highlightable."""
    try:
        return open_index(storage, cache, source_path, sha256)
    except AppError:
        raise
    except Exception as exc:
        log.warning("cannot index %s", source_path, exc_info=True)
        raise UnreadablePdf(
            f"{source_path.rsplit('/', 1)[-1]} cannot be indexed ({type(exc).__name__}: {exc})"
        ) from exc
