from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import StateDep
from app.highlights.schemas import HighlightBatchRequest, HighlightBatchResponse

router = APIRouter(tags=["highlights"])
LEGACY_PREFIX = "/api/v1"

_DESCRIPTION = (
    "Which sentences of each cited chunk support the answer, and where they are in the PDF. "
    "Upstream problems never fail the call: each citation gets a status, a reason and a plain "
    "PDF link."
)


@router.post(
    "/v2/highlights/batch", response_model=HighlightBatchResponse, description=_DESCRIPTION
)
async def highlight_batch(body: HighlightBatchRequest, state: StateDep) -> HighlightBatchResponse:
    return await state.highlights.highlight_batch(body)


@router.post(
    f"{LEGACY_PREFIX}/v2/highlights/batch",
    response_model=HighlightBatchResponse,
    description="The same as /v2/highlights/batch, at the path the existing chat frontend calls; "
    "links in the reply carry the same prefix.",
    deprecated=True,
)
async def highlight_batch_legacy(
    body: HighlightBatchRequest, state: StateDep
) -> HighlightBatchResponse:
    return await state.highlights.highlight_batch(body, link_prefix=LEGACY_PREFIX)
