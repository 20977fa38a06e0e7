"""A batch's one log line and its metrics, for its final answer (batch or stream)."""

from __future__ import annotations

import logging
import time
from collections import Counter

from app.core import metrics
from app.highlights.schemas import CitationStatus, HighlightBatchResponse

# The service's logger: the line has always been app.highlights.service's.
log = logging.getLogger("app.highlights.service")


def log_batch(response: HighlightBatchResponse, *, cached: bool, started: float) -> None:
    results = response.results
    cache = "hit" if cached else "miss"
    statuses = Counter(r.status.value for r in results)
    reasons = Counter(r.reason.value for r in results if r.reason)
    metrics.BATCHES.labels(response.method, cache).inc()
    for (status, reason), count in Counter(
        (r.status.value, r.reason.value if r.reason else "none") for r in results
    ).items():
        metrics.CITATIONS.labels(status, reason).inc(count)
    ms = (time.perf_counter() - started) * 1000
    log.info(
        "batch: %d citations, %d highlighted, method %s, tier %s, reasons %s, cache %s, %.0f ms",
        len(results),
        statuses[CitationStatus.highlighted.value],
        response.method,
        response.llm_tier,
        sorted(reasons),
        cache,
        ms,
        extra={
            "citations": len(results),
            "method": response.method,
            "tier": response.llm_tier,
            "cache": cache,
            "statuses": dict(statuses),
            "reasons": dict(reasons),
            "duration_ms": round(ms, 1),
        },
    )
