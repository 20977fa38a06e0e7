"""Per request: its id, its metrics, its one log line and its trace span.

A plain ASGI middleware (Starlette's BaseHTTPMiddleware would buffer the event stream). The
request id is the caller's ``X-Request-ID`` when it is a sane token (at most 128 characters of
letters, digits and ``._:-``; anything else could forge log lines or blow up a log index), or a
new one; it is returned in the response's ``X-Request-ID`` and set in ``app.core.logs.REQUEST_ID``
for every log line of the request and for the LLM call, which sends it on.

The route is logged and labelled by its template (``/v2/documents/{document_id}``), never the
raw path or the query string: ids would make one metric series each, and a query string can
carry a link's signature. Probes and scrapes are logged at DEBUG: a load balancer asking every
few seconds would drown the log.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from functools import lru_cache

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core import metrics, tracing
from app.core.logs import REQUEST_ID

log = logging.getLogger("app.access")
HEADER = b"x-request-id"
_VALID_ID = re.compile(rb"[A-Za-z0-9._:-]{1,128}")
UNMATCHED = "<unmatched>"
QUIET_ROUTES = frozenset({"/healthz", "/livez", "/readyz", "/metrics"})


def request_id_from(headers: list[tuple[bytes, bytes]]) -> str:
    for name, value in headers:
        if name == HEADER and _VALID_ID.fullmatch(value):
            return value.decode("ascii")
    return uuid.uuid4().hex


@lru_cache(maxsize=256)
def _template(path: str) -> str:
    # "/v2/highlights/{highlight_id:highlight_id}" -> "/v2/highlights/{highlight_id}"
    return re.sub(r"\{(\w+):[^}]*\}", r"{\1}", path)


def route_of(scope: Scope, root_path: str = "") -> str:
    """The template of the route that answered: the route the router put on the scope, or for
    a mounted app (static files) its mount path, which the router appended to ``root_path``."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if isinstance(path, str) and path:
        return _template(path)
    mounted = str(scope.get("root_path", ""))[len(root_path) :]
    return f"{mounted}/{{path}}" if mounted else UNMATCHED


class RequestContext:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = scope.get("headers", [])
        request_id = request_id_from(headers)
        token = REQUEST_ID.set(request_id)
        method = scope["method"]
        root_path = scope.get("root_path", "")
        started = time.perf_counter()
        status = 500
        id_header = (HEADER, request_id.encode("ascii"))

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), id_header]
            await send(message)

        with tracing.span(
            method,
            {"http.request.method": method, "highlight.request_id": request_id},
            kind="server",
            context=tracing.extract(headers),
        ) as span:
            try:
                await self.app(scope, receive, send_with_id)
            except BaseException:
                status = 500
                self._finish(scope, root_path, method, status, started, span)
                # The request id stays set: the app's handler for unexpected errors, outside
                # this middleware, logs the traceback with it (each request has its own context).
                raise
            self._finish(scope, root_path, method, status, started, span)
        REQUEST_ID.reset(token)

    @staticmethod
    def _finish(
        scope: Scope, root_path: str, method: str, status: int, started: float, span: tracing.Span
    ) -> None:
        seconds = time.perf_counter() - started
        route = route_of(scope, root_path)
        metrics.HTTP_REQUESTS.labels(route, method, str(status)).inc()
        metrics.HTTP_DURATION.labels(route, method).observe(seconds)
        span.update_name(f"{method} {route}")
        span.set_attribute("http.route", route)
        span.set_attribute("http.response.status_code", status)
        log.log(
            logging.DEBUG if route in QUIET_ROUTES else logging.INFO,
            "%s %s %d %.1f ms",
            method,
            route,
            status,
            seconds * 1000,
            extra={
                "method": method,
                "route": route,
                "status": status,
                "duration_ms": round(seconds * 1000, 1),
            },
        )
