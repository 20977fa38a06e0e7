"""The bounded PDF workers themselves: a job over its memory or time limit, or one that kills its
process, ends as PdfTooComplex, the pool replaces the worker, and the next job runs. Real worker
processes, real limits (RLIMIT_AS in the worker, a real kill on timeout)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pymupdf
import pytest

from app.core.errors import BadRequest
from app.pdfs.errors import PdfTooComplex
from app.pdfs.extract import build_index
from app.pdfs.workers import PdfJobFailed, PdfWorkers, WorkerLimits
from tests.fixtures.hostile_pdfs import write_text_bomb_pdf
from tests.fixtures.pdfs import write_text_pdf

# Starts server processes, a browser or other programs: `make test-fast` leaves it out.
pytestmark = pytest.mark.slow


# Jobs live at module level: a worker imports them by name.
def allocate(megabytes: int) -> int:
    block = bytearray(megabytes * 1024 * 1024)
    return len(block)


def sleep_for(seconds: float) -> str:
    time.sleep(seconds)
    return "slept"


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def refuse() -> None:
    raise BadRequest("the job's own reason")


def broken_pdf() -> None:
    pymupdf.open(stream=b"%PDF-1.7 not really", filetype="pdf").load_page(0)


def spin_for(cpu_s: float) -> str:
    end = time.process_time() + cpu_s
    while time.process_time() < end:
        pass
    return "spun"


def pid() -> int:
    return os.getpid()


@pytest.fixture
def workers() -> Iterator[PdfWorkers]:
    pool = PdfWorkers(WorkerLimits(workers=1, memory_mb=512, timeout_s=3))
    yield pool
    pool.close()


def test_a_job_over_the_memory_limit_is_refused_and_the_worker_lives_on(
    workers: PdfWorkers,
) -> None:
    with pytest.raises(PdfTooComplex, match="more than 512 MB"):
        workers.run(allocate, 1024, name="big.pdf")
    assert workers.run(allocate, 16, name="small.pdf") == 16 * 1024 * 1024


def test_a_job_over_the_time_limit_is_killed_and_replaced(workers: PdfWorkers) -> None:
    """The limit is CPU time (a job slowed by a busy machine is not refused: test_budget.py)."""
    before = workers.run(pid, name="x.pdf")
    # Killed, not waited for: the job would spin for 60 s of CPU and answer "spun".
    with pytest.raises(PdfTooComplex, match="more than 3 s of CPU time"):
        workers.run(spin_for, 60, name="slow.pdf")
    after = workers.run(pid, name="x.pdf")
    assert after != before  # the killed worker was replaced
    assert workers.run(sleep_for, 0.01, name="x.pdf") == "slept"


def test_a_worker_that_dies_is_a_clear_refusal(workers: PdfWorkers) -> None:
    with pytest.raises(PdfTooComplex, match="exit code"):
        workers.run(die, name="crash.pdf")
    assert workers.run(sleep_for, 0, name="x.pdf") == "slept"


def test_a_jobs_own_errors_come_back_as_they_are_or_by_name(workers: PdfWorkers) -> None:
    with pytest.raises(BadRequest, match="the job's own reason"):
        workers.run(refuse, name="x.pdf")
    with pytest.raises(PdfJobFailed, match="FzError|RuntimeError|FileDataError"):
        workers.run(broken_pdf, name="x.pdf")


def test_the_text_bomb_is_refused_in_a_worker_without_the_memory_it_asks_for(
    workers: PdfWorkers, tmp_path: Path
) -> None:
    bomb = write_text_bomb_pdf(tmp_path / "bomb.pdf").read_bytes()
    assert len(bomb) < 64_000
    # Refused by its character count, or by the memory limit if MuPDF runs out first.
    with pytest.raises(PdfTooComplex, match="page 1 holds 30030.. characters|more than 512 MB"):
        workers.run(build_index, bomb, name="bomb.pdf")
    ordinary = write_text_pdf(tmp_path / "ok.pdf", ["The ferry runs daily."]).read_bytes()
    assert "ferry" in workers.run(build_index, ordinary, name="ok.pdf").chars


def test_without_limits_jobs_run_inline() -> None:
    assert PdfWorkers(None).run(pid, name="x.pdf") == os.getpid()
