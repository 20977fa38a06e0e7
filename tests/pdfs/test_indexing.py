"""Index builds the batch stopped waiting for: their outcome is kept for the next request."""

from __future__ import annotations

import hashlib
import shutil
import time
from pathlib import Path

import pytest

from app.pdfs.errors import PdfTooComplex
from app.pdfs.index_cache import IndexCache, IndexPending
from app.pdfs.indexing import cached_index, read_scanned_pages
from app.pdfs.ocr import OcrFailed, OcrOptions, ocr_page
from app.pdfs.sample import write_sample_pdf
from app.pdfs.workers import PdfWorkers, WorkerLimits
from tests.fixtures.hostile_pdfs import write_text_bomb_pdf
from tests.fixtures.pdfs import write_image_only_copy

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
