"""GET /metrics: Prometheus' text format, every worker process of this replica summed.

A read route: with auth on, Prometheus sends a read token (``authorization`` in its scrape
config). Not in the OpenAPI document: it is for the platform's scraper, not for API clients, and
the document would otherwise change with HIGHLIGHT_METRICS_ENABLED.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Response

from app.core.metrics import CONTENT_TYPE, exposition

router = APIRouter(include_in_schema=False)


@router.get("/metrics")
async def metrics() -> Response:
    # Off the loop: in multiprocess mode it reads every worker's files.
    body = await asyncio.to_thread(exposition)
    return Response(body, media_type=CONTENT_TYPE)
