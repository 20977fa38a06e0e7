"""Refuse request bodies larger than ``max_request_bytes`` with a 413, before anything parses them.

A declared Content-Length over the limit is refused at once. A body without one (chunked) is
read up to the limit and then refused, so memory stays bounded either way; a body within the limit
is handed to the app unchanged. Later ``receive`` calls go to the server again, so the app still
sees the client disconnect.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.errors import ErrorCode, error_response

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class BodySizeLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(
            413,
            ErrorCode.payload_too_large,
            f"the request body is larger than this service accepts ({self.max_bytes} bytes, "
            "HIGHLIGHT_MAX_REQUEST_BYTES); send fewer or smaller chunks per request",
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)
