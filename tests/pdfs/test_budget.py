"""PDF work sized to the PDF, not to the clock: a job's budget is CPU time, grown per page for
work on the whole document; a job the clock stops (a busy machine, a stuck worker) is not the
PDF's fault and is not remembered; a batch that stops waiting says what is still pending.

Before this, a 60 s clock limit refused the AMEX 2022 10-K on a busy machine (11 s of CPU, 66 s
by the clock) and then refused it until restart. Nothing here depends on the machine's speed:
budgets are CPU seconds spun in the worker, stalls are a worker stopped or asleep.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from pathlib import Path

import pymupdf
import pytest

from app.core.config import Settings
from app.pdfs import extract, indexing
from app.pdfs.errors import PdfTooComplex, PdfWorkStalled
from app.pdfs.extract import build_index
from app.pdfs.index_cache import IndexCache
from app.pdfs.indexing import IndexBuilding, IndexWait, cached_index, ocr_options
from app.pdfs.ocr import OcrOptions
from app.pdfs.sample import write_sample_pdf
from app.pdfs.workers import PdfWorkers, WorkerLimits, pdf_workers
from tests.fixtures.app import make_settings
from tests.fixtures.hostile_pdfs import write_text_bomb_pdf
from tests.fixtures.pdfs import write_image_only_copy, write_text_pdf

PARAGRAPH = (
    "The ferry between the two harbours runs every day of the year, weather allowing, and its "
    "timetable is set each spring by the harbour board after hearing the island councils."
)


# Jobs live at module level: a worker imports them by name.
def spin(cpu_s: float) -> str:
    """Busy for ``cpu_s`` seconds of this process's CPU time, however long the clock takes."""
    end = time.process_time() + cpu_s
    while time.process_time() < end:
        pass
    return "spun"


def nap(seconds: float) -> str:
    time.sleep(seconds)
    return "slept"


def sleepy_build(*args: object) -> object:
    """The index build, a few seconds late: still running when a batch stops waiting."""
    time.sleep(3)
    return build_index(*args)  # type: ignore[arg-type]


def _settings(tmp_path: Path, **overrides: object) -> Settings:
    return make_settings("sqlite+aiosqlite:///x.db", tmp_path, **overrides)


def _text_pdf(tmp_path: Path, pages: int) -> bytes:
    # About 50 lines a page.
    path = write_text_pdf(tmp_path / "text.pdf", [PARAGRAPH] * (pages * 17))
    return path.read_bytes()


def test_the_cpu_budget_grows_per_page_up_to_the_cap(tmp_path: Path) -> None:
    limits = pdf_workers(
        _settings(
            tmp_path,
            pdf_job_timeout_s=0.01,
            pdf_job_page_s=5,
            pdf_job_max_s=400,
            pdf_job_wall_factor=3,
        )
    ).limits
    assert limits is not None
    assert limits.cpu_budget() == pytest.approx(0.01)
    assert limits.cpu_budget(30) == pytest.approx(150.01)
    assert limits.cpu_budget(10_000) == 400  # the cap
    assert limits.wall_limit(30) == pytest.approx(3 * 150.01 + limits.wall_slack_s)
    # The cap never cuts the base budget.
    assert WorkerLimits(timeout_s=90, max_s=60).cpu_budget(100) == 90


@pytest.mark.slow  # starts PDF worker processes
def test_a_job_over_its_cpu_budget_is_refused_and_pages_raise_the_budget() -> None:
    # A base of 0.01 s (the kernel counts whole seconds: at most about 1 s) and 1 s per page.
    workers = PdfWorkers(WorkerLimits(workers=1, timeout_s=0.01, page_s=1.0))
    try:
        with pytest.raises(PdfTooComplex, match="s of CPU time"):
            workers.run(spin, 3.0, name="dense.pdf")
        # The same work on a 5-page document is within its budget (5.01 s).
        assert workers.run(spin, 3.0, name="long.pdf", pages=5) == "spun"
    finally:
        workers.close()


