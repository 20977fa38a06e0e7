"""The one error hierarchy of the service, and the one place it becomes HTTP.

    AppError (500)
     ├── BadRequest (422)        input that passed schema validation but is still unusable
     ├── NotFound (404)
     ├── Conflict (409)
     ├── UpstreamError (502)     an external system failed; see app.llm.errors for the LLM family
     └── DatabaseUnavailable (503)  the service's own database cannot be reached

Services raise these; ``install_error_handlers`` renders them as
``{"error": {"code": ..., "message": ...}}``. Nothing else in the app knows about HTTP status codes.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

log = logging.getLogger(__name__)


class AppError(Exception):
    status_code = 500
    code = "internal_error"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}


class BadRequest(AppError):
    status_code = 422
    code = "bad_request"


class NotFound(AppError):
    status_code = 404
    code = "not_found"


class Conflict(AppError):
    status_code = 409
    code = "conflict"


class PayloadTooLarge(AppError):
    status_code = 413
    code = "payload_too_large"


class UpstreamError(AppError):
    status_code = 502
    code = "upstream_error"


class DatabaseUnavailable(AppError):
    status_code = 503
    code = "database_unavailable"


def _body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if details:
        error["details"] = details
    return {"error": error}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(AppError)
    async def _app_error(_: Request, exc: AppError) -> JSONResponse:
        if exc.status_code >= 500:
            log.error("request failed: %s", exc.message, exc_info=exc)
        return JSONResponse(
            status_code=exc.status_code, content=_body(exc.code, exc.message, exc.details)
        )

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        # A bug, not an input or upstream problem: logged with its trace, answered in the same
        # shape as every other error so clients need one parser.
        log.error("unhandled error", exc_info=exc)
        return JSONResponse(
            status_code=500, content=_body("internal_error", "internal error; see the server log")
        )

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        # One readable line per problem ("body.citations: List should have at least 1 item"),
        # so a client developer sees what to fix without reading pydantic internals.
        problems = [
            {
                "field": ".".join(str(p) for p in err.get("loc", ())),
                "message": err.get("msg", ""),
            }
            for err in exc.errors()
        ]
        message = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
        return JSONResponse(
            status_code=422, content=_body("validation_error", message, {"problems": problems})
        )
