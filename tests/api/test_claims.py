"""Claim-level highlights through POST /v2/highlights/batch and /stream: the real app, real
databases, the generated sample PDF, the scripted OpenAI-compatible server over real HTTP.

The sample's main chunk holds the water bill's cost ("12.5 billion shillings over three years")
and its tender ("Eleven bids were received ..."): an answer that cites it once for each must show
each citation its own sentence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.api.helpers import CHUNK_LIGATURES, CHUNK_MAIN, ingest_sample
from tests.api.test_highlights import llm_settings, post
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.llm_server import ScriptedLLM, choose_by_claim, completion, passages

QUERY = "What did the Minister say about the water bill?"
COST = "The programme will cost 12.5 billion shillings over three years"
BIDS = "Eleven bids were received and three firms were short-listed"
TWO_CLAIMS = f"{COST} [1]. {BIDS} [2]."


def body(answer: str, *citations: tuple[str, str | None], **extra: Any) -> dict[str, Any]:
    return {
        "query": QUERY,
        "answer": answer,
        "citations": [
            {"chunk_id": chunk, "citation_id": cid, **extra} if cid else {"chunk_id": chunk}
            for chunk, cid in citations
        ],
    }


def texts(result: dict[str, Any]) -> list[str]:
    return [h["display_text"] for h in result["highlights"]]


def assert_own_claims(data: dict[str, Any], answer: str) -> None:
    cost, bids = data["results"]
    for result, said, word in ((cost, COST, "12.5 billion"), (bids, BIDS, "Eleven bids")):
        (claim,) = result["claims"]
        assert claim["text"] == said
        assert answer[claim["start"] : claim["end"]] == said
        assert result["status"] == "highlighted"
        assert all(word in text for text in texts(result)), texts(result)
        assert all(h["claims"] == [0] for h in result["highlights"])
    assert not set(texts(cost)) & set(texts(bids))


async def test_one_chunk_cited_for_two_claims_shows_each_its_own_sentences_lexically(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    data = await post(settings, body(TWO_CLAIMS, (CHUNK_MAIN, "1"), (CHUNK_MAIN, "2")))
    assert data["method"] == "lexical"
    assert_own_claims(data, TWO_CLAIMS)


async def test_one_chunk_cited_for_two_claims_shows_each_its_own_sentences_by_the_llm(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.chooser = choose_by_claim
    settings = llm_settings(database_url, pdf_root, scripted_llm)
    await ingest_sample(settings)
    data = await post(settings, body(TWO_CLAIMS, (CHUNK_MAIN, "1"), (CHUNK_MAIN, "2")))
    assert data["method"] == "llm"
    assert_own_claims(data, TWO_CLAIMS)
    # The model was given the chunk twice, once per claim, its sentences written out once.
    (request,) = scripted_llm.requests
    assert [(p.chunk_id, p.claim) for p in passages(request)] == [
        (CHUNK_MAIN, COST),
        (CHUNK_MAIN, BIDS),
    ]
    assert request["messages"][-1]["content"].count("] Eleven bids were received") == 1


@pytest.mark.parametrize(
    "answer",
    [
        f"{COST} [1]. {BIDS} [2].",
        f"{COST}.[1] {BIDS}.[2]",
        f"{COST} [^1]. {BIDS} [^2].",
        f"{COST}【1】. {BIDS}【2】.",
        f"{COST}<sup>1</sup>. {BIDS}<sup>2</sup>.",
        f"{COST} [1, 3]. {BIDS} [2][3].",
        f"{COST} [1-1]. {BIDS} [2].",
    ],
)
async def test_marker_forms(database_url: str, pdf_root: Path, answer: str) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    data = await post(settings, body(answer, (CHUNK_MAIN, "1"), (CHUNK_MAIN, "2")))
    cost, bids = data["results"]
    assert [c["text"].rstrip(".") for c in cost["claims"]] == [COST]
    assert [c["text"].rstrip(".") for c in bids["claims"]] == [BIDS]
    assert texts(cost) != texts(bids)


async def test_an_explicit_marker_and_a_citation_cited_twice(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    answer = f"{COST} (Source A). {BIDS} (Source B). It was debated on Tuesday (Source A)."
    request = {
        "query": QUERY,
        "answer": answer,
        "citations": [
            {"chunk_id": CHUNK_MAIN, "citation_id": "a", "marker": "(Source A)"},
            {"chunk_id": CHUNK_MAIN, "citation_id": "b", "marker": "(Source B)"},
        ],
    }
    first, second = (await post(settings, request))["results"]
    assert [c["text"] for c in first["claims"]] == [COST, "It was debated on Tuesday"]
    assert [c["text"] for c in second["claims"]] == [BIDS]
    assert any("12.5 billion" in t for t in texts(first))
    # Each highlight names the claims (indexes into its citation's claims) it was chosen for.
    assert {i for h in first["highlights"] for i in h["claims"]} <= {0, 1}


async def test_without_markers_each_citation_supports_the_whole_answer(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    unmarked = f"{COST}. {BIDS}."
    data = await post(settings, body(unmarked, (CHUNK_MAIN, "1"), (CHUNK_MAIN, "2")))
    first, second = data["results"]
    assert first["claims"] == second["claims"] == []
    assert first["highlights"] == second["highlights"]
    assert all(h["claims"] == [] for h in first["highlights"])
    shown = " ".join(texts(first))
    assert "12.5 billion" in shown
    assert "Eleven bids" in shown
    # A citation without an id has no markers either.
    anonymous = await post(settings, body(TWO_CLAIMS, (CHUNK_MAIN, None)))
    assert anonymous["results"][0]["claims"] == []


async def test_display_text_reading_order_and_page_boxes(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    # The model names the sentence that crosses the page break first, then the hyphenated one.
    def crossing_first(body: dict[str, Any]) -> Any:
        return completion(json.dumps({"results": [[11, 6], [1]]}))

    scripted_llm.handler = crossing_first
    settings = llm_settings(database_url, pdf_root, scripted_llm)
    await ingest_sample(settings)
    request = body("The bill was debated and the final figures show a deficit.", (CHUNK_MAIN, "1"))
    request["citations"].append({"chunk_id": CHUNK_LIGATURES, "citation_id": "2"})
    main, ligatures = (await post(settings, request))["results"]
    hyphenated, crossing = main["highlights"]  # reading order, not the model's order
    assert [h["sentence_id"] for h in main["highlights"]] == [6, 11]
    assert "parlia- mentary" in hyphenated["text"]
    assert "parliamentary committee" in hyphenated["display_text"]
    assert hyphenated["text"] == request_text(hyphenated)
    # The sentence across the page break: one box per page, each around that page's lines.
    assert [b["page"] for b in crossing["boxes"]] == [1, 2]
    for box in crossing["boxes"]:
        lines = [r for r in crossing["rects"] if r["page"] == box["page"]]
        assert box["x0"] == min(r["x0"] for r in lines)
        assert box["y1"] == max(r["y1"] for r in lines)
    (ligature,) = ligatures["highlights"]
    assert "\ufb01" in ligature["text"]
    assert "final figures" in ligature["display_text"]
    assert "\ufb01" not in ligature["display_text"]


def request_text(highlight: dict[str, Any]) -> str:
    # The stored form: what start/end index in the chunk (a display form would shift them).
    assert highlight["end"] - highlight["start"] == len(highlight["text"])
    return str(highlight["text"])


async def test_the_stream_and_the_cache_carry_the_claims(database_url: str, pdf_root: Path) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    request = body(TWO_CLAIMS, (CHUNK_MAIN, "1"), (CHUNK_MAIN, "2"))
    batch = await post(settings, request)
    async with app_client(settings) as client:
        streamed = await client.post("/v2/highlights/stream", json=request)
        again = await client.post("/v2/highlights/batch", json=request)
    events = [
        json.loads(line[len("data: ") :])
        for line in streamed.text.splitlines()
        if line.startswith("data: ")
    ]
    citations = {e["index"]: e["citation"] for e in events if "citation" in e}
    summary = events[-1]
    assert summary["cached"] is True
    assert [citations[0]["claims"], citations[1]["claims"]] == [
        r["claims"] for r in batch["results"]
    ]
    assert [citations[0]["highlights"], citations[1]["highlights"]] == [
        r["highlights"] for r in batch["results"]
    ]
    assert again.json()["results"] == batch["results"]


async def test_a_marker_without_a_citation_id_still_finds_its_claim(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    request = {
        "query": QUERY,
        "answer": f"{COST} (A). {BIDS} (B).",
        "citations": [
            {"chunk_id": CHUNK_MAIN, "marker": "(A)"},
            {"chunk_id": CHUNK_MAIN, "marker": "(B)"},
        ],
    }
    first, second = (await post(settings, request))["results"]
    assert [c["text"] for c in first["claims"]] == [COST]
    assert [c["text"] for c in second["claims"]] == [BIDS]
    assert first["citation_id"] is None


async def test_a_blank_marker_is_refused(database_url: str, pdf_root: Path) -> None:
    settings = make_settings(database_url, pdf_root)
    request = body(TWO_CLAIMS, (CHUNK_MAIN, "1"), marker="   ")
    async with app_client(settings) as client:
        response = await client.post("/v2/highlights/batch", json=request)
    assert response.status_code == 422
    assert "marker" in response.text
