"""An LLM reply larger than any answer could be is invalid output, and is cut off while it arrives:
the client never holds more than the cap (plus one network read) of it, whatever the server
sends or declares. Against the scripted OpenAI-protocol server, over real sockets."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from app.llm.client import StructuredClient
from app.llm.errors import LLMInvalidOutput
from app.llm.reply_cap import BYTES_PER_TOKEN, ENVELOPE_BYTES, reply_cap
from tests.api.helpers import CHUNK_LIGATURES, CHUNK_MAIN, ingest_sample
from tests.api.test_highlights import batch, post
from tests.api.test_llm_faults import settings_for
from tests.fixtures.llm_server import Reply, ScriptedLLM, completion, huge_completion
from tests.llm.test_client import ask, make_client

HUGE = 10 * 1024 * 1024
# httpcore reads a response in pieces of at most this many bytes.
NETWORK_READ = 64 * 1024


class _Counted(httpx2.AsyncByteStream):
    def __init__(self, stream: httpx2.AsyncByteStream, counts: list[int]) -> None:
        self._stream = stream
        self._counts = counts
        self._index = len(counts)
        counts.append(0)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            self._counts[self._index] += len(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


class CountingTransport(httpx2.AsyncHTTPTransport):
    """The real transport, counting the body bytes each response hands the client."""

    def __init__(self) -> None:
        super().__init__()
        self.received: list[int] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await super().handle_async_request(request)
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _Counted(response.stream, self.received)
        return response


def counting_client(
    server: ScriptedLLM, **kwargs: Any
) -> tuple[StructuredClient, CountingTransport]:
    transport = CountingTransport()
    http = openai.DefaultAsyncHttpxClient(transport=transport)
    return make_client(server, http_client=http, **kwargs), transport


def test_the_cap_is_a_generous_bound_on_what_max_tokens_allows() -> None:
    assert reply_cap(1024) == ENVELOPE_BYTES + 1024 * BYTES_PER_TOKEN
    # The default (1024 tokens): far above any real reply, far below the 10 MB that hurt.
    assert 100_000 < reply_cap(1024) < 1_000_000


async def test_a_huge_reply_is_cut_off_while_it_arrives(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.handler = lambda body: huge_completion(HUGE)
    client, transport = counting_client(scripted_llm, max_tokens=1024)
    tracemalloc.start()
    try:
        with pytest.raises(LLMInvalidOutput, match="larger than any answer could be"):
            await ask(client)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        await client.close()
    cap = reply_cap(1024)
    # One request per tier, each given up within a network read of the cap.
    assert len(transport.received) == len(scripted_llm.requests) == 3
    assert all(cap < received <= cap + NETWORK_READ for received in transport.received)
    # Buffering one 10 MB reply would have cost more than 10 MB; the cap costs well under 4.
    assert peak < 4 * 1024 * 1024, peak


async def test_a_declared_huge_length_is_refused_before_the_body(
    scripted_llm: ScriptedLLM,
) -> None:
    scripted_llm.handler = lambda body: huge_completion(HUGE, declare_length=True)
    client, transport = counting_client(scripted_llm)
    try:
        with pytest.raises(LLMInvalidOutput, match="bytes declared"):
            await ask(client)
    finally:
        await client.close()
    assert transport.received == [0, 0, 0]


async def test_a_reply_within_the_cap_is_served_and_one_past_it_is_not(
    scripted_llm: ScriptedLLM,
) -> None:
    client = make_client(scripted_llm, max_reply_bytes=4000, max_retries=0)
    try:
        assert (await ask(client)).strategy == "json_schema"
        honest = scripted_llm.honour_schema

        def padded(body: dict[str, Any]) -> Reply:
            reply = honest(body)
            assert isinstance(reply.body, dict)
            reply.body["padding"] = "x" * 4000
            return reply

        scripted_llm.handler = padded
        with pytest.raises(LLMInvalidOutput):
            await ask(client)
    finally:
        await client.close()


async def test_the_request_asks_for_an_unencoded_reply_and_a_compressed_one_is_refused(
    scripted_llm: ScriptedLLM,
) -> None:
    # 4 MB of padding squeezes into a few kilobytes: under the cap on the wire, far over it
    # inflated, which is why compression is declined rather than counted.
    content = json.dumps(completion("x" * 4_000_000).body).encode()
    squeezed = gzip.compress(content)
    assert len(squeezed) < reply_cap(1024) < len(content)
    scripted_llm.handler = lambda body: Reply(
        pieces=iter([squeezed]),
        declared_length=len(squeezed),
        headers={"content-encoding": "gzip"},
    )
    client = make_client(scripted_llm)
    try:
        with pytest.raises(LLMInvalidOutput, match="compressed"):
            await ask(client)
    finally:
        await client.close()
    assert {r["_headers"]["accept-encoding"] for r in scripted_llm.requests} == {"identity"}


async def test_other_requests_on_a_shared_http_client_are_not_capped(
    scripted_llm: ScriptedLLM,
) -> None:
    http = openai.DefaultAsyncHttpxClient()
    first = make_client(scripted_llm, http_client=http)
    make_client(scripted_llm, http_client=http)
    assert len(http.event_hooks["response"]) == 1, "the hook is installed once per HTTP client"
    scripted_llm.handler = lambda body: huge_completion(HUGE // 4)
    response = await http.post(f"{scripted_llm.base_url}/chat/completions", json={})
    assert len(response.content) > HUGE // 4
    await first.close()


@pytest.mark.slow  # ingests in the PDF worker processes
@pytest.mark.parametrize("declare_length", [False, True])
async def test_the_batch_falls_back_to_the_lexical_selector_on_a_huge_reply(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM, declare_length: bool
) -> None:
    scripted_llm.handler = lambda body: huge_completion(HUGE, declare_length)
    settings = settings_for(database_url, pdf_root, scripted_llm)
    await ingest_sample(settings)
    data = await post(settings, batch(CHUNK_MAIN, CHUNK_LIGATURES))
    assert data["method"] == "lexical"
    assert [r["reason"] for r in data["results"]] == ["llm_invalid_output"] * 2
