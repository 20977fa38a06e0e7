"""Observing the running service: /metrics after real batches against the scripted
OpenAI-protocol server, request ids from the caller to the LLM server, traces, JSON logs without
secrets or server folders, and the per-process bound on LLM calls in flight."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app.core.logs import configure_logging, redaction_of
from app.main import create_app
from tests.api.helpers import CHUNK_LIGATURES, CHUNK_MAIN, ingest_sample, sse_events
from tests.api.test_highlights import batch, llm_settings
from tests.core.test_metrics import sample
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.llm_server import ScriptedLLM

READ, WRITE = "read-token-0123456789", "write-token-0123456789"
API_KEY = "sk-observability-secret-key"


async def scrape(client: Any, **headers: str) -> str:
    response = await client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return str(response.text)


def delta(before: str, after: str, name: str, **labels: str) -> float:
    return sample(after, name, **labels) - sample(before, name, **labels)


async def test_metrics_count_a_real_batch_by_tier_tokens_status_and_cache(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    settings = llm_settings(database_url, pdf_root, scripted_llm)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        before = await scrape(client)
        first = (await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))).json()
        again = await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))
        assert again.headers["x-highlight-cache"] == "hit"
        after = await scrape(client)
    tier = first["llm_tier"]
    assert (first["method"], tier) == ("llm", "json_schema")
    (result,) = first["results"]
    assert delta(before, after, "highlight_llm_calls_total", tier=tier, outcome="ok") == 1
    # The scripted server's usage: 10 prompt and 5 completion tokens per reply.
    assert delta(before, after, "highlight_llm_tokens_total", tier=tier, kind="prompt") == 10
    assert delta(before, after, "highlight_llm_tokens_total", tier=tier, kind="completion") == 5
    assert delta(before, after, "highlight_llm_call_duration_seconds_count", tier=tier) == 1
    assert delta(before, after, "highlight_batches_total", method="llm", cache="miss") == 1
    assert delta(before, after, "highlight_batches_total", method="llm", cache="hit") == 1
    status = result["status"]
    assert delta(before, after, "highlight_citations_total", status=status, reason="none") == 2
    route = {"route": "/v2/highlights/batch", "method": "POST"}
    assert delta(before, after, "highlight_http_requests_total", **route, status="200") == 2
    assert delta(before, after, "highlight_http_request_duration_seconds_count", **route) == 2
    # The scrape before is counted by the scrape after, under its template, not its path.
    assert sample(
        after, "highlight_http_requests_total", route="/metrics", method="GET", status="200"
    )
    assert len(scripted_llm.requests) == 1


async def test_a_failing_tier_is_counted_by_outcome_and_downgrade(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    from tests.fixtures.llm_server import error

    honour = scripted_llm.honour_schema
    scripted_llm.handler = lambda body: (
        error(400, "response_format json_schema is not supported")
        if "response_format" in body
        else honour(body)
    )
    settings = llm_settings(database_url, pdf_root, scripted_llm)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        before = await scrape(client)
        data = (await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))).json()
        after = await scrape(client)
    assert data["method"] == "llm"
    assert data["llm_tier"] != "json_schema"
    calls = "highlight_llm_calls_total"
    assert delta(before, after, calls, tier="json_schema", outcome="unsupported") == 1
    assert delta(before, after, calls, tier=data["llm_tier"], outcome="ok") == 1
    downgrades = "highlight_llm_tier_downgrades_total"
    assert delta(before, after, downgrades, from_tier="json_schema", remembered="true") == 1


async def test_metrics_need_a_read_token_when_auth_is_on_and_are_not_in_the_document(
    database_url: str, pdf_root: Path
) -> None:
    settings = llm_settings(
        database_url, pdf_root, ScriptedLLM(), auth_read_tokens=[READ], auth_write_tokens=[WRITE]
    )
    async with app_client(settings) as client:
        assert (await client.get("/metrics")).status_code == 401
        bad = await client.get("/metrics", headers={"Authorization": "Bearer nope"})
        assert bad.status_code == 401
        await scrape(client, Authorization=f"Bearer {READ}")
        document = await client.get("/openapi.json", headers={"Authorization": f"Bearer {READ}"})
        assert "/metrics" not in document.json()["paths"]


async def test_metrics_can_be_switched_off(database_url: str, pdf_root: Path) -> None:
    settings = llm_settings(database_url, pdf_root, ScriptedLLM(), metrics_enabled=False)
    async with app_client(settings) as client:
        assert (await client.get("/metrics")).status_code == 404


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        ("chat-7f3a:turn.12_x-1", True),
        ("x" * 128, True),
        (None, False),
        ("", False),
        ("x" * 129, False),
        ("has space", False),
        ("new\u2028line", False),
    ],
)
async def test_the_request_id_is_echoed_or_made_and_reaches_the_llm_server(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM, sent: str | None, kept: bool
) -> None:
    settings = llm_settings(database_url, pdf_root, scripted_llm)
    await ingest_sample(settings)
    headers = {} if sent is None else {b"X-Request-ID": sent.encode("utf-8")}
    async with app_client(settings) as client:
        response = await client.post(
            "/v2/highlights/batch", json=batch(CHUNK_MAIN), headers=headers
        )
        assert response.status_code == 200
        probe = await client.get("/healthz", headers=headers)
    request_id = response.headers["x-request-id"]
    if kept:
        assert request_id == sent
    else:
        assert re.fullmatch(r"[0-9a-f]{32}", request_id)
    assert probe.headers["x-request-id"] != request_id or kept
    (llm_request,) = scripted_llm.requests
    assert llm_request["_headers"]["x-request-id"] == request_id
    assert "traceparent" not in llm_request["_headers"]  # tracing is off


async def test_a_traced_batch_continues_the_callers_trace_into_the_llm_server(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM, spans: InMemorySpanExporter
) -> None:
    settings = llm_settings(database_url, pdf_root, scripted_llm)
    await ingest_sample(settings)
    spans.clear()  # the ingest's statements are root spans of their own: not this request's
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    incoming = f"00-{trace_id}-00f067aa0ba902b7-01"
    async with app_client(settings) as client:
        response = await client.post(
            "/v2/highlights/batch", json=batch(CHUNK_MAIN), headers={"traceparent": incoming}
        )
    assert response.status_code == 200
    finished = {s.name: s for s in spans.get_finished_spans()}
    assert {
        "POST /v2/highlights/batch",
        "batch",
        "db.read",
        "choose",
        "chat scripted-model",
        "locate",
        "db.write",
    } <= set(finished)
    # Every span the request made, each SQL statement's too, continues the caller's trace.
    assert {f"{s.context.trace_id:032x}" for s in spans.get_finished_spans()} == {trace_id}
    chat = finished["chat scripted-model"]
    assert chat.attributes is not None
    assert chat.attributes["highlight.llm.outcome"] == "ok"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 10
    # The tokens are the LLM span's; the batch's own spans do not repeat them.
    assert finished["choose"].attributes == {
        "highlight.llm.outcome": "ok",
        "highlight.method": "llm",
        "highlight.llm.tier": "json_schema",
    }
    server = finished["POST /v2/highlights/batch"]
    assert server.attributes is not None
    assert server.attributes["http.route"] == "/v2/highlights/batch"
    assert server.attributes["http.response.status_code"] == 200
    # The LLM server is told the LLM call's span as the parent of whatever it traces.
    sent = scripted_llm.requests[0]["_headers"]["traceparent"]
    assert sent.split("-")[1:3] == [trace_id, f"{chat.context.span_id:016x}"]


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    stream = io.StringIO()
    yield stream
    for handler in root.handlers:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


async def test_json_log_lines_carry_the_request_and_no_secret_or_server_folder(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM, json_log: io.StringIO
) -> None:
    settings = llm_settings(
        database_url,
        pdf_root,
        scripted_llm,
        llm_api_key=API_KEY,
        auth_read_tokens=[READ],
        auth_write_tokens=[WRITE],
    )
    secrets, folders = redaction_of(settings)
    configure_logging("INFO", "json", stream=json_log, secrets=secrets, private_paths=folders)
    await ingest_sample(settings)
    auth = {"Authorization": f"Bearer {READ}", "X-Request-ID": "req-logged-1"}
    async with app_client(settings) as client:
        response = await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN), headers=auth)
        link = response.json()["results"][0]["link"]
        # A signed link's query string is a credential: only the route template is logged.
        assert (await client.get(link)).status_code == 200
        await client.get("/v2/documents/missing-doc", headers=auth)
    text = json_log.getvalue()
    lines = [json.loads(line) for line in text.splitlines()]
    requests = [line for line in lines if line["logger"] == "app.access"]
    post = next(line for line in requests if line["method"] == "POST")
    assert post["request_id"] == "req-logged-1"
    assert (post["route"], post["status"]) == ("/v2/highlights/batch", 200)
    assert post["duration_ms"] > 0
    (batch_line,) = [line for line in lines if line["message"].startswith("batch:")]
    assert batch_line["request_id"] == "req-logged-1"
    assert (batch_line["citations"], batch_line["method"], batch_line["cache"]) == (
        1,
        "llm",
        "miss",
    )
    assert batch_line["tier"] == "json_schema"
    assert sum(batch_line["statuses"].values()) == 1
    assert {"route": "/v2/documents/{document_id}", "status": 404}.items() <= requests[-1].items()
    for secret in (API_KEY, READ, WRITE, link.split("signature=")[1]):
        assert secret not in text
    assert str(pdf_root.parent) not in text
    assert "missing-doc" not in json.dumps(requests)


# Each chunk cited for what it says: the water bill debate for the cost, the finance committee's
# report (the ligature paragraph) for the deficit.
OWN_ANSWER = {
    CHUNK_MAIN: "The programme will cost 12.5 billion shillings over three years [1].",
    CHUNK_LIGATURES: "The final figures show a deficit of 5.1 per cent [1].",
}


def own_batch(chunk_id: str) -> dict[str, Any]:
    return batch(chunk_id, answer=OWN_ANSWER[chunk_id])


async def test_a_busy_replica_answers_lexically_with_llm_busy(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.slow_down(0.8)
    settings = llm_settings(
        database_url, pdf_root, scripted_llm, llm_max_in_flight=1, llm_queue_timeout_s=0.3
    )
    await ingest_sample(settings)
    async with app_client(settings) as client:
        before = await scrape(client)
        answers = await asyncio.gather(
            client.post("/v2/highlights/batch", json=own_batch(CHUNK_MAIN)),
            client.post("/v2/highlights/batch", json=own_batch(CHUNK_LIGATURES)),
        )
        after = await scrape(client)
        methods = sorted(a.json()["method"] for a in answers)
        assert methods == ["lexical", "llm"]
        busy = next(a.json() for a in answers if a.json()["method"] == "lexical")
        (result,) = busy["results"]
        assert (result["status"], result["reason"]) == ("highlighted", "llm_busy")
        assert "busy" in result["message"]
        assert len(scripted_llm.requests) == 1  # the refused batch never reached the LLM server
        # Not cached: the same batch again asks the LLM.
        retry = await client.post("/v2/highlights/batch", json=own_batch(result["chunk_id"]))
    assert retry.json()["method"] == "llm"
    assert len(scripted_llm.requests) == 2
    assert delta(before, after, "highlight_llm_queued_total") == 1
    assert delta(before, after, "highlight_llm_refused_total") == 1
    assert sample(after, "highlight_llm_in_flight") == 0
    assert (
        delta(before, after, "highlight_citations_total", status="highlighted", reason="llm_busy")
        == 1
    )


async def test_a_stream_on_a_busy_replica_ends_with_llm_busy(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.slow_down(1.0)
    settings = llm_settings(
        database_url,
        pdf_root,
        scripted_llm,
        llm_max_in_flight=1,
        llm_queue_timeout_s=0.2,
        stream_provisional_after_s=30,
    )
    await ingest_sample(settings)
    async with app_client(settings) as client:

        async def stream_later() -> Any:
            await asyncio.sleep(0.3)  # the batch holds the only slot by then
            return await client.post("/v2/highlights/stream", json=own_batch(CHUNK_LIGATURES))

        held, streamed = await asyncio.gather(
            client.post("/v2/highlights/batch", json=own_batch(CHUNK_MAIN)), stream_later()
        )
    assert held.json()["method"] == "llm"
    events = sse_events(streamed.text)
    (citation,) = [data["citation"] for name, data in events if name == "citation"]
    assert (citation["status"], citation["reason"]) == ("highlighted", "llm_busy")
    assert events[-1][0] == "summary"
    assert events[-1][1]["method"] == "lexical"


async def test_a_deadline_hit_is_counted_and_the_llm_call_cancelled(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.slow_down(3)
    settings = llm_settings(database_url, pdf_root, scripted_llm, batch_deadline_s=0.5)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        before = await scrape(client)
        data = (await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))).json()
        after = await scrape(client)
    assert data["results"][0]["reason"] == "llm_unavailable"
    assert delta(before, after, "highlight_batch_deadline_hits_total") == 1
    calls = "highlight_llm_calls_total"
    assert delta(before, after, calls, tier="json_schema", outcome="cancelled") == 1
    assert sample(after, "highlight_llm_in_flight") == 0


async def test_routes_are_labelled_by_template_so_ids_do_not_make_series(
    database_url: str, pdf_root: Path
) -> None:
    settings = llm_settings(database_url, pdf_root, ScriptedLLM())
    async with app_client(settings) as client:
        before = await scrape(client)
        for document_id in ("doc-1", "doc-2", "doc-3"):
            assert (await client.get(f"/v2/documents/{document_id}")).status_code == 404
        assert (await client.get("/no/such/path")).status_code == 404
        assert (await client.get("/viewer/assets/viewer.css")).status_code == 200
        after = await scrape(client)
    count = "highlight_http_requests_total"
    document = {"route": "/v2/documents/{document_id}", "method": "GET", "status": "404"}
    assert delta(before, after, count, **document) == 3
    assert delta(before, after, count, route="<unmatched>", method="GET", status="404") == 1
    assert (
        delta(before, after, count, route="/viewer/assets/{path}", method="GET", status="200") == 1
    )
    assert "doc-1" not in after
    assert "/no/such/path" not in after


async def test_a_batch_cancelled_while_waiting_for_a_slot_does_not_keep_it(
    scripted_llm: ScriptedLLM,
) -> None:
    from app.highlights.choosing import SentenceChooser
    from app.highlights.schemas import HighlightBatchRequest
    from app.llm.client import StructuredClient
    from app.llm.providers import build_profile
    from app.selection.sentences import split_sentences

    scripted_llm.slow_down(0.5)
    llm = StructuredClient(
        base_url=scripted_llm.base_url,
        model="scripted-model",
        api_key="",
        profile=build_profile("vllm", tiers=["json_schema"], chat_template_kwargs={}),
        max_retries=0,
    )
    chooser = SentenceChooser(llm, 3, max_in_flight=1, queue_timeout_s=30)
    request = HighlightBatchRequest.model_validate(batch("c1"))
    sentences = {"c1": split_sentences("The programme will cost 12.5 billion. It is paid.")}
    try:
        holder = asyncio.ensure_future(chooser.choose(request, sentences, {"c1": [None]}, 30))
        await asyncio.sleep(0.1)
        waiter = asyncio.ensure_future(chooser.choose(request, sentences, {"c1": [None]}, 30))
        await asyncio.sleep(0.1)
        waiter.cancel()  # a stream's reader left while it waited
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert (await holder).method == "llm"
        # The slot came back: the next batch gets it without waiting.
        after = await asyncio.wait_for(
            chooser.choose(request, sentences, {"c1": [None]}, 30), timeout=5
        )
        assert after.method == "llm"
    finally:
        await llm.close()
    assert len(scripted_llm.requests) == 2


async def test_an_unexpected_error_is_answered_with_its_request_id(
    sqlite_template: Path, tmp_path: Path, pdf_root: Path
) -> None:
    # A bug's 500 is sent by Starlette's outermost middleware, outside the one that adds the
    # header to every other response: the reader's bug report must still carry the id the log
    # line of the traceback has.
    database = tmp_path / "highlight.db"
    shutil.copyfile(sqlite_template, database)
    app = create_app(make_settings(f"sqlite+aiosqlite:///{database}", pdf_root))

    @app.get("/v2/boom", include_in_schema=False)
    async def boom() -> None:
        raise RuntimeError("boom")

    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            response = await client.get("/v2/boom", headers={"X-Request-ID": "bug-report-7"})
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "internal_error"
    assert response.headers["x-request-id"] == "bug-report-7"
