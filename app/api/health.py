from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy import text

from app.api.deps import StateDep

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: Literal["ok", "degraded"]
    database: Literal["ok", "unreachable"]
    llm_provider: str
    llm_model: str | None


@router.get("/healthz", response_model=Health, responses={503: {"model": Health}})
async def health(state: StateDep) -> JSONResponse:
    try:
        async with state.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        database: Literal["ok", "unreachable"] = "ok"
    except Exception:
        database = "unreachable"
    body = Health(
        status="ok" if database == "ok" else "degraded",
        database=database,
        llm_provider=state.settings.llm_provider,
        llm_model=state.settings.llm_model or None,
    )
    return JSONResponse(body.model_dump(), status_code=200 if database == "ok" else 503)