@pytest.mark.slow  # starts PDF worker processes
def test_a_job_that_sleeps_past_the_clock_is_busy_not_too_complex() -> None:
    workers = PdfWorkers(WorkerLimits(workers=1, timeout_s=1, wall_factor=2, wall_slack_s=0))
    try:
        with pytest.raises(PdfWorkStalled, match="busy"):
            workers.run(nap, 60, name="slow.pdf")
        assert workers.run(nap, 0, name="x.pdf") == "slept"  # the worker was replaced
    finally:
        workers.close()


@pytest.mark.slow  # starts PDF worker processes
def test_a_refusal_the_content_decides_is_still_remembered(tmp_path: Path) -> None:
    data = write_text_bomb_pdf(tmp_path / "bomb.pdf").read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    workers, cache = pdf_workers(_settings(tmp_path)), IndexCache()
    try:
        with pytest.raises(PdfTooComplex):
            cached_index(workers, cache, lambda: data, sha, "bomb.pdf")
    finally:
        workers.close()
    assert "3003" in (cache.refusal(sha) or "")


@pytest.mark.slow  # starts PDF worker processes
def test_a_text_pdf_still_being_indexed_is_pending_its_index_not_ocr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _text_pdf(tmp_path, pages=4)
    sha = hashlib.sha256(data).hexdigest()
    workers = PdfWorkers(WorkerLimits(workers=1))
    cache = IndexCache(ocr=OcrOptions())  # OCR on: the survey finds no scanned page
    monkeypatch.setattr(extract, "build_index", sleepy_build)
    try:
        with pytest.raises(IndexBuilding) as pending:
            cached_index(workers, cache, lambda: data, sha, "text.pdf", IndexWait(0, 0, 60))
        with pymupdf.open(stream=data) as doc:
            pages = doc.page_count
        assert (pending.value.pending.stage, pending.value.pending.pages) == ("text", pages)
        # The build goes on; the next request finds it.
        assert cached_index(workers, cache, lambda: data, sha, "text.pdf").page_count == pages
    finally:
        workers.close()


def test_the_wait_grows_per_page_only_while_a_text_layer_is_read() -> None:
    wait = IndexWait(base_s=10, page_s=0.05, max_s=60)
    assert wait.allowed(indexing.Pending("survey")) == 60  # until it is known what is pending
    assert wait.allowed(indexing.Pending("text", pages=392)) == pytest.approx(29.6)
    assert wait.allowed(indexing.Pending("text", pages=5000)) == 60
    assert wait.allowed(indexing.Pending("ocr", pages=392, scanned=40)) == 10
    assert IndexWait(10).allowed(indexing.Pending("survey")) == 10


def test_a_batch_waits_once_in_all_not_once_per_pdf() -> None:
    """locate_chunks gives each PDF what is left of the batch's one wait: whatever stage a
    second PDF is in, it waits no longer than that (it was up to a minute more per PDF)."""
    wait = IndexWait(base_s=10, page_s=0.05, max_s=60)
    left = wait.within(4)
    for pending in (
        indexing.Pending("survey"),
        indexing.Pending("text", pages=392),
        indexing.Pending("ocr", pages=3, scanned=3),
    ):
        assert left.allowed(pending) <= 4
    spent = wait.within(-1)
    assert spent.allowed(indexing.Pending("survey")) == 0
    assert wait.within(1000) == wait


@pytest.mark.slow  # starts PDF worker processes and Tesseract
@pytest.mark.skipif(shutil.which("tesseract") is None, reason="Tesseract is not installed")
def test_a_scan_being_read_is_pending_ocr_with_its_pages_counted(tmp_path: Path) -> None:
    scan = write_image_only_copy(write_sample_pdf(tmp_path / "s.pdf"), tmp_path / "scan.pdf")
    data = scan.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    ocr = ocr_options(_settings(tmp_path))
    assert ocr is not None
    workers, cache = PdfWorkers(WorkerLimits(workers=1)), IndexCache(ocr=ocr)
    try:
        with pytest.raises(IndexBuilding) as pending:
            cached_index(workers, cache, lambda: data, sha, "scan.pdf", IndexWait(0, 0, 60))
        found = pending.value.pending
        assert found.stage == "ocr"
        assert found.scanned >= 1
        assert found.read < found.scanned
    finally:
        workers.close()
