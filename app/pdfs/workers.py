"""PDF work on untrusted files, in worker processes that cannot take the service with them.

A PDF is a program: a 31 KB file can ask MuPDF for three million glyphs on one page, and
extracting them grew the service to 7 GB over ten minutes. So every PyMuPDF job the service runs
on a stored or uploaded PDF (the page-tree check, chunking, the text index, page previews) runs
in a pool of worker processes (pebble), each with an address-space limit (``RLIMIT_AS``) and a
time limit per job. A job over either fails with MemoryError or is killed; pebble replaces the
worker; the caller gets ``PdfTooComplex`` (422 ``pdf_too_complex``, or the per-citation reason of
the same name). The event loop and the other requests do not notice: at most ``workers`` jobs
run at once, each in its own process.

``PdfWorkers(None)`` runs jobs inline, without limits: for tests and tools on trusted files.
The service and the command line always pass limits.
"""

from __future__ import annotations

import logging
import multiprocessing
import resource
import threading
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, TypeVar

from pebble import ProcessExpired, ProcessPool

from app.alignment.index import PageTooDense
from app.core.config import Settings
from app.core.errors import BadRequest
from app.pdfs.errors import PdfTooComplex

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
    timeout_s: float = 60.0
    # A worker is replaced after this many jobs: whatever MuPDF's store kept is given back.
    jobs_per_worker: int = 200


def _limit_memory(memory_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))


def _run_job(function: Callable[..., T], args: tuple[Any, ...]) -> T:
    """In the worker: the job, with its errors made safe to send back."""
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
                    initializer=_limit_memory,
                    initargs=(self.limits.memory_mb * 1024 * 1024,),
                    context=context,
                )
            return self._pool

    def run(self, function: Callable[..., T], *args: Any, name: str) -> T:
        """Blocking (call it from a thread): ``function(*args)`` within the limits. ``name``
        (a file name, never a server path) is what an error message shows. Raises
        PdfTooComplex over a limit; the job's own BadRequest as it is; PdfJobFailed for any
        other error of the job."""
        if self.limits is None:
            return function(*args)
        future = self._started().schedule(
            _run_job, args=(function, args), timeout=self.limits.timeout_s
        )
        try:
            result: T = future.result()
            return result
        except FutureTimeout:
            raise PdfTooComplex(
                f"{name} needs more than {self.limits.timeout_s:g} s of PDF work "
                "(HIGHLIGHT_PDF_JOB_TIMEOUT_S); it cannot be processed by this service"
            ) from None
        except PageTooDense as exc:
            raise PdfTooComplex(f"{name} cannot be processed by this service: {exc}") from None
        except MemoryError:
            raise PdfTooComplex(
                f"{name} needs more than {self.limits.memory_mb} MB of memory to process "
                "(HIGHLIGHT_PDF_WORKER_MEMORY_MB); it cannot be processed by this service"
            ) from None
        except ProcessExpired as exc:
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
        )
    )
