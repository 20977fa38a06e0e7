"""Probes. ``/livez``: the process answers (a liveness probe must never fail because a dependency
is down, or every pod restarts during a database outage). ``/readyz``: this replica can serve:
database reachable and at this release's schema, storage reachable and (an object store) taking
this service's writes, not shutting down (a readiness probe takes a replica out of the load
balancer, which is what those cases need). ``/healthz`` is kept as it was for existing monitors:
the database check alone."""

from __future__ import annotations

import asyncio
import logging
from typing import Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import Field
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.deps import EngineDep, HighlightsDep, SettingsDep, StorageDep
from app.core.errors import header_refs
from app.core.fields import ResponseModel
from app.db.migrate import head_revisions, known_revisions
from app.pdfs.storage import PdfStorage

router = APIRouter(tags=["health"])
log = logging.getLogger(__name__)
# A probe that hangs is worse than one that fails: Kubernetes' default probe timeout is 1 s.
CHECK_TIMEOUT_S = 2.0
# Every 503 of the service says when to ask again; a probe's too, for clients that honour it.
RETRY_AFTER = {"Retry-After": "5"}
NOT_READY_HEADERS = header_refs("Retry-After")


class Health(ResponseModel):
    status: Literal["ok", "degraded"]
    database: Literal["ok", "unreachable"]
    llm_provider: str
    llm_model: str | None


class Liveness(ResponseModel):
    status: Literal["alive"]


class Readiness(ResponseModel):
    status: Literal["ready", "not_ready"]
    database: Literal["ok", "unreachable", "not_migrated"]
    storage: Literal["ok", "unreachable", "read_only"] = Field(
        description="read_only: the PDFs' store answers but refuses this service's writes "
        "(asked at most once a minute)."
    )
    shutting_down: bool
    problems: list[str] = Field(
        description="What keeps this replica out of service, one line each (empty when ready)."
    )


async def _schema_revisions(engine: AsyncEngine) -> set[str]:
    # A real read of the schema, not SELECT 1: a deleted, replaced, damaged or unmigrated SQLite
    # file answers SELECT 1 happily.
    async with engine.connect() as conn:
        rows = await conn.execute(text("SELECT version_num FROM alembic_version"))
        return {row[0] for row in rows}


async def _database_ok(engine: AsyncEngine) -> bool:
    try:
        await asyncio.wait_for(_schema_revisions(engine), CHECK_TIMEOUT_S)
    except Exception:
        return False
    return True


@router.get(
    "/healthz",
    response_model=Health,
    responses={
        503: {
            "model": Health,
            "description": "The database cannot be used.",
            "headers": NOT_READY_HEADERS,
        }
    },
)
async def health(engine: EngineDep, settings: SettingsDep) -> JSONResponse:
    ok = await _database_ok(engine)
    body = Health(
        status="ok" if ok else "degraded",
        database="ok" if ok else "unreachable",
        llm_provider=settings.llm_provider,
        llm_model=settings.llm_model or None,
    )
    if ok:
        return JSONResponse(body.model_dump())
    return JSONResponse(body.model_dump(), status_code=503, headers=RETRY_AFTER)


@router.get("/livez", response_model=Liveness)
async def livez() -> Liveness:
    return Liveness(status="alive")


async def _database_check(
    engine: AsyncEngine,
) -> tuple[Literal["ok", "unreachable", "not_migrated"], str]:
    try:
        found = await asyncio.wait_for(_schema_revisions(engine), CHECK_TIMEOUT_S)
    except Exception as exc:
        log.debug("readiness: database check failed", exc_info=exc)
        return "unreachable", "the database cannot be reached or has no schema"
    expected = head_revisions()
    newer = found - known_revisions()
    if found != expected and not newer:
        return "not_migrated", (
            f"the database schema is at {', '.join(sorted(found)) or 'nothing'}, this release "
            f"needs {', '.join(sorted(expected))}: run `highlight-service migrate`"
        )
    return "ok", ""


StorageState = Literal["ok", "unreachable", "read_only"]


async def _storage_check(storage: PdfStorage) -> tuple[StorageState, str]:
    try:
        problem = await asyncio.wait_for(asyncio.to_thread(storage.problem), CHECK_TIMEOUT_S + 1)
        if problem:
            return "unreachable", problem
        # A replica that cannot store uploads is not ready: they would all fail.
        problem = await asyncio.wait_for(
            asyncio.to_thread(storage.write_problem), CHECK_TIMEOUT_S + 1
        )
    except TimeoutError:
        return "unreachable", "the PDF storage did not answer in time"
    return ("read_only", problem) if problem else ("ok", "")


@router.get(
    "/readyz",
    response_model=Readiness,
    responses={
        503: {
            "model": Readiness,
            "description": "Not ready: problems says why (shutting down, database, storage).",
            "headers": NOT_READY_HEADERS,
        }
    },
)
async def readyz(
    engine: EngineDep, storage_dep: StorageDep, highlights: HighlightsDep
) -> JSONResponse:
    (database, db_problem), (storage, storage_problem) = await asyncio.gather(
        _database_check(engine), _storage_check(storage_dep)
    )
    # Read after the checks: shutdown may have begun (from a signal handler) while they ran.
    shutting_down = highlights.shutting_down
    problems = [p for p in (db_problem, storage_problem) if p]
    if shutting_down:
        problems.append("shutting down")
    ready = not problems
    body = Readiness(
        status="ready" if ready else "not_ready",
        database=database,
        storage=storage,
        shutting_down=shutting_down,
        problems=problems,
    )
    if ready:
        return JSONResponse(body.model_dump())
    return JSONResponse(body.model_dump(), status_code=503, headers=RETRY_AFTER)
