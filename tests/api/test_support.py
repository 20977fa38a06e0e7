"""Support verdicts through POST /v2/highlights/batch and /stream (issue 28): real app, real
databases, the generated sample PDF, and the scripted OpenAI-compatible server over real HTTP.

The sample's main chunk is the water bill debate (the programme's cost, who pays); its second
chunk is the finance committee's report (the deficit)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.api.helpers import CHUNK_LIGATURES, CHUNK_MAIN, SAMPLE_ID, ingest_sample, sse_events
from tests.api.test_highlights import llm_settings
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.llm_server import JSON, Passage, ScriptedLLM

QUERY = "How much will the water programme cost?"
COST = "The programme will cost 12.5 billion shillings over three years"
# Both chunks cited for the cost: only the debate says it.
BODY = {
    "query": QUERY,
    "answer": f"{COST} [1][2].",
    "citations": [
        {"chunk_id": CHUNK_MAIN, "citation_id": "1"},
        {"chunk_id": CHUNK_LIGATURES, "citation_id": "2"},
    ],
}


def _check_verdicts(data: dict[str, Any]) -> None:
    main, other = data["results"]
    assert (main["status"], main["support"]) == ("highlighted", "supported"), main
    assert main["support_score"] == 1.0
    assert [c["support"] for c in main["claims"]] == ["supported"]
    assert any("12.5 billion" in h["text"] for h in main["highlights"])
    assert (other["status"], other["reason"], other["support"]) == (
        "no_match",
        "unsupported",
        "unsupported",
    ), other
    assert other["support_score"] < 0.35
    assert other["highlights"] == []
    assert other["viewer_link"] is None
    # Nothing is lit, but the reader can still open the cited pages.
    assert other["link"] == f"/v2/documents/{SAMPLE_ID}/pdf#page=2"
    assert "Nothing in this chunk supports" in other["message"]
    assert "no LLM is configured" in other["message"]
    assert "&support=supported" in main["viewer_link"]


async def test_word_overlap_judges_each_citation_and_the_cache_keeps_it(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        first = await client.post("/v2/highlights/batch", json=BODY)
        again = await client.post("/v2/highlights/batch", json=BODY)
    _check_verdicts(first.json())
    assert again.headers["x-highlight-cache"] == "hit"
    assert again.json() == first.json()


def _by_verdict(passage: Passage, allowed: list[int], body: JSON) -> tuple[str, list[int]]:
    """A model that finds the cost in the debate but only part of it ("part") and nothing in
    the committee's report ("no")."""
    if passage.chunk_id == CHUNK_MAIN:
        return "part", allowed[:1]
    return "no", []


async def test_the_llm_verdict_reaches_batch_and_stream(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.chooser = _by_verdict
    settings = llm_settings(database_url, pdf_root, scripted_llm, stream_provisional_after_s=0.0)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        batch = (await client.post("/v2/highlights/batch", json=BODY)).json()
        scripted_llm.slow_down(0.5)  # the stream's provisional answer comes first
        streamed = await client.post(
            "/v2/highlights/stream", json={**BODY, "query": QUERY + " (streamed)"}
        )
    assert batch["method"] == "llm"
    main, other = batch["results"]
    assert (main["status"], main["support"], main["support_score"]) == (
        "highlighted",
        "partial",
        0.5,
    )
    assert [c["support"] for c in main["claims"]] == ["partial"]
    assert (other["status"], other["reason"], other["support"]) == (
        "no_match",
        "unsupported",
        "unsupported",
    )
    assert "no LLM" not in other["message"]
    events = sse_events(streamed.text)
    provisional = [d["citation"] for n, d in events if n == "citation" and d["provisional"]]
    final = [d["citation"] for n, d in events if n == "citation" and not d["provisional"]]
    # While the LLM thinks, word overlap's verdicts; then the model's.
    assert [c["support"] for c in provisional] == ["supported", "unsupported"], provisional
    assert provisional[1]["reason"] == "llm_pending"
    assert [c["support"] for c in final] == ["partial", "unsupported"], final
    assert final[1]["reason"] == "unsupported"
