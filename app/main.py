"""Application factory. The lifespan opens the service's parts (``services.py``) and closes them."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.routing import APIRoute
from pydantic.json_schema import models_json_schema

from app import __version__
from app.api import documents, health, highlights, metrics
from app.api.body_limit import BodyLimit
from app.api.deps import CanRead, CanReadHighlight, CanReadPdf, CanWrite
from app.api.middleware import RequestContext
from app.api.routing import gated
from app.api.viewer import mount_viewer
from app.core import tracing
from app.core.config import Settings, get_settings
from app.core.errors import (
    RESPONSE_HEADERS,
    error_responses,
    header_refs,
    install_error_handlers,
)
from app.core.security import Scope
from app.db.session import (
    describe_database,
)
from app.highlights.schemas import BatchSummary, CitationEvent
from app.services import open_services

if TYPE_CHECKING:  # openai takes a second to import; it is loaded when an LLM client is built
    import openai


HEADER_ID = "X-Request-ID"
EXPOSED_HEADERS = [
    "Retry-After",
    HEADER_ID,
    "ETag",
    "X-Highlight-Cache",
    "X-Preview-Scale",
    "Accept-Ranges",
    "Content-Range",
    "Content-Length",
]


def _include_routers(app: FastAPI, settings: Settings) -> None:
    """Routes with their auth checks when tokens are configured, and without (the default):
    the OpenAPI document then says exactly what this deployment asks for. Routes that take a
    body check the token themselves before reading it, and read it within their own limit
    (api/routing.py); the dependencies still declare the security in the document."""
    auth = settings.auth_enabled
    # streaming=True: JSON errors spelled out, also on the event-stream route.
    unauthorized = error_responses(401, streaming=True)
    read = {"dependencies": [CanRead], "responses": unauthorized} if auth else {}
    write = (
        {"dependencies": [CanWrite], "responses": error_responses(401, 403, streaming=True)}
        if auth
        else {}
    )
    pdf = {"dependencies": [CanReadPdf], "responses": unauthorized} if auth else {}
    batches = gated(
        highlights.router, BodyLimit.for_batches(settings.max_request_bytes), Scope.read
    )
    app.include_router(batches, **read)  # type: ignore[arg-type]
    lookup = {"dependencies": [CanReadHighlight], "responses": unauthorized} if auth else {}
    app.include_router(highlights.lookups, **lookup)  # type: ignore[arg-type]
    app.include_router(documents.reads, **read)  # type: ignore[arg-type]
    puts = gated(documents.writes, BodyLimit.for_documents(settings.max_request_bytes), Scope.write)
    app.include_router(puts, **write)  # type: ignore[arg-type]
    app.include_router(documents.files, **pdf)  # type: ignore[arg-type]
    app.include_router(health.router)
    if settings.metrics_enabled:
        app.include_router(metrics.router, **read)  # type: ignore[arg-type]
    mount_viewer(app, {} if settings.public_docs else read)


def _with_stream_event_schemas(app: FastAPI) -> None:
    """The stream's event payloads appear in no route's JSON: add them to the document's
    schemas, so the stream's itemSchema resolves and the TypeScript types include them."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = generate()
        _, extra = models_json_schema(
            [(CitationEvent, "serialization"), (BatchSummary, "serialization")],
            ref_template="#/components/schemas/{model}",
        )
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for name, definition in extra.get("$defs", {}).items():
            components.setdefault(name, definition)
        _drop_stream_wide_schemas(schema)
        _with_response_headers(schema)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _drop_stream_wide_schemas(schema: dict[str, Any]) -> None:
    """FastAPI adds ``schema: {type: string}`` beside our ``itemSchema``; next to an itemSchema a
    stream's ``schema`` describes the whole stream (OpenAPI 3.2), and a string it is not."""
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            for response in operation.get("responses", {}).values():
                stream = response.get("content", {}).get("text/event-stream")
                if stream and "itemSchema" in stream:
                    stream.pop("schema", None)


def _with_response_headers(schema: dict[str, Any]) -> None:
    """The headers responses refer to (core/errors.py), and X-Request-ID on every response of
    every operation: the middleware adds it to every answer, errors included."""
    schema["components"]["headers"] = dict(RESPONSE_HEADERS)
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            for response in operation.get("responses", {}).values():
                # A new dict: the routes' own header dicts may be shared between responses.
                response["headers"] = {**response.get("headers", {}), **header_refs(HEADER_ID)}


def describe_service(settings: Settings) -> str:
    """What a person starting the service needs to know, beside the address: which database,
    which LLM, whether callers need a token."""
    if settings.llm_provider == "none":
        llm = "LLM none (sentences chosen by word overlap)"
    else:
        llm = f"LLM {settings.llm_provider} ({settings.llm_model})"
    auth = "auth on" if settings.auth_enabled else "auth off"
    return f"database {describe_database(settings.database_url)}, {llm}, {auth}"


def _operation_id(route: APIRoute) -> str:
    # Stable ids for the generated frontend client: the endpoint function's name.
    return route.name


def create_app(
    settings: Settings | None = None,
    *,
    llm_http_client: openai.DefaultAsyncHttpxClient | None = None,
) -> FastAPI:
    """``llm_http_client`` replaces the LLM client's HTTP transport (custom TLS, proxies, or a
    test that records what goes over the wire)."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with open_services(settings, llm_http_client=llm_http_client) as services:
            app.state.services = services
            # The server logs the one "ready" line once the port is bound (server.py).
            logging.getLogger(__name__).debug(
                "app started (%s, storage %s)",
                describe_service(settings),
                "object store" if settings.storage_url else "local folder",
            )
            yield

    app = FastAPI(
        title="Citation highlight service",
        version=__version__,
        description="Highlights the sentences of cited chunks that support a chat answer, as PDF "
        "rectangles, with an explicit status and a plain page link for every citation.",
        lifespan=lifespan,
        generate_unique_id_function=_operation_id,
        # Swagger UI and the OpenAPI document are served by api/viewer.py (from local files,
        # with the auth check when tokens are configured); ReDoc would need a CDN.
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        # FastAPI's own OpenTelemetry spans would duplicate the request span of
        # api/middleware.py (which also covers CORS and error responses, and names routes as
        # the metrics and logs do) once a tracer provider is set; metrics are Prometheus'; and
        # core/tracing.py alone sets up exporters, even with FASTAPI_OTEL_AUTO_CONFIGURE=true.
        telemetry={"tracing": False, "metrics": False, "logs": False, "auto_configure": False},
    )
    install_error_handlers(app)
    # Per worker process (each has its own exporter thread); off unless OTEL_* ask for it.
    tracing.setup_from_environment()
    if settings.cors_allow_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_allow_origins,
            allow_methods=["GET", "POST", "PUT"],
            # Range: PDF.js asks for parts of the PDF once it reads Accept-Ranges (exposed
            # below), and a refused preflight would fail the page. X-Request-ID: a frontend
            # may send its own, to find the request in the service's log.
            allow_headers=["Authorization", "Content-Type", "Range", "If-None-Match", HEADER_ID],
            # What a browser script may read beyond the safelisted headers: the wait before
            # asking again, the id to quote, the cache validators and hit, the PDF's ranges.
            expose_headers=EXPOSED_HEADERS,
            max_age=600,
        )
    # Added last, so outermost but for Starlette's error middleware: it sees every request,
    # CORS preflights included, and its id is on every response the routes send.
    app.add_middleware(RequestContext)
    _include_routers(app, settings)
    _with_stream_event_schemas(app)
    return app
