"""The one error hierarchy of the service, the one body every error is sent in, and the one place
errors become HTTP.

    AppError (500)
     ├── BadRequest (422)            input that passed schema validation but is still unusable
     │    ├── InvalidDocumentId, InvalidChunks                (documents/errors.py)
     │    ├── InvalidUpload, UploadHashMismatch               (documents/errors.py)
     │    ├── InvalidSourcePath, UnreadablePdf                (pdfs/errors.py)
     │    ├── PdfTooComplex          code pdf_too_complex     (pdfs/errors.py)
     │    ├── ConversionFailed, ConversionTimedOut, ConversionTooLarge  (pdfs/errors.py)
     │    └── BatchTooLarge, PageNotRendered                  (highlights/errors.py)
     ├── Unauthorized (401)          no or unknown bearer token
     │    ├── LinkExpired            code link_expired: a signed link past its time (core/errors.py)
     │    └── LinkInvalid            code link_invalid: altered or cut (core/errors.py)
     ├── Forbidden (403)             a read token used to write
     ├── NotFound (404)
     │    ├── DocumentNotFound, NoPdf                          (documents/errors.py)
     │    ├── PdfMissing                                       (pdfs/errors.py)
     │    └── HighlightNotFound, PageNotFound                  (highlights/errors.py)
     ├── Conflict (409)
     │    ├── WriteConflict          two requests raced for the same rows; writers retry it
     │    ├── ChunkIdsTaken                                    (documents/errors.py)
     │    └── PdfChanged             code pdf_changed          (pdfs/errors.py)
     ├── PayloadTooLarge (413)
     ├── UnsupportedMediaType (415)  a raw body sent as another type than the route takes
     │    └── ConverterMissing       an Office document, and no LibreOffice  (pdfs/errors.py)
     ├── RangeNotInFile (416)        code range_not_satisfiable (api/pdf_response.py)
     ├── Gone (410)
     │    └── HighlightOutdated      code pdf_changed: its document changed  (highlights/errors.py)
     ├── UpstreamError (502)         an external system failed
     │    └── LLMError               and its family, mapped to per-citation reasons (llm/errors.py)
     ├── StorageUnavailable (503)    code storage_unavailable, the PDFs' store (pdfs/errors.py)
     ├── DatabaseUnavailable (503)   the service's own database cannot be used
     └── Busy (503)                  every slot for a costly job (page previews) is taken
          ├── PdfWorkStalled         a PDF job outlasted its clock backstop (pdfs/errors.py)
          └── ConversionBusy         every LibreOffice slot stayed taken      (pdfs/errors.py)

A named subclass keeps its parent's status and code (the codes shown above excepted): the codes
are the API's contract, the class names say where a case is raised. The domain errors live with
their domain; a test holds this drawing to the classes that exist.

Every error, including FastAPI's validation errors and Starlette's 404/405 for unknown routes, is
rendered as ``ErrorBody``: ``{"error": {"code", "message", "details"?}}``. Routes declare the
statuses they can return with ``error_responses``, so the OpenAPI document tells the truth.
"""

from __future__ import annotations

import logging
from enum import StrEnum
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from app.core.logs import REQUEST_ID

log = logging.getLogger(__name__)


class ErrorCode(StrEnum):
    validation_error = "validation_error"
    bad_request = "bad_request"
    unauthorized = "unauthorized"
    link_expired = "link_expired"
    link_invalid = "link_invalid"
    forbidden = "forbidden"
    not_found = "not_found"
    method_not_allowed = "method_not_allowed"
    conflict = "conflict"
    gone = "gone"
    pdf_changed = "pdf_changed"
    pdf_too_complex = "pdf_too_complex"
    payload_too_large = "payload_too_large"
    unsupported_media_type = "unsupported_media_type"
    range_not_satisfiable = "range_not_satisfiable"
    upstream_error = "upstream_error"
    storage_unavailable = "storage_unavailable"
    database_unavailable = "database_unavailable"
    busy = "busy"
    internal_error = "internal_error"


class ErrorDetail(BaseModel):
    code: ErrorCode = Field(description="Machine-readable; stable across releases.")
    message: str = Field(description="For people: what went wrong and what to change.")
    details: dict[str, Any] | None = Field(
        default=None,
        description="Extra facts, e.g. problems: [{field, message}] for a validation error, "
        "chunk_ids for a conflict.",
    )


