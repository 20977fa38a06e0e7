"""PDF work on untrusted files, in worker processes that cannot take the service with them.

A PDF is a program: a 31 KB file can ask MuPDF for three million glyphs on one page, and
extracting them grew the service to 7 GB over ten minutes. So every PyMuPDF job the service runs
on a stored or uploaded PDF (the page-tree check, chunking, the text index, page previews) runs
in a pool of worker processes (pebble), each with an address-space limit (``RLIMIT_AS``) and a
CPU budget per job. A job over either fails with MemoryError or is killed; pebble replaces the
worker; the caller gets ``PdfTooComplex`` (422 ``pdf_too_complex``, or the per-citation reason of
the same name). The event loop and the other requests do not notice: at most ``workers`` jobs
run at once, each in its own process.

The budget is CPU time (``RLIMIT_CPU``, set afresh for each job: the kernel stops a worker past
it with SIGXCPU), not the clock: on a busy machine the AMEX 2022 10-K's index took 66 s by the
clock for 11 s of CPU, and a 60 s clock limit refused it as if it were a bomb. A job on the whole
document gets more per page (``WorkerLimits.cpu_budget``), up to a cap. The clock is only a
backstop against a stuck worker (``wall_factor`` times the budget, and some slack): a job that
outlasts it has not used its CPU, so it is ``PdfWorkStalled`` (503 busy), which nobody
remembers.

``PdfWorkers(None)`` runs jobs inline, without limits: for tests and tools on trusted files.
The service and the command line always pass limits.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import resource
import signal
import threading
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, TypeVar

from pebble import ProcessExpired, ProcessPool

from app.alignment.index import PageTooDense
from app.core.config import Settings
from app.core.errors import BadRequest
from app.pdfs.errors import PdfTooComplex, PdfWorkStalled

log = logging.getLogger(__name__)
T = TypeVar("T")
# Each worker is forked with PyMuPDF loaded (app.pdfs.extract); the service does not load it.
_PRELOAD = ["app.pdfs.workers", "app.pdfs.chunking", "app.pdfs.extract"]


class PdfJobFailed(RuntimeError):
    """A job's own error, carried back by name and message: MuPDF's exception classes do not
    survive pickling, and the caller only needs to report them."""


@dataclass(frozen=True)
class WorkerLimits:
    workers: int = 2
    memory_mb: int = 2048
    # CPU seconds of one job, and more per page for a job on the whole document, at most
    # max_s; the clock stops a job only at wall_factor times its budget.
    timeout_s: float = 60.0
    page_s: float = 0.5
    max_s: float = 600.0
    wall_factor: float = 10.0
    # Added to the clock's backstop: on a loaded machine a job of a one-second budget may wait
    # several seconds for a core, and that is no reason to call it stuck.
    wall_slack_s: float = 30.0
    # A worker is replaced after this many jobs: whatever MuPDF's store kept is given back.
    jobs_per_worker: int = 200

    def cpu_budget(self, pages: int = 0) -> float:
        """The CPU seconds a job on ``pages`` pages may use (0: a job on one page or none)."""
        return max(self.timeout_s, min(self.max_s, self.timeout_s + self.page_s * max(0, pages)))

    def wall_limit(self, pages: int = 0) -> float:
        return self.cpu_budget(pages) * self.wall_factor + self.wall_slack_s


def _start_worker(memory_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    # A worker stopped by SIGXCPU would otherwise dump a core of up to memory_mb.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _limit_cpu(seconds: float | None) -> None:
    """In the worker: this job may use ``seconds`` more CPU (None: no limit). Only the soft limit
    moves (the hard one can never be raised again), relative to what the worker has used."""
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = hard
    if seconds is not None:
        used = resource.getrusage(resource.RUSAGE_SELF)
        soft = math.ceil(used.ru_utime + used.ru_stime + seconds)
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _run_job(function: Callable[..., T], args: tuple[Any, ...], cpu_s: float | None = None) -> T:
    """In the worker: the job within its CPU budget, with its errors made safe to send back."""
    _limit_cpu(cpu_s)
    try:
        return function(*args)
    except (MemoryError, PageTooDense, BadRequest):
        raise
    except Exception as exc:
        message = str(exc)
        # MuPDF's own allocation failures ("code=2: realloc (49577184 bytes) failed").
        if ("alloc" in message and "failed" in message) or "out of memory" in message.lower():
            raise MemoryError(message) from None
        raise PdfJobFailed(f"{type(exc).__name__}: {message}") from None
    finally:
        _limit_cpu(None)


class PdfWorkers:
    def __init__(self, limits: WorkerLimits | None) -> None:
        self.limits = limits
        self._pool: ProcessPool | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _started(self) -> ProcessPool:
        assert self.limits is not None
        with self._lock:
            if self._closed:
                raise RuntimeError("the PDF workers are shut down")
            if self._pool is None:
                # forkserver: a worker is forked from a clean server process, not from this
                # one with its threads, event loop and database connections; the server
                # imports PyMuPDF once, so a replaced worker is ready in milliseconds.
                context = multiprocessing.get_context("forkserver")
                context.set_forkserver_preload(_PRELOAD)
                self._pool = ProcessPool(
                    max_workers=self.limits.workers,
                    max_tasks=self.limits.jobs_per_worker,
                    initializer=_start_worker,
                    initargs=(self.limits.memory_mb * 1024 * 1024,),
                    context=context,
                )
            return self._pool

    def run(self, function: Callable[..., T], *args: Any, name: str, pages: int = 0) -> T:
        """Blocking (call it from a thread): ``function(*args)`` within the limits, its CPU
        budget sized for ``pages`` (a job on the whole document; 0 for one page). ``name`` (a
        file name, never a server path) is what an error message shows. Raises PdfTooComplex
        over a limit, PdfWorkStalled past the clock's backstop; the job's own BadRequest as it
        is; PdfJobFailed for any other error of the job."""
        if self.limits is None:
            return function(*args)
        budget = self.limits.cpu_budget(pages)
        future = self._started().schedule(
            _run_job, args=(function, args, budget), timeout=self.limits.wall_limit(pages)
        )
        try:
            result: T = future.result()
            return result
        except FutureTimeout:
            # Its CPU budget not used up (the kernel would have stopped it): a busy machine or a
            # stuck worker, not the PDF.
            log.warning(
                "a PDF job on %s was stopped after %g s by the clock (CPU budget %g s)",
                name,
                self.limits.wall_limit(pages),
                budget,
            )
            raise PdfWorkStalled(
                f"{name} could not be processed in time because the PDF workers are busy; "
                "try again shortly"
            ) from None
        except PageTooDense as exc:
            raise PdfTooComplex(f"{name} cannot be processed by this service: {exc}") from None
        except MemoryError:
            raise PdfTooComplex(
                f"{name} needs more than {self.limits.memory_mb} MB of memory to process "
                "(HIGHLIGHT_PDF_WORKER_MEMORY_MB); it cannot be processed by this service"
            ) from None
        except ProcessExpired as exc:
            if exc.exitcode == -signal.SIGXCPU:
                raise PdfTooComplex(
                    f"{name} needs more than {budget:g} s of CPU time "
                    f"({_budget_settings(pages)}); it cannot be processed by this service"
                ) from None
            # Killed from outside (the kernel's OOM killer) or a crash inside MuPDF.
            log.warning("a PDF worker died on %s (exit code %s)", name, exc.exitcode)
            raise PdfTooComplex(
                f"{name} made the PDF worker fail (exit code {exc.exitcode}); it cannot be "
                "processed by this service"
            ) from None

    def close(self) -> None:
        """Stop the workers at once (jobs in flight are abandoned: their callers are gone)."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.stop()  # type: ignore[no-untyped-call]
            pool.join(timeout=10)


def pdf_workers(settings: Settings) -> PdfWorkers:
    """The service's and the command line's workers, with the configured limits."""
    return PdfWorkers(
        WorkerLimits(
            workers=settings.pdf_workers,
            memory_mb=settings.pdf_worker_memory_mb,
            timeout_s=settings.pdf_job_timeout_s,
            page_s=settings.pdf_job_page_s,
            max_s=settings.pdf_job_max_s,
            wall_factor=settings.pdf_job_wall_factor,
        )
    )


def _budget_settings(pages: int) -> str:
    if pages <= 0:
        return "HIGHLIGHT_PDF_JOB_TIMEOUT_S"
    return (
        f"{pages} pages; HIGHLIGHT_PDF_JOB_TIMEOUT_S, HIGHLIGHT_PDF_JOB_PAGE_S, "
        "HIGHLIGHT_PDF_JOB_MAX_S"
    )
