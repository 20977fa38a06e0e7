"""POST /v2/highlights/stream: one event per citation as soon as it is ready.

Citations of unknown chunks go out at once. When an LLM is configured and has not answered after
``provisional_after_s``, the lexical selector's answer is placed and sent as provisional events
(reason ``llm_pending``); when the LLM answers (or fails, or the deadline passes) every known
citation gets its final event, with the same statuses and reasons as the batch. A ``summary``
event ends the stream. A cached answer is sent at once, all final. Every event's highlights are
stored before it is sent, so each id it names can be fetched.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable

from pydantic import BaseModel

from app.core.errors import DatabaseUnavailable
from app.documents.links import PdfLinks
from app.highlights.results import not_found, with_links
from app.highlights.schemas import (
    BatchSummary,
    CitationEvent,
    CitationStatus,
    HighlightBatchResponse,
    Reason,
)
from app.highlights.service import Batch, HighlightService

log = logging.getLogger(__name__)
Event = tuple[str, BaseModel]
# Sent while nothing else is: proxies and browsers drop connections idle for long.
PING: Event | None = None
PING_EVERY_S = 15.0


def _summary(response: HighlightBatchResponse, cached: bool) -> Event:
    return "summary", BatchSummary(
        status=response.status,
        method=response.method,
        llm_tier=response.llm_tier,
        total=len(response.results),
        highlighted=sum(r.status == CitationStatus.highlighted for r in response.results),
        cached=cached,
    )


def _citations(
    response: HighlightBatchResponse, links: PdfLinks, provisional: bool, skip: set[int]
) -> list[Event]:
    linked = with_links(response, links)
    return [
        ("citation", CitationEvent(index=i, provisional=provisional, citation=result))
        for i, result in enumerate(linked.results)
        if i not in skip
    ]


async def _stored(storing: Awaitable[None]) -> bool:
    try:
        await storing
    except DatabaseUnavailable as exc:
        log.warning("stream: %s", exc.message)
        return False
    return True


async def stream_events(
    service: HighlightService,
    batch: Batch,
    links: PdfLinks,
    provisional_after_s: float,
    ping_every_s: float = PING_EVERY_S,
) -> AsyncIterator[Event | None]:
    """The stream's events; None where a keep-alive ping is due."""
    if batch.cached is not None:
        if batch.rows_missing and not await _stored(service.keep_highlights(batch, batch.cached)):
            return
        for event in _citations(batch.cached, links, False, set()):
            yield event
        service.log_batch(batch, batch.cached)
        yield _summary(with_links(batch.cached, links), cached=True)
        return
    request = batch.request
    unknown = {i for i, c in enumerate(request.citations) if c.chunk_id not in batch.cited}
    for i in sorted(unknown):
        citation = not_found(request.citations[i].chunk_id, request.citations[i].citation_id)
        yield "citation", CitationEvent(index=i, provisional=False, citation=citation)
    choosing = asyncio.ensure_future(service.choose(batch))
    try:
        earlier = None
        if service.has_llm:
            done, _ = await asyncio.wait({choosing}, timeout=provisional_after_s)
            if not done:
                lexical = await service.choose_lexically(batch, Reason.llm_pending)
                provisional, earlier = await service.compute(batch, lexical)
                if await _stored(service.keep_highlights(batch, provisional)):
                    for event in _citations(provisional, links, True, unknown):
                        yield event
        while not choosing.done():
            done, _ = await asyncio.wait({choosing}, timeout=ping_every_s)
            if not done:
                yield PING
        response, _ = await service.compute(batch, choosing.result(), earlier)
        if not await _stored(service.remember(batch, response)):
            # Headers are sent, so no 503 now: the stream ends without a summary, which tells
            # the client it is incomplete, and no event names an id that was not stored.
            return
        for event in _citations(response, links, False, unknown):
            yield event
        service.log_batch(batch, response)
        yield _summary(response, cached=False)
    finally:
        if not choosing.done():
            choosing.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await choosing