class ErrorBody(BaseModel):
    """The body of every error response."""

    error: ErrorDetail


class AppError(Exception):
    status_code = 500
    code = ErrorCode.internal_error
    headers: dict[str, str] | None = None

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}


class BadRequest(AppError):
    status_code = 422
    code = ErrorCode.bad_request


class Unauthorized(AppError):
    status_code = 401
    code = ErrorCode.unauthorized
    headers = {"WWW-Authenticate": "Bearer"}


class LinkExpired(Unauthorized):
    """A signed link (viewer, PDF) this service made, past its expiry. Readers see it, so the
    message says what to do and names no token; api/viewer.py answers browsers with a page."""

    code = ErrorCode.link_expired


class LinkInvalid(Unauthorized):
    """A signed link whose signature does not match (edited, or cut when it was copied)."""

    code = ErrorCode.link_invalid


class Forbidden(AppError):
    status_code = 403
    code = ErrorCode.forbidden


class NotFound(AppError):
    status_code = 404
    code = ErrorCode.not_found


class Conflict(AppError):
    status_code = 409
    code = ErrorCode.conflict


class WriteConflict(Conflict):
    pass


class Gone(AppError):
    status_code = 410
    code = ErrorCode.gone


class PayloadTooLarge(AppError):
    status_code = 413
    code = ErrorCode.payload_too_large


class UnsupportedMediaType(AppError):
    status_code = 415
    code = ErrorCode.unsupported_media_type


class UpstreamError(AppError):
    status_code = 502
    code = ErrorCode.upstream_error


class DatabaseUnavailable(AppError):
    status_code = 503
    code = ErrorCode.database_unavailable
    headers = {"Retry-After": "5"}


class Busy(AppError):
    status_code = 503
    code = ErrorCode.busy
    headers = {"Retry-After": "2"}


_DESCRIPTIONS = {
    401: "No bearer token, or one the service does not know, or a signed link that expired "
    "(code link_expired) or is not valid (code link_invalid); only when auth is configured.",
    403: "The token may read but not write.",
    404: "Not found.",
    409: "Conflicts with what is stored.",
    410: "It existed, but no longer applies: its document changed since (code pdf_changed).",
    413: "The request body is larger than the service accepts.",
    415: "The body is not of the media type the route takes (Content-Type).",
    416: "The requested byte range is not in the file.",
    422: "The request is malformed or unusable; error.message names the field and the fix.",
    502: "A system the service depends on failed; retry later.",
    503: "The service's database (code database_unavailable) or the PDFs' store (code "
    "storage_unavailable) cannot be used now, or it is busy with costly work (code busy); retry "
    "after the Retry-After header's seconds.",
}


# Response headers a client reads, as OpenAPI header objects: main.py puts them in the document's
# components.headers, responses refer to them. X-Request-ID is on every response
# (api/middleware.py); main.py declares it on every operation's every response.
RESPONSE_HEADERS: dict[str, dict[str, Any]] = {
    "Retry-After": {
        "description": "Seconds to wait before asking again (on every 503).",
        "required": True,
        "schema": {"type": "integer", "minimum": 1},
    },
    "X-Request-ID": {
        "description": "This request's id: the caller's X-Request-ID when it is at most 128 "
        "letters, digits and ._:- characters, else a new one. Every log line of the request "
        "carries it: quote it in a bug report.",
        "required": True,
        "schema": {"type": "string"},
    },
    "Content-Range": {
        "description": "On a 206, the part sent (bytes first-last/size); on a 416, bytes */size.",
        "required": True,
        "schema": {"type": "string"},
    },
}


def header_refs(*names: str) -> dict[str, dict[str, str]]:
    return {name: {"$ref": f"#/components/headers/{name}"} for name in names}


# The headers every answer of a status carries (AppError.headers; RangeNotInFile's).
_STATUS_HEADERS = {
    416: header_refs("Content-Range"),
    503: header_refs("Retry-After"),
}


