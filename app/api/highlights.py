from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Response
from fastapi.responses import StreamingResponse
from fastapi.sse import format_sse_event
from starlette.convertors import Convertor, register_url_convertor

from app.api.deps import HIGHLIGHT_ID, HighlightsDep, LinksDep, SettingsDep, StoredDep
from app.core.errors import error_responses
from app.highlights.schemas import (
    BatchSummary,
    CitationEvent,
    HighlightBatchRequest,
    HighlightBatchResponse,
    StoredHighlightOut,
)
from app.highlights.service import Batch
from app.highlights.streaming import stream_events


class _HighlightIdConvertor(Convertor[str]):
    """Path segments that can be highlight ids: GET /v2/highlights/batch is then a 405 (the path
    takes POST), not a 422 for an id that was never one."""

    regex = HIGHLIGHT_ID.strip("^$")

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("highlight_id", _HighlightIdConvertor())

router = APIRouter(tags=["highlights"])
# Separate: with auth on, a highlight is also readable with its document's signed link (the
# reference viewer opened from a batch result has no token).
lookups = APIRouter(tags=["highlights"])
LEGACY_PREFIX = "/api/v1"
ERRORS = error_responses(413, 422, 503)

_DESCRIPTION = (
    "Which sentences of each cited chunk support the answer, and where they are in the PDF. "
    "Upstream problems never fail the call: each citation gets a status, a reason and a plain "
    "PDF link. A repeated batch answers from the result cache (header X-Highlight-Cache: hit) "
    "without asking the LLM again; ETag changes whenever the answer does."
)
_HEADERS = {
    "ETag": {"description": "Hash of this answer.", "required": True, "schema": {"type": "string"}},
    "Cache-Control": {"required": True, "schema": {"type": "string"}},
    "X-Highlight-Cache": {
        "description": "hit: answered from the result cache; miss: computed now.",
        "required": True,
        "schema": {"type": "string", "enum": ["hit", "miss"]},
    },
}
_STREAM_DESCRIPTION = """\
The same answer as /v2/highlights/batch, as Server-Sent Events (`text/event-stream`), one event
per citation as soon as it is ready:

- `event: citation`, data `CitationEvent` `{index, provisional, citation}`: `citation` is a
  CitationResult with the batch's statuses and reasons. When an LLM is configured and has not
  answered within HIGHLIGHT_STREAM_PROVISIONAL_AFTER_S, the lexical selector's answer comes first
  as provisional events (reason `llm_pending`); a non-provisional event for the same index
  replaces each of them when the LLM answers, fails or runs out of time.
- `event: summary`, data `BatchSummary` `{status, method, llm_tier, total, highlighted, cached}`:
  the last event.
- `: ping` comment lines keep idle connections open.

Errors that concern the whole request (422, 413, 503) are answered as JSON before the stream
starts. Browsers cannot POST with EventSource: read the body with fetch and a stream reader
(frontend-contract/src/ has a parser)."""


async def _answer(
    body: HighlightBatchRequest, highlights: HighlightsDep, links: LinksDep
) -> Response:
    answer = await highlights.highlight_batch(body, links)
    return Response(
        content=answer.body,
        media_type="application/json",
        headers={
            "ETag": answer.etag,
            # Clients may keep the answer but should ask again: the service answers a repeat
            # from its own cache, cheaply, and notices a changed PDF.
            "Cache-Control": "private, no-cache",
            "X-Highlight-Cache": "hit" if answer.cache_hit else "miss",
        },
    )


@router.post(
    "/v2/highlights/batch",
    response_model=HighlightBatchResponse,
    description=_DESCRIPTION,
    responses={200: {"headers": _HEADERS}, **ERRORS},
)
async def highlight_batch(
    body: HighlightBatchRequest, highlights: HighlightsDep, links: LinksDep
) -> Response:
    return await _answer(body, highlights, links)


@router.post(
    f"{LEGACY_PREFIX}/v2/highlights/batch",
    response_model=HighlightBatchResponse,
    description="The same as /v2/highlights/batch, at the path the existing chat frontend calls; "
    "links in the reply are the same as there (they name /v2/documents/... and /viewer; behind a "
    "proxy that mounts the service under a path, set HIGHLIGHT_PUBLIC_BASE_URL to include it).",
    deprecated=True,
    responses={200: {"headers": _HEADERS}, **ERRORS},
)
async def highlight_batch_legacy(
    body: HighlightBatchRequest, highlights: HighlightsDep, links: LinksDep
) -> Response:
    return await _answer(body, highlights, links)


class EventStream(StreamingResponse):
    """``text/event-stream``, written by hand rather than by FastAPI's generator endpoints: those
    log an unhandled ExceptionGroup whenever a client disconnects while events are being sent
    (fastapi 0.165, seen under schemathesis), and a reader closing a chat is routine."""

    media_type = "text/event-stream"


def _event_item_schema() -> dict[str, object]:
    payloads = [CitationEvent, BatchSummary]
    return {
        "type": "object",
        "properties": {
            "event": {"type": "string", "enum": ["citation", "summary"]},
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": {
                    "oneOf": [{"$ref": f"#/components/schemas/{m.__name__}"} for m in payloads]
                },
            },
        },
        "required": ["event", "data"],
    }


async def _prepared(body: HighlightBatchRequest, highlights: HighlightsDep) -> Batch:
    # A dependency: it runs before the stream starts, so its 422/503 are plain JSON errors.
    return await highlights.prepare(body)


@router.post(
    "/v2/highlights/stream",
    response_class=EventStream,
    description=_STREAM_DESCRIPTION,
    responses={
        200: {
            "description": "One event per citation, then a summary.",
            "content": {"text/event-stream": {"itemSchema": _event_item_schema()}},
        },
        **error_responses(413, 422, 503, streaming=True),
    },
)
async def highlight_stream(
    batch: Annotated[Batch, Depends(_prepared)],
    highlights: HighlightsDep,
    links: LinksDep,
    settings: SettingsDep,
) -> EventStream:
    after = settings.stream_provisional_after_s

    async def wire() -> AsyncIterator[bytes]:
        async for event in stream_events(highlights, batch, links, after):
            if event is None:
                yield format_sse_event(comment="ping")
            else:
                name, data = event
                yield format_sse_event(event=name, data_str=data.model_dump_json())

    # no-cache and no proxy buffering: each event must reach the reader as it is sent.
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return EventStream(wire(), headers=headers)


@lookups.get(
    "/v2/highlights/{highlight_id:highlight_id}",
    response_model=StoredHighlightOut,
    responses=error_responses(404, 409, 410, 422, 503),
)
async def get_highlight(
    highlight_id: Annotated[str, Path(pattern=HIGHLIGHT_ID)], stored: StoredDep, links: LinksDep
) -> StoredHighlightOut:
    """A highlight by the id batch results carry: what the reference viewer and page previews
    draw. 404 when unknown; 410 ``pdf_changed`` when its document was ingested again with other
    content since the answer that made it (its rectangles belong to the earlier content); 409
    ``pdf_changed`` when the PDF file was replaced without re-ingest; 503 when the PDFs' store
    cannot be reached. With auth on: a read token, or its document's signed link."""
    return await stored.get(highlight_id, links)
