"""Every Prometheus metric of the service, defined once, and the text /metrics serves.

Labels are small closed sets, so no request can add series: route templates, never raw paths
(ids would make one series per document), known HTTP methods or ``_OTHER`` (a client may send
any token as a method; api/middleware.py), status codes, and the service's own enums. With
``PROMETHEUS_MULTIPROC_DIR`` set before this module is first imported (``serve --workers N``
sets it for its workers), each process writes its values to files there and a scrape sums them
(prometheus_client's multiprocess mode); gauges say how (``multiprocess_mode``).

The list is documented in docs/operating.md; a metric added here belongs there too.
"""

from __future__ import annotations

import glob
import os
import re

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# No ``*_created`` series: Prometheus does not need them, and they double the scrape.
disable_created_metrics()  # type: ignore[no-untyped-call]
CONTENT_TYPE = CONTENT_TYPE_LATEST
# Requests take milliseconds (a cached batch) to the batch deadline (30 s by default).
_REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_LLM_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120)
_BUILD_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60)

HTTP_REQUESTS = Counter(
    "highlight_http_requests",
    "HTTP requests answered, by route template, method (_OTHER when unknown) and status code.",
    ["route", "method", "status"],
)
HTTP_DURATION = Histogram(
    "highlight_http_request_duration_seconds",
    "Time from a request's arrival to the end of its response (a stream's last event).",
    ["route", "method"],
    buckets=_REQUEST_BUCKETS,
)
CITATIONS = Counter(
    "highlight_citations",
    "Citations answered by batches and streams (final answers), by status and reason "
    '(reason "none" when highlighted by the LLM).',
    ["status", "reason"],
)
BATCHES = Counter(
    "highlight_batches",
    "Batches answered (batch and stream routes), by how sentences were chosen and whether the "
    "result cache answered.",
    ["method", "cache"],
)
DEADLINE_HITS = Counter(
    "highlight_batch_deadline_hits",
    "Batches whose LLM call was abandoned at the batch deadline (answered lexically).",
)
LLM_CALLS = Counter(
    "highlight_llm_calls",
    "Structured-output requests to the LLM, one per tier tried, by tier and outcome (ok, "
    "unsupported, invalid_output, truncated, rejected, unavailable, cancelled).",
    ["tier", "outcome"],
)
LLM_DURATION = Histogram(
    "highlight_llm_call_duration_seconds",
    "Time of one tier's request to the LLM, retries included, whatever its outcome.",
    ["tier"],
    buckets=_LLM_BUCKETS,
)
LLM_RETRIES = Counter(
    "highlight_llm_retries",
    "LLM requests sent again after a connection error, a timeout, a 429 or a 5xx.",
    ["error"],
)
LLM_DOWNGRADES = Counter(
    "highlight_llm_tier_downgrades",
    "Moves from one structured-output tier to the next; remembered=true when the tier is "
    "skipped by later calls too (the server does not support it).",
    ["from_tier", "remembered"],
)
LLM_TOKENS = Counter(
    "highlight_llm_tokens",
    "Tokens the LLM server reported in its replies' usage, by tier and kind (prompt, completion).",
    ["tier", "kind"],
)
LLM_IN_FLIGHT = Gauge(
    "highlight_llm_in_flight",
    "LLM calls in flight now (summed over this replica's worker processes).",
    multiprocess_mode="livesum",
)
LLM_QUEUED = Counter(
    "highlight_llm_queued",
    "Batches that had to wait for an LLM slot (HIGHLIGHT_LLM_MAX_IN_FLIGHT calls were in flight).",
)
LLM_REFUSED = Counter(
    "highlight_llm_refused",
    "Batches that got no LLM slot in time and answered lexically with reason llm_busy.",
)
INDEX_BUILDS = Counter(
    "highlight_index_builds",
    "PDF text indexes built (not loaded from a cache), by outcome (ok, failed).",
    ["outcome"],
)
INDEX_BUILD_SECONDS = Histogram(
    "highlight_index_build_duration_seconds",
    "Time to build one PDF's text index (in a PDF worker process), for builds that succeeded.",
    buckets=_BUILD_BUCKETS,
)
OCR_PAGES = Counter(
    "highlight_ocr_pages",
    "Scanned pages read by OCR when an index is built, by outcome (ok; failed: Tesseract failed "
    "or took too long; over_budget: past HIGHLIGHT_OCR_MAX_PAGES, left without text).",
    ["outcome"],
)
OCR_PAGE_SECONDS = Histogram(
    "highlight_ocr_page_seconds",
    "Time to render and OCR one scanned page (in a PDF worker).",
    buckets=(0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120),
)
PDFS_CHANGED = Counter(
    "highlight_pdfs_changed",
    "PDFs found to differ from the content they were ingested with (reason pdf_changed).",
)

# Index blobs refused before use (pdfs/index_signing.py): source local (this replica's folder)
# or shared (the object store); reason one of index_signing.REASONS. Each is rebuilt.
INDEX_BLOBS_REJECTED = Counter(
    "highlight_index_blobs_rejected",
    "Text index blobs refused and rebuilt, by where they were read (local, shared) and why "
    "(unsigned, unknown_key, bad_mac, wrong_pdf, wrong_version, corrupt).",
    ["source", "reason"],
)


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROC_ENV) or None


_LIVE_GAUGE_FILE = re.compile(r"gauge_live\w+?_(\d+)\.db$")


def forget_dead_processes(path: str) -> None:
    """Drop the live gauges of worker processes that are gone (killed and replaced): their
    files would otherwise count their last in-flight calls forever. Counters stay, so totals
    never go backwards."""
    dead = set()
    for name in glob.glob(os.path.join(path, "gauge_live*.db")):
        found = _LIVE_GAUGE_FILE.search(name)
        if found is None:
            continue
        pid = int(found.group(1))
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            dead.add(pid)
        except PermissionError:  # alive, someone else's
            pass
    for pid in dead:
        mark_process_dead(pid, path)  # type: ignore[no-untyped-call]


def exposition(path: str | None = None) -> bytes:
    """The metrics in Prometheus' text format: this process's, or, in multiprocess mode (or
    with ``path``), every worker's summed. Blocking (reads the workers' files)."""
    path = path or multiprocess_dir()
    if path is None:
        return generate_latest(REGISTRY)
    forget_dead_processes(path)
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=path)  # type: ignore[no-untyped-call]
    return generate_latest(registry)
