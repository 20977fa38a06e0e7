"""Index builds the batch stopped waiting for: their outcome is kept for the next request, when
the content decided it; a build the clock stopped on a busy machine is tried again."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from app.core.config import Settings
from app.core.errors import AppError
from app.pdfs import extract
from app.pdfs.errors import PdfTooComplex
from app.pdfs.extract import build_index
from app.pdfs.index_cache import IndexCache, IndexPending
from app.pdfs.indexing import cached_index, read_scanned_pages
from app.pdfs.ocr import OcrFailed, OcrOptions, ocr_page
from app.pdfs.sample import write_sample_pdf
from app.pdfs.workers import PdfWorkers, WorkerLimits, pdf_workers
from tests.fixtures.app import make_settings
from tests.fixtures.hostile_pdfs import write_text_bomb_pdf
from tests.fixtures.pdfs import write_image_only_copy, write_text_pdf

pytestmark = pytest.mark.slow  # starts PDF worker processes


def test_a_refusal_found_after_the_batch_stopped_waiting_is_remembered(tmp_path: Path) -> None:
    data = write_text_bomb_pdf(tmp_path / "bomb.pdf").read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    workers, cache = PdfWorkers(WorkerLimits(workers=1, timeout_s=30)), IndexCache()
    try:
        with pytest.raises(IndexPending):
            cached_index(workers, cache, lambda: data, sha, "bomb.pdf", wait_s=0)
        deadline = time.monotonic() + 60
        while cache.refusal(sha) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "cannot be processed" in (cache.refusal(sha) or "")

        def read_again() -> bytes:
            raise AssertionError("a second build read the PDF")

        # Refused at once: a second build would read the PDF (and, not awaited with wait_s=0,
        # answer IndexPending); no clock involved, so a busy machine cannot fail it.
        with pytest.raises(PdfTooComplex):
            cached_index(workers, cache, read_again, sha, "bomb.pdf", wait_s=0)
    finally:
        workers.close()


def stopped_build(*args: object) -> object:
    """The index build in a worker that stops itself first (SIGSTOP): a stall that uses no CPU,
    as a worker starved by a busy machine does. At module level: a worker imports it by name."""
    os.kill(os.getpid(), signal.SIGSTOP)
    return build_index(*args)  # type: ignore[arg-type]


def _settings(tmp_path: Path, **overrides: object) -> Settings:
    return make_settings("sqlite+aiosqlite:///x.db", tmp_path, **overrides)


def _text_pdf(tmp_path: Path, pages: int) -> bytes:
    sentence = "The ferry between the two harbours runs every day of the year, weather allowing."
    # Five of these paragraphs fill about a page.
    paragraph = " ".join([sentence] * 10)
    return write_text_pdf(tmp_path / "text.pdf", [paragraph] * (5 * pages)).read_bytes()


def test_a_build_stopped_by_the_clock_is_not_remembered_and_the_next_request_builds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the service's own settings: a worker that stops mid-build uses no CPU and runs into
    the clock, as one starved by a busy machine does. That says nothing about the PDF: it is not
    remembered as refused, and the same PDF asked again in the same process is indexed. (It was
    refused as pdf_too_complex and then refused at once until restart.)"""
    data = _text_pdf(tmp_path, pages=3)
    sha = hashlib.sha256(data).hexdigest()
    settings = _settings(tmp_path, pdf_job_timeout_s=1, pdf_job_page_s=0, pdf_job_wall_factor=1)
    workers, cache = pdf_workers(settings), IndexCache()
    try:
        monkeypatch.setattr(extract, "build_index", stopped_build)
        with pytest.raises(AppError) as stopped:
            cached_index(workers, cache, lambda: data, sha, "text.pdf")
        assert cache.refusal(sha) is None
        assert (stopped.value.status_code, stopped.value.code) == (503, "busy")
        monkeypatch.setattr(extract, "build_index", build_index)
        index = cached_index(workers, cache, lambda: data, sha, "text.pdf")
    finally:
        workers.close()
    assert index.page_count >= 3
    assert "ferry" in index.chars


def test_a_build_longer_than_the_base_budget_is_within_its_page_allowance(
    tmp_path: Path,
) -> None:
    """The job limit the service computes for a PDF: its base (0.01 s) is less than any build
    takes; the allowance of its pages (5 s each) carries it. (The fixed limit refused it.)"""
    data = _text_pdf(tmp_path, pages=20)
    sha = hashlib.sha256(data).hexdigest()
    settings = _settings(tmp_path, pdf_job_timeout_s=0.01, pdf_job_page_s=5)
    workers, cache = pdf_workers(settings), IndexCache()
    try:
        index = cached_index(workers, cache, lambda: data, sha, "text.pdf")
    finally:
        workers.close()
    assert index.page_count >= 20
    assert cache.refusal(sha) is None
    assert workers.limits is not None
    assert workers.limits.cpu_budget(index.page_count) == pytest.approx(0.01 + 5 * index.page_count)


needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None, reason="Tesseract is not installed (apt-get install …)"
)


@needs_tesseract
def test_a_page_tesseract_cannot_finish_in_time_costs_that_page_only(tmp_path: Path) -> None:
    scan = write_image_only_copy(write_sample_pdf(tmp_path / "s.pdf"), tmp_path / "scan.pdf")
    data = scan.read_bytes()
    with pytest.raises(OcrFailed, match="took more than"):
        ocr_page(data, 1, OcrOptions(page_timeout_s=0.001))
    pages = read_scanned_pages(PdfWorkers(None), data, "scan.pdf", OcrOptions(page_timeout_s=0.001))
    assert pages == {}  # every page failed alone; the document is still indexed, without them


@needs_tesseract
def test_pages_past_the_ocr_budget_are_left_unread(tmp_path: Path) -> None:
    scan = write_image_only_copy(write_sample_pdf(tmp_path / "s.pdf"), tmp_path / "scan.pdf")
    pages = read_scanned_pages(
        PdfWorkers(None), scan.read_bytes(), "scan.pdf", OcrOptions(max_pages=1)
    )
    assert list(pages) == [1]
