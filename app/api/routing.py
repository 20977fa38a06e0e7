"""Routes that take a body read it themselves, in this order: the bearer token, from the headers
alone (a caller without one is refused before its body is read); the body, within the route's
own limit (api/body_limit.py); then, for a big JSON body, parsing and validation in a worker
thread. Then FastAPI's own handler runs, on the body already read.

FastAPI reads and parses a body before it solves a route's dependencies, so the auth
dependencies alone cannot refuse a caller before its body is in memory: with 20 anonymous 30 MB
bodies the server went from 217 MiB to 4.8 GiB and the event loop stalled for 17 s.

Off the loop, a big body is parsed and validated in one call, ``model_validate_json``:
``json.loads`` in a thread would not help, since it holds the GIL until it is done (an 8 MB body
stalled the loop 26 ms of its 29), while pydantic-core lets other threads run as it validates.
One body at a time per route group: more threads wanting the GIL would starve the loop more
(20 concurrent 6 MB PUTs stalled /healthz up to 620 ms with a thread each, 350-430 ms with one,
600-830 ms with none).

A route that takes a raw body (a PDF upload) says so with ``raw_body``: its media type, checked
from the headers before the body is read (415 otherwise), and its own limit from the settings.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from fastapi import APIRouter, Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError

from app.api.body_limit import BodyLimit, read_body
from app.api.deps import authorize_from_headers, get_services
from app.core.config import Settings
from app.core.errors import AppError, UnsupportedMediaType
from app.core.security import Scope

# Bodies up to this are parsed on the event loop as FastAPI does (a millisecond or two; the
# thread hop would cost more).
OFF_LOOP_BYTES = 256 * 1024
_RAW_BODY = "__raw_body__"
Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


@dataclass(frozen=True)
class RawBody:
    """A route's raw body: the media type it takes (and ``also``, others it takes as well: the
    route then looks at the bytes themselves) and its limit, read off the settings."""

    media_type: str
    limit: Callable[[Settings], BodyLimit]
    also: tuple[str, ...] = ()

    def check_media_type(self, request: Request) -> None:
        sent = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if sent != self.media_type and sent not in self.also:
            types = ", ".join((self.media_type, *self.also))
            asked = f"one of {types}" if self.also else f"{types} (Content-Type: {types})"
            error = UnsupportedMediaType(
                f"send the body as {asked}; it was sent as {sent or 'no Content-Type'}",
                details={"expected": types},
            )
            # The body is never read, so the connection cannot carry another request.
            error.headers = {"Connection": "close"}
            raise error


def raw_body(spec: RawBody) -> Callable[[Endpoint], Endpoint]:
    """Mark an endpoint as taking ``spec``'s raw body (it reads ``await request.body()``)."""

    def mark(endpoint: Endpoint) -> Endpoint:
        setattr(endpoint, _RAW_BODY, spec)
        return endpoint

    return mark


class GatedRoute(APIRoute):
    """A route whose body is read as the module says; ``limit`` and ``needs`` (the token scope,
    checked before the body is read) are set per route class by ``gated``."""

    limit: BodyLimit
    needs: Scope
    parsers: anyio.CapacityLimiter

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        limit, needs, parsers, model = self.limit, self.needs, self.parsers, self._body_model()
        raw: RawBody | None = getattr(self.endpoint, _RAW_BODY, None)

        async def gated(request: Request) -> Response:
            try:
                await authorize_from_headers(request, needs)
            except AppError as refused:
                # The body is never read, so the connection cannot carry another request: closed,
                # rather than left reading a body nobody wants.
                refused.headers = {**(refused.headers or {}), "Connection": "close"}
                raise
            own = limit
            if raw is not None:
                raw.check_media_type(request)
                own = raw.limit(get_services(request).settings)
            body = await read_body(request, own)
            request._body = body  # FastAPI's request.body() returns it without reading again
            if model is not None and len(body) > OFF_LOOP_BYTES and _is_json(request):
                try:
                    # request.json() returns this: FastAPI's validation then passes the model
                    # instance through instead of parsing and validating on the loop.
                    request._json = await anyio.to_thread.run_sync(
                        model.model_validate_json, body, limiter=parsers
                    )
                except ValidationError:
                    pass  # FastAPI parses it again and answers with its usual 422
            return await handler(request)

        return gated

    def _body_model(self) -> type[BaseModel] | None:
        """The model the whole body is, when it is one (not several embedded bodies)."""
        if self.body_field is None or getattr(self, "_embed_body_fields", True):
            return None
        annotation = self.body_field.field_info.annotation
        if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
            return annotation
        return None


def _is_json(request: Request) -> bool:
    # FastAPI parses a body as JSON only under these content types.
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return kind == "application/json" or (
        kind.startswith("application/") and kind.endswith("+json")
    )


# Every option a route was declared with, passed on unchanged to its gated copy.
_ROUTE_OPTIONS = [
    name
    for name in inspect.signature(APIRouter.add_api_route).parameters
    if name not in ("self", "path", "endpoint", "route_class_override")
]


def gated(router: APIRouter, limit: BodyLimit, needs: Scope) -> APIRouter:
    """A copy of ``router`` whose routes are GatedRoutes with this limit and token scope (with
    auth off every caller has the write scope). A copy per app, so apps built with other
    settings (tests build many) never share a limit."""

    class Route(GatedRoute):
        pass

    Route.limit, Route.needs, Route.parsers = limit, needs, anyio.CapacityLimiter(1)
    copy = APIRouter()
    for route in router.routes:
        if not isinstance(route, APIRoute):
            raise TypeError(f"{route!r} is not an API route; gate it another way")
        options = {name: getattr(route, name) for name in _ROUTE_OPTIONS}
        copy.add_api_route(route.path, route.endpoint, route_class_override=Route, **options)
    return copy