def error_responses(*statuses: int, streaming: bool = False) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for the error statuses a route can return, all as ErrorBody, with
    the headers each status always carries (a 503's Retry-After). ``streaming``: the route
    answers text/event-stream, but its errors are still JSON (they are sent before a stream
    starts), so the content type is spelled out instead of inherited."""
    responses: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        if streaming:
            json_body = {"schema": {"$ref": "#/components/schemas/ErrorBody"}}
            response: dict[str, Any] = {"content": {"application/json": json_body}}
        else:
            response = {"model": ErrorBody}
        response["description"] = _DESCRIPTIONS[status]
        if status in _STATUS_HEADERS:
            response["headers"] = _STATUS_HEADERS[status]
        responses[status] = response
    return responses


def error_response(
    status: int,
    code: ErrorCode,
    message: str,
    details: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = ErrorBody(error=ErrorDetail(code=code, message=message, details=details or None))
    return JSONResponse(
        status_code=status, content=body.model_dump(exclude_none=True), headers=headers
    )


_STARLETTE_CODES = {
    404: ErrorCode.not_found,
    405: ErrorCode.method_not_allowed,
    413: ErrorCode.payload_too_large,
    416: ErrorCode.range_not_satisfiable,
}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(AppError)
    async def _app_error(_: Request, exc: AppError) -> JSONResponse:
        if exc.status_code > 500:
            # An upstream failure (502), a store or database that cannot be reached or a full
            # house (503): expected, not a bug. One line per request naming the cause;
            # a traceback would only bury it.
            cause = exc.__cause__
            log.warning(
                "request failed (%d %s): %s%s",
                exc.status_code,
                exc.code.value,
                exc.message,
                f" ({cause!r})"[:300] if cause else "",
            )
        elif exc.status_code >= 500:
            log.error("request failed: %s", exc.message, exc_info=exc)
        return error_response(exc.status_code, exc.code, exc.message, exc.details, exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # Routing and body-reading errors, in the same shape as every other error.
        headers = dict(exc.headers) if exc.headers else None
        if exc.status_code == 400:
            # FastAPI's "There was an error parsing the body": bytes that are not UTF-8. Every
            # other malformed body is a 422, so this one is too.
            return error_response(
                422,
                ErrorCode.validation_error,
                f"body: {exc.detail}; send JSON encoded as UTF-8",
                {"problems": [{"field": "body", "message": str(exc.detail)}]},
            )
        if exc.status_code == 404:
            message = f"no such endpoint: {request.method} {request.url.path}"
        elif exc.status_code == 405:
            allowed = _allowed_methods(request)
            headers = {**(headers or {}), "Allow": ", ".join(allowed)}
            message = (
                f"{request.method} is not allowed on {request.url.path}; use {', '.join(allowed)}"
            )
        else:
            message = str(exc.detail)
        code = _STARLETTE_CODES.get(exc.status_code, ErrorCode.bad_request)
        return error_response(exc.status_code, code, message, headers=headers)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        # A bug, not an input or upstream problem: logged with its trace, answered in the same
        # shape as every other error so clients need one parser.
        log.error("unhandled error", exc_info=exc)
        # Starlette sends this response from its outermost middleware, outside the one that
        # adds X-Request-ID to every other response; the id is still this request's (logs.py),
        # and it is what a bug report needs to find the traceback above.
        request_id = REQUEST_ID.get()
        return error_response(
            500,
            ErrorCode.internal_error,
            "internal error; see the server log",
            headers={"X-Request-ID": request_id} if request_id else None,
        )

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        # One readable line per problem ("body.citations: List should have at least 1 item"),
        # so a client developer sees what to fix without reading pydantic internals.
        problems = [
            {
                "field": ".".join(str(p) for p in err.get("loc", ())),
                "message": _problem_message(err),
            }
            for err in exc.errors()
        ]
        message = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
        return error_response(422, ErrorCode.validation_error, message, {"problems": problems})


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route takes on this path. Starlette's 405 names only the first route
    whose path matched, and GET and PUT of one path are two routes here."""
    allowed = []
    for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"):
        scope = {**request.scope, "method": method}
        if any(route.matches(scope)[0] == Match.FULL for route in request.app.router.routes):
            allowed.append(method)
    return allowed


def _problem_message(err: Any) -> str:
    message = str(err.get("msg", ""))
    # Our own validators raise ValueError("..."); pydantic prefixes "Value error, ".
    return message.removeprefix("Value error, ")
