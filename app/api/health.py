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


async def _database_ok(state: StateDep) -> bool:
    # A real read of the schema, not SELECT 1: a deleted, replaced, damaged or unmigrated SQLite
    # file answers SELECT 1 happily.
    try:
        async with state.engine.connect() as conn:
            await conn.execute(text("SELECT version_num FROM alembic_version"))
    except Exception:
        return False
    return True


@router.get("/healthz", response_model=Health, responses={503: {"model": Health}})
async def health(state: StateDep) -> JSONResponse:
    ok = await _database_ok(state)
    body = Health(
        status="ok" if ok else "degraded",
        database="ok" if ok else "unreachable",
        llm_provider=state.settings.llm_provider,
        llm_model=state.settings.llm_model or None,
    )
    return JSONResponse(body.model_dump(), status_code=200 if ok else 503)
