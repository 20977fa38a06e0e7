"""The metrics module: every metric named once under ``highlight_``, and multiprocess mode, where
real worker processes write to one PROMETHEUS_MULTIPROC_DIR and a scrape sums them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import Metric
from prometheus_client.parser import text_string_to_metric_families

from app.core import metrics
from app.core.metrics import exposition
from tests.conftest import PROJECT_ROOT


def families(text: str | bytes) -> dict[str, Metric]:
    if isinstance(text, bytes):
        text = text.decode()
    return {family.name: family for family in text_string_to_metric_families(text)}


def sample(text: str | bytes, name: str, **labels: str) -> float:
    """The value of sample ``name`` with exactly ``labels`` (0 when there is none yet)."""
    if isinstance(text, bytes):
        text = text.decode()
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return float(found.value)
    return 0.0


METRIC_OBJECTS = [
    value
    for value in vars(metrics).values()
    if hasattr(value, "_name") and hasattr(value, "_documentation")
]


# The list docs/operating.md documents: a metric added or renamed must be documented there too.
DOCUMENTED = {
    "highlight_http_requests",
    "highlight_http_request_duration_seconds",
    "highlight_citations",
    "highlight_batches",
    "highlight_batch_deadline_hits",
    "highlight_llm_calls",
    "highlight_llm_call_duration_seconds",
    "highlight_llm_retries",
    "highlight_llm_tier_downgrades",
    "highlight_llm_tokens",
    "highlight_llm_in_flight",
    "highlight_llm_queued",
    "highlight_llm_refused",
    "highlight_index_builds",
    "highlight_index_build_duration_seconds",
    "highlight_ocr_pages",
    "highlight_ocr_page_seconds",
    "highlight_pdfs_changed",
    "highlight_index_blobs_rejected",
}


def test_every_metric_is_prefixed_documented_and_exposed() -> None:
    names = [m._name for m in METRIC_OBJECTS]
    assert len(names) == len(set(names))
    assert set(names) == DOCUMENTED
    assert all(m._documentation for m in METRIC_OBJECTS)
    exposed = families(exposition())
    # Metrics without labels are exposed before their first use; labelled ones once used.
    for m in METRIC_OBJECTS:
        if not m._labelnames:
            assert m._name in exposed, m._name


def test_route_labels_are_templates_in_the_http_metrics() -> None:
    assert metrics.HTTP_REQUESTS._labelnames == ("route", "method", "status")
    assert metrics.HTTP_DURATION._labelnames == ("route", "method")


WORKER = """
import sys
from app.core import metrics
metrics.BATCHES.labels("llm", "miss").inc(int(sys.argv[1]))
metrics.LLM_IN_FLIGHT.inc()
print("ready", flush=True)
sys.stdin.read()  # until the test closes it
"""


def _worker(directory: Path, count: int) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PROMETHEUS_MULTIPROC_DIR": str(directory),
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    process = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(count)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "ready\n"
    return process


def _finish(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(timeout=30) == 0


@pytest.mark.slow  # starts another program
def test_two_processes_writing_one_directory_are_summed(tmp_path: Path) -> None:
    first = _worker(tmp_path, 2)
    second = _worker(tmp_path, 3)
    try:
        both = exposition(str(tmp_path))
        assert sample(both, "highlight_batches_total", method="llm", cache="miss") == 5
        assert sample(both, "highlight_llm_in_flight") == 2
        _finish(first)
        # A worker that is gone no longer holds calls in flight; its counts stay.
        one = exposition(str(tmp_path))
        assert sample(one, "highlight_batches_total", method="llm", cache="miss") == 5
        assert sample(one, "highlight_llm_in_flight") == 1
    finally:
        for process in (first, second):
            if process.poll() is None:
                _finish(process)
    assert sample(exposition(str(tmp_path)), "highlight_llm_in_flight") == 0


def test_without_the_directory_this_process_is_exposed() -> None:
    before = sample(exposition(), "highlight_pdfs_changed_total")
    metrics.PDFS_CHANGED.inc()
    assert sample(exposition(), "highlight_pdfs_changed_total") == before + 1
