"""A cap on the size of an LLM server's reply, held while the reply arrives.

A chat completion is buffered whole before the SDK parses it, so a server that answers with
megabytes (a runaway proxy, a broken model server) would have each of them in memory at once:
thirty concurrent 10 MB replies took the service to 812 MB. No reply can honestly be that big:
the model writes at most ``max_tokens`` tokens, so the cap is a generous bound on a token's JSON
text and the completion's envelope. Past it the reply is invalid output, and the connection is
closed after at most one network read beyond the cap.

The cap is an httpx response hook, so it holds for the default HTTP client and for one passed
in (custom TLS, proxies, a recorder). It applies only inside ``capped(...)``: other requests
sharing the HTTP client are left alone. The request asks for an unencoded reply, because a
compressed one is bounded on the wire but not once inflated; a server that compresses anyway is
refused.
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import httpx2

from app.llm.errors import LLMInvalidOutput

# JSON-escaped, a token is rarely over 30 bytes ("\u00e9" is 6 bytes for one character); a
# completion's envelope (ids, usage, a provider's extra fields) is a few kilobytes.
BYTES_PER_TOKEN = 128
ENVELOPE_BYTES = 256 * 1024
# Sent with every request; see the module docstring.
UNENCODED = {"Accept-Encoding": "identity"}

_cap: ContextVar[int | None] = ContextVar("llm_reply_cap", default=None)


def reply_cap(max_tokens: int) -> int:
    """The most bytes a completion of at most ``max_tokens`` tokens is allowed to take."""
    return ENVELOPE_BYTES + BYTES_PER_TOKEN * max_tokens


def _too_large(cap: int, size: str) -> LLMInvalidOutput:
    return LLMInvalidOutput(
        f"the LLM server's reply is larger than any answer could be ({size}; at most {cap} "
        "bytes are read)"
    )


@contextmanager
def capped(limit: int) -> Iterator[None]:
    """Replies received in this block (this task) may have at most ``limit`` bytes."""
    token = _cap.set(limit)
    try:
        yield
    finally:
        _cap.reset(token)


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, stream: httpx2.AsyncByteStream, cap: int) -> None:
        self._stream = stream
        self._cap = cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        async for chunk in self._stream:
            received += len(chunk)
            if received > self._cap:
                # Raised into httpx's read, which closes the response and its connection.
                raise _too_large(self._cap, f"over {received} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()

    @property
    def elapsed(self) -> datetime.timedelta | None:
        # httpx reads the response's elapsed time from its stream.
        return getattr(self._stream, "elapsed", None)


async def _check_reply(response: httpx2.Response) -> None:
    limit = _cap.get()
    if limit is None:
        return
    encoding = response.headers.get("content-encoding", "").strip().lower() or "identity"
    if encoding != "identity":
        raise LLMInvalidOutput(
            f"the LLM server compressed its reply ({encoding}) although it was asked not to"
        )
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit, f"{declared} bytes declared")
    if isinstance(response.stream, httpx2.AsyncByteStream):
        response.stream = _CappedStream(response.stream, limit)


def install(client: httpx2.AsyncClient) -> httpx2.AsyncClient:
    """``client`` with the cap's response hook (once, however many LLM clients share it)."""
    hooks = client.event_hooks
    if _check_reply not in hooks["response"]:
        hooks["response"] = [*hooks["response"], _check_reply]
        client.event_hooks = hooks
    return client
