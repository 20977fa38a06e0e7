"""POST /v2/highlights/stream over real HTTP (the service under uvicorn, read incrementally): the
lexical answer comes first when the LLM is slow, the LLM's answer replaces it, a summary ends."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from tests.api.helpers import CHUNK_LIGATURES, CHUNK_MAIN
from tests.api.test_highlights import batch
from tests.fixtures.live import LiveService, ingest_with_cli, live_service
from tests.fixtures.llm_server import ScriptedLLM, choose_by_words

LLM_DELAY_S = 4.0


@dataclass
class Event:
    name: str
    data: dict[str, Any]
    at: float  # monotonic time it arrived


def read_events(service: LiveService, body: dict[str, Any]) -> Iterator[Event]:
    """Parse the SSE wire format as it arrives (comments are keep-alive pings)."""
    with httpx.stream(
        "POST", f"{service.url}/v2/highlights/stream", json=body, timeout=60
    ) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        name, data = "message", []
        for line in response.iter_lines():
            if line.startswith(":"):
                continue
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data.append(line[len("data: ") :])
            elif line == "" and data:
                yield Event(name, json.loads("\n".join(data)), time.monotonic())
                name, data = "message", []


def assert_documented(service: LiveService, events: list[Event]) -> None:
    """Each event matches the stream's itemSchema in the service's own OpenAPI document, and no
    stream-wide ``schema`` contradicts it (schemathesis reads one beside an itemSchema as the
    schema of the whole stream, as OpenAPI 3.2 says)."""
    document = httpx.get(f"{service.url}/openapi.json").json()
    stream = document["paths"]["/v2/highlights/stream"]["post"]["responses"]["200"]["content"]
    media = stream["text/event-stream"]
    assert "schema" not in media, media.get("schema")
    item = {**media["itemSchema"], "components": document["components"]}
    payload = {
        **media["itemSchema"]["properties"]["data"]["contentSchema"],
        "components": document["components"],
    }
    for event in events:
        jsonschema.validate({"event": event.name, "data": json.dumps(event.data)}, item)
        jsonschema.validate(event.data, payload)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "HIGHLIGHT_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'stream.db'}",
        "HIGHLIGHT_PDF_ROOT": str(tmp_path / "pdfs"),
        "HIGHLIGHT_INDEX_CACHE_DIR": str(tmp_path / "cache"),
        **extra,
    }


@pytest.fixture
def slow_llm(scripted_llm: ScriptedLLM) -> ScriptedLLM:
    scripted_llm.chooser = choose_by_words("12.5 billion", "deficit")
    scripted_llm.slow_down(LLM_DELAY_S)
    return scripted_llm


@pytest.mark.slow
def test_lexical_first_then_the_llm_then_a_summary(
    tmp_path: Path, slow_llm: ScriptedLLM, sample_pdf: Path
) -> None:
    env = _env(
        tmp_path,
        HIGHLIGHT_LLM_PROVIDER="vllm",
        HIGHLIGHT_LLM_BASE_URL=slow_llm.base_url,
        HIGHLIGHT_LLM_MODEL="scripted-model",
        HIGHLIGHT_STREAM_PROVISIONAL_AFTER_S="0.3",
    )
    ingest_with_cli(env, sample_pdf, "sample")
    body = batch(CHUNK_MAIN, "not-ingested", CHUNK_LIGATURES)
    with live_service(tmp_path, env, "serve") as service:
        sent = time.monotonic()
        events = list(read_events(service, body))
        # The same request again: from the result cache, all final, at once.
        again = list(read_events(service, body))
        assert_documented(service, events + again)
        # Every id an event names can be fetched, provisional ones too (they were never stored
        # on a44369f, so a viewer link from a provisional event was dead).
        named = {
            h["highlight_id"]
            for e in events + again
            if e.name == "citation"
            for h in e.data["citation"]["highlights"]
        }
        for highlight_id in named:
            found = httpx.get(f"{service.url}/v2/highlights/{highlight_id}", timeout=10)
            assert found.status_code == 200, (highlight_id, found.text)
    names = [e.name for e in events]
    assert names[-1] == "summary"
    assert names.count("summary") == 1
    citations = [e for e in events if e.name == "citation"]
    # The unknown chunk needs nothing: it is the first event, already final.
    assert (citations[0].data["index"], citations[0].data["provisional"]) == (1, False)
    assert citations[0].data["citation"]["reason"] == "chunk_not_found"
    provisional = [e for e in citations if e.data["provisional"]]
    assert sorted(e.data["index"] for e in provisional) == [0, 2]
    for event in provisional:
        assert event.data["citation"]["reason"] == "llm_pending"
        assert event.data["citation"]["highlights"], "the provisional answer highlights already"
        # Incremental: before the LLM had answered at all.
        assert event.at - sent < LLM_DELAY_S, event.at - sent
    final = {e.data["index"]: e.data["citation"] for e in citations if not e.data["provisional"]}
    assert sorted(final) == [0, 1, 2]
    assert final[0]["reason"] is None
    assert final[2]["reason"] is None
    assert events[-1].at - sent >= LLM_DELAY_S
    summary = events[-1].data
    assert summary == {
        "status": "partial",
        "method": "llm",
        "llm_tier": "json_schema",
        "total": 3,
        "highlighted": 2,
        "cached": False,
    }
    assert len(slow_llm.requests) == 1
    assert [e.name for e in again] == ["citation"] * 3 + ["summary"]
    assert not any(e.data.get("provisional") for e in again if e.name == "citation")
    assert again[-1].data["cached"] is True
    assert again[-1].at - again[0].at < LLM_DELAY_S
    assert len(slow_llm.requests) == 1


@pytest.mark.slow
def test_without_an_llm_the_answer_is_final_at_once_and_bad_input_is_json(
    tmp_path: Path, sample_pdf: Path
) -> None:
    env = _env(tmp_path)
    ingest_with_cli(env, sample_pdf, "sample")
    with live_service(tmp_path, env, "serve") as service:
        events = list(read_events(service, batch(CHUNK_MAIN)))
        bad = httpx.post(
            f"{service.url}/v2/highlights/stream",
            json={"query": "q", "answer": "a", "citations": []},
        )
    assert [e.name for e in events] == ["citation", "summary"]
    (citation,) = [e.data for e in events if e.name == "citation"]
    assert citation["provisional"] is False
    assert citation["citation"]["reason"] == "llm_disabled"
    assert citation["citation"]["link"] == "/v2/documents/sample/pdf#page=1"
    assert bad.status_code == 422
    assert bad.headers["content-type"] == "application/json"
    assert bad.json()["error"]["code"] == "validation_error"


@pytest.mark.slow
def test_readers_who_leave_mid_stream_leave_no_error_behind(
    tmp_path: Path, sample_pdf: Path
) -> None:
    # A reader closing the chat while events are being written is routine, not a server error
    # (FastAPI's generator endpoints log an unhandled ExceptionGroup for it).
    env = _env(tmp_path)
    ingest_with_cli(env, sample_pdf, "sample")
    body = json.dumps(batch(*(f"unknown-{i}" for i in range(50)))).encode()
    with live_service(tmp_path, env, "serve") as service:
        host, port = service.url.removeprefix("http://").split(":")
        for _ in range(10):
            with socket.create_connection((host, int(port))) as conn:
                conn.sendall(
                    b"POST /v2/highlights/stream HTTP/1.1\r\nHost: t\r\n"
                    b"Content-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                assert conn.recv(64).startswith(b"HTTP/1.1 200")
        # The service still answers, and logged nothing alarming about the readers who left.
        assert httpx.get(f"{service.url}/healthz").status_code == 200
        time.sleep(0.5)
        log = service.output()
    assert "Traceback" not in log, log[-3000:]
    assert "unhandled error" not in log
