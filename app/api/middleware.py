"""Per request: its id, its metrics, its one log line and its trace span.

A plain ASGI middleware (Starlette's BaseHTTPMiddleware would buffer the event stream). The
request id is the caller's ``X-Request-ID`` when it is a sane token (at most 128 characters of
letters, digits and ``._:-``; anything else could forge log lines or blow up a log index), or a
new one; it is returned in the response's ``X-Request-ID`` and set in ``app.core.logs.REQUEST_ID``
for every log line of the request and for the LLM call, which sends it on.

The route is logged and labelled by its template (``/v2/documents/{document_id}``), never the
raw path or the query string: ids would make one metric series each, and a query string can
carry a link's signature; a path no route matched is ``<unmatched>``. The method is one of the
known ones (OpenTelemetry's list: RFC 9110's, PATCH and QUERY) or ``_OTHER``: a method is any
token a client cares to send, and each new one would add a series per route and status. So no
request can grow the metrics: their series are bounded by the routes, the known methods and
the statuses the service answers. Probes and scrapes are logged at DEBUG: a load balancer
asking every few seconds would drown the log.

The request's span follows OpenTelemetry's HTTP server conventions: named ``{method} {route}``
(``{method}`` when no route matched; ``HTTP`` stands for an unknown method), with
``http.request.method`` (``_OTHER`` and ``http.request.method_original`` for an unknown one),
``url.scheme``, ``url.path`` (never the query string), ``http.route`` when a route matched,
``http.response.status_code``; its status is an error for a 5xx answer only (a 4xx is the
client's error, not the server's).
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
KNOWN_METHODS = frozenset(
    {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "QUERY"}
)
OTHER_METHOD = "_OTHER"
QUIET_ROUTES = frozenset({"/healthz", "/livez", "/readyz", "/metrics"})


def method_of(scope: Scope) -> str:
    """The request's method as labelled and logged: a known method (case-sensitive, as HTTP
    methods are) or ``_OTHER``."""
    method = str(scope["method"])
    return method if method in KNOWN_METHODS else OTHER_METHOD


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


def _span_method(method: str) -> str:
    # OpenTelemetry's span name stands "HTTP" for a method it does not know.
    return "HTTP" if method == OTHER_METHOD else method


def _span_attributes(scope: Scope, method: str, request_id: str) -> tracing.Attributes:
    attributes = {
        "http.request.method": method,
        "url.scheme": str(scope.get("scheme", "http")),
        "url.path": str(scope.get("path", "")),
        "highlight.request_id": request_id,
    }
    if method == OTHER_METHOD:
        attributes["http.request.method_original"] = str(scope["method"])
    return attributes


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
        method = method_of(scope)
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
            _span_method(method),
            _span_attributes(scope, method, request_id) if tracing.enabled() else None,
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
        if route != UNMATCHED:
            span.update_name(f"{_span_method(method)} {route}")
            span.set_attribute("http.route", route)
        span.set_attribute("http.response.status_code", status)
        if status >= 500:
            tracing.set_error(span, str(status))
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
