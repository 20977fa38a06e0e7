"""Building a PDF's text index in the bounded PDF workers, scanned pages read by OCR first.

Each scanned page is its own worker job (``ocr.ocr_page``), so a page Tesseract cannot finish
within a job's time costs that page, not the document, and pages are read on every worker at
once. Pages past the document's budget (``HIGHLIGHT_OCR_MAX_PAGES``) are left without text: their
citations keep the reason ``no_text_layer``. Blocking: call it from a thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import PurePosixPath

from app.alignment.index import DocumentIndex
from app.core import metrics
from app.core.config import Settings
from app.core.errors import AppError
from app.pdfs.errors import PdfTooComplex, UnreadablePdf
from app.pdfs.index_cache import IndexCache
from app.pdfs.ocr import (
    OcrFailed,
    OcrOptions,
    OcrPage,
    ocr_page,
    pages_to_ocr,
    tesseract_languages,
)
from app.pdfs.storage import PdfStorage
from app.pdfs.workers import PdfJobFailed, PdfWorkers

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
        # Within a worker's job time, so Tesseract is stopped before pebble kills the worker.
        page_timeout_s=max(1.0, settings.pdf_job_timeout_s - 5),
    )


def read_scanned_pages(
    workers: PdfWorkers, data: bytes, name: str, ocr: OcrOptions | None
) -> dict[int, OcrPage]:
    """The pages of ``data`` that OCR reads, read (within the page budget)."""
    if ocr is None or ocr.mode == "off":
        return {}
    wanted = workers.run(pages_to_ocr, data, ocr.mode, name=name)
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

    def read(number: int) -> OcrPage | None:
        try:
            page = workers.run(ocr_page, data, number, ocr, name=name)
        except (PdfTooComplex, PdfJobFailed, OcrFailed) as exc:
            metrics.OCR_PAGES.labels("failed").inc()
            log.warning("%s: page %d could not be read by OCR (%s)", name, number, exc)
            return None
        metrics.OCR_PAGES.labels("ok").inc()
        metrics.OCR_PAGE_SECONDS.observe(page.seconds)
        return page

    started = time.perf_counter()
    parallel = workers.limits.workers if workers.limits is not None else 1
    with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="ocr") as pool:
        pages = [page for page in pool.map(read, chosen) if page is not None]
    seconds = time.perf_counter() - started
    if pages:
        log.info(
            "%s: %d scanned pages read by OCR in %.1f s (%.2f s per page in a worker)",
            name,
            len(pages),
            seconds,
            sum(p.seconds for p in pages) / len(pages),
        )
    return {page.page: page for page in pages}


def build_in_workers(
    workers: PdfWorkers, data: bytes, name: str, ocr: OcrOptions | None
) -> DocumentIndex:
    """The text index of ``data``: scanned pages through OCR, then the index itself."""
    from app.pdfs.extract import build_index  # PyMuPDF: imported by the workers, not here

    scanned = read_scanned_pages(workers, data, name, ocr)
    return workers.run(build_index, data, scanned, name=name)


def cached_index(
    workers: PdfWorkers,
    cache: IndexCache,
    read: Callable[[], bytes],
    sha256: str,
    name: str,
    wait_s: float | None = None,
) -> DocumentIndex:
    """The index of the PDF whose content hashes to ``sha256`` (``read`` gives its bytes on a
    miss), built in ``workers`` with the cache's OCR settings. A PDF over the workers' limits
    is remembered as refused (PdfTooComplex at once next time). ``wait_s``: see
    ``IndexCache.get_within``; None waits for the build."""
    refused = cache.refusal(sha256)
    if refused is not None:
        raise PdfTooComplex(refused)

    def build() -> DocumentIndex:
        # Called on a cache miss only: this counts and times real builds, not loads.
        started = time.perf_counter()
        try:
            index = build_in_workers(workers, read(), name, cache.ocr)
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
    return cache.get_within(sha256, build, wait_s)


def open_index(
    storage: PdfStorage,
    cache: IndexCache,
    source_path: str,
    sha256: str,
    wait_s: float | None = None,
) -> DocumentIndex:
    """Blocking: the text index of a stored document's PDF. The file is checked against the
    ingested hash on every call, cached index or not (raises PdfMissing or PdfChanged).
    ``wait_s``: how long a build may keep the caller (IndexPending past it, the build going on);
    None waits for it (ingest, warm-up)."""
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
