"""POST /v2/highlights/batch end to end: real app, real database (SQLite and PostgreSQL), the
generated sample PDF, and the scripted OpenAI-compatible server over real HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from sqlalchemy import update

from app.db.session import transaction
from app.documents.models import Chunk
from app.services import open_services
from tests.api.helpers import (
    CHUNK_LIGATURES,
    CHUNK_MAIN,
    SAMPLE_ID,
    ingest_sample,
    similarity,
    text_under,
)
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.llm_server import ScriptedLLM, choose_by_words, completion, error

QUERY = "How much will the water programme cost and who pays?"
ANSWER = (
    "The programme will cost 12.5 billion shillings over three years; each county pays one "
    "third of the running costs [1]. The final figures show a deficit of 5.1 per cent [2]."
)


def llm_settings(database_url: str, pdf_root: Path, server: ScriptedLLM, **extra: Any) -> Any:
    return make_settings(
        database_url,
        pdf_root,
        llm_provider="vllm",
        llm_base_url=server.base_url,
        llm_model="scripted-model",
        **extra,
    )


def batch(*chunk_ids: str, answer: str = ANSWER) -> dict[str, Any]:
    return {
        "query": QUERY,
        "answer": answer,
        "citations": [{"chunk_id": c, "citation_id": str(i)} for i, c in enumerate(chunk_ids, 1)],
    }


async def post(settings: Any, body: dict[str, Any], path: str = "/v2/highlights/batch") -> Any:
    async with app_client(settings) as client:
        response = await client.post(path, json=body)
    assert response.status_code == 200, response.text
    return response.json()


async def test_llm_highlights_cover_the_chosen_sentences(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.chooser = choose_by_words("12.5 billion", "one third", "deficit")
    settings = llm_settings(database_url, pdf_root, scripted_llm)
    await ingest_sample(settings)
    data = await post(settings, batch(CHUNK_MAIN, CHUNK_LIGATURES))

    assert data["status"] == "complete"
    assert data["method"] == "llm"
    assert data["llm_tier"] == "json_schema"
    main, ligatures = data["results"]
    assert [main["citation_id"], ligatures["citation_id"]] == ["1", "2"]
    assert main["status"] == "highlighted"
    assert main["reason"] is None
    assert [h["sentence_id"] for h in main["highlights"]] == [6, 8]
    pdf = pdf_root / "sample" / "sample-assembly.pdf"
    for result in (main, ligatures):
        for h in result["highlights"]:
            assert result["page_start"] <= h["page"] <= result["page_end"]
            assert (h["page_width"], h["page_height"]) == (595.0, 842.0)
            assert all(r["x0"] < r["x1"] and r["y0"] < r["y1"] for r in h["rects"])
            assert similarity(text_under(pdf, h["rects"]), h["text"]) >= 90, h
    # Sentence 5 is hyphenated across a line end: one rect per line, three lines.
    assert len(main["highlights"][0]["rects"]) == 3
    assert ligatures["highlights"][0]["text"].startswith("The Committee on Finance")
    assert main["link"] == f"/v2/documents/{SAMPLE_ID}/pdf#page=1"
    (request,) = scripted_llm.requests
    assert "$defs" in request["response_format"]["json_schema"]["schema"]
    assert "guided_json" not in json.dumps(request)


async def test_sentence_across_a_page_break_gets_rects_on_both_pages(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.chooser = choose_by_words("Eleven bids")
    settings = llm_settings(database_url, pdf_root, scripted_llm)
    await ingest_sample(settings)
    data = await post(settings, batch(CHUNK_MAIN, answer="Eleven bids were received."))
    (highlight,) = data["results"][0]["highlights"]
    assert sorted({r["page"] for r in highlight["rects"]}) == [1, 2]
    assert highlight["page"] == 1


async def test_without_llm_the_lexical_selector_highlights(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    data = await post(settings, batch(CHUNK_MAIN))
    assert data["method"] == "lexical"
    assert data["llm_tier"] is None
    (result,) = data["results"]
    assert result["status"] == "highlighted"
    assert result["reason"] == "llm_disabled"
    assert 6 in [h["sentence_id"] for h in result["highlights"]]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (error(503, "down"), "llm_unavailable"),
        (completion("no json here"), "llm_invalid_output"),
        (completion('{"results": [', "length"), "llm_truncated"),
        (error(400, "prompt is too long for this model's context"), "llm_rejected"),
    ],
    ids=["down", "garbage", "truncated", "rejected"],
)
async def test_llm_failures_fall_back_to_lexical_with_a_reason(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM, reply: Any, reason: str
) -> None:
    scripted_llm.handler = lambda body: reply
    settings = llm_settings(database_url, pdf_root, scripted_llm, llm_max_retries=0)
    await ingest_sample(settings)
    data = await post(settings, batch(CHUNK_MAIN, "missing-chunk"))
    assert data["method"] == "lexical"
    assert data["status"] == "partial"
    main, missing = data["results"]
    assert main["status"] == "highlighted"
    assert main["reason"] == reason
    assert "word overlap" in main["message"]
    assert missing["status"] == "fallback"
    assert missing["reason"] == "chunk_not_found"
    assert missing["link"] is None


async def test_llm_choosing_nothing_is_no_match_with_a_link(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.chooser = lambda chunk_id, allowed, body: []
    settings = llm_settings(database_url, pdf_root, scripted_llm)
    await ingest_sample(settings)
    data = await post(settings, batch(CHUNK_MAIN))
    assert data["status"] == "fallback"
    assert data["method"] == "llm"
    (result,) = data["results"]
    assert (result["status"], result["reason"]) == ("no_match", "unsupported")
    assert (result["support"], result["support_score"]) == ("unsupported", 0.0)
    assert [c["support"] for c in result["claims"]] == ["unsupported"]
    assert result["link"] == f"/v2/documents/{SAMPLE_ID}/pdf#page=1"


async def put_chunk(settings: Any, chunk: dict[str, Any], doc_id: str = "custom") -> dict[str, Any]:
    body = {"source_path": "sample/sample-assembly.pdf", "chunks": [chunk]}
    async with app_client(settings) as client:
        response = await client.put(f"/v2/documents/{doc_id}", json=body)
    assert response.status_code == 201, response.text
    put: dict[str, Any] = response.json()
    return put


async def test_text_not_in_the_pdf_is_told_at_put_and_never_called_supported(
    database_url: str, pdf_root: Path
) -> None:
    """A chunk whose text is not in its PDF (a third of it is: "the programme will cost 12.5
    billion shillings") is told to the caller when it is stored, and its citations say so,
    with no verdict: it was not located before, and called supported."""
    settings = make_settings(database_url, pdf_root)
    invented = (
        "The programme will cost 12.5 billion shillings according to a report that the "
        "Auditor-General tabled in the Senate last spring."
    )
    put = await put_chunk(settings, {"id": "x1", "text": invented, "page_start": 1, "page_end": 2})
    (chunk,) = put["chunks"]
    assert (chunk["placement"], chunk["placed_share"]) == ("not_found", 0.0)
    assert put["placement"]["not_found"] == 1
    data = await post(settings, batch("x1"))
    (result,) = data["results"]
    assert (result["status"], result["reason"]) == ("no_match", "chunk_not_in_pdf")
    assert "not found in its document's PDF" in result["message"]
    assert (result["support"], result["highlights"]) == (None, [])
    assert [c["support"] for c in result["claims"]] == [None]
    assert result["link"] == "/v2/documents/custom/pdf#page=1"


async def test_a_chunk_stored_before_placing_whose_text_is_not_in_the_pdf_is_not_located(
    database_url: str, pdf_root: Path
) -> None:
    """A chunk stored before chunks were placed (no placement, its own text and given pages):
    answered from its own text as before, and a sentence the PDF does not print is not located,
    never guessed."""
    settings = make_settings(database_url, pdf_root)
    invented = (
        "The programme will cost 12.5 billion shillings according to a report that the "
        "Auditor-General tabled in the Senate last spring."
    )
    await put_chunk(settings, {"id": "x0", "text": invented, "page_start": 1, "page_end": 2})
    async with open_services(settings, command=True) as services:
        async with transaction(services.session_factory) as session:
            await session.execute(
                update(Chunk)
                .where(Chunk.id == "x0")
                .values(placement=None, own_text=None, source_start=None, source_end=None)
            )
    data = await post(settings, batch("x0"))
    (result,) = data["results"]
    assert (result["status"], result["reason"]) == ("no_match", "not_located")
    assert result["highlights"] == []


async def test_page_without_text_layer_is_reported(database_url: str, pdf_root: Path) -> None:
    """A chunk said to be on a page without text (a scan, OCR off): nothing to place it in,
    so it is kept unchecked with its pages, and its citations say why nothing is lit."""
    settings = make_settings(database_url, pdf_root)
    scanned = "The clerk read the petition on the scanned page into the record of the sitting."
    chunk = {"id": "scan", "text": scanned, "page_start": 3, "page_end": 3}
    put = await put_chunk(settings, chunk)
    assert put["chunks"][0]["placement"] == "unchecked"
    data = await post(settings, batch("scan"))
    (result,) = data["results"]
    assert (result["status"], result["reason"]) == ("fallback", "no_text_layer")
    assert result["link"] == "/v2/documents/custom/pdf#page=3"


async def test_missing_pdf_is_pdf_unavailable(database_url: str, pdf_root: Path) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    (pdf_root / "sample" / "sample-assembly.pdf").unlink()
    data = await post(settings, batch(CHUNK_MAIN))
    (result,) = data["results"]
    assert (result["status"], result["reason"]) == ("fallback", "pdf_unavailable")
    assert result["link"].endswith("/pdf#page=1")


async def test_legacy_path_answers_as_the_v2_path(database_url: str, pdf_root: Path) -> None:
    # Its links once carried the /api/v1 prefix, to routes that do not exist (404): links name
    # the service's own routes, and a proxy's path goes in HIGHLIGHT_PUBLIC_BASE_URL.
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    legacy = await post(settings, batch(CHUNK_MAIN), path="/api/v1/v2/highlights/batch")
    assert legacy["results"][0]["link"] == f"/v2/documents/{SAMPLE_ID}/pdf#page=1"
    assert legacy == await post(settings, batch(CHUNK_MAIN))


async def test_duplicate_citations_of_one_chunk_each_get_a_result(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    settings = llm_settings(database_url, pdf_root, scripted_llm)
    await ingest_sample(settings)
    # Without markers both citations are for the whole answer: one passage, asked once.
    unmarked = ANSWER.replace(" [1]", "").replace(" [2]", "")
    data = await post(settings, batch(CHUNK_MAIN, CHUNK_MAIN, answer=unmarked))
    assert [r["citation_id"] for r in data["results"]] == ["1", "2"]
    schema = scripted_llm.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["results"]["maxItems"] == 1
    assert data["results"][0]["highlights"] == data["results"][1]["highlights"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"query": "q", "answer": "a", "citations": []}, "citations"),
        ({"query": "q", "answer": "a", "citations": [{"chunk_id": "c"}], "x": 1}, "x"),
        ({"query": "q", "answer": "a", "citations": [{"chunk_id": "c", "page": 2}]}, "page"),
        ({"query": "q", "answer": "a" * 20_001, "citations": [{"chunk_id": "c"}]}, "answer"),
        ({"query": "", "answer": "a", "citations": [{"chunk_id": "c"}]}, "query"),
        ({"answer": "a", "citations": [{"chunk_id": "c"}]}, "query"),
    ],
    ids=[
        "empty-citations",
        "unknown-field",
        "unknown-citation-field",
        "oversized",
        "empty",
        "no-q",
    ],
)
async def test_bad_requests_get_a_clear_422(
    database_url: str, pdf_root: Path, body: dict[str, Any], fragment: str
) -> None:
    async with app_client(make_settings(database_url, pdf_root)) as client:
        response = await client.post("/v2/highlights/batch", json=body)
    assert response.status_code == 422
    error_body = response.json()["error"]
    assert error_body["code"] == "validation_error"
    assert fragment in error_body["message"]


async def test_configured_limits_are_enforced_with_422(database_url: str, pdf_root: Path) -> None:
    settings = make_settings(database_url, pdf_root, max_answer_chars=100)
    async with app_client(settings) as client:
        response = await client.post("/v2/highlights/batch", json=batch("c", answer="a" * 101))
    assert response.status_code == 422
    assert response.json()["error"]["message"] == (
        "answer has 101 characters; this service accepts at most 100"
    )


async def test_chunk_without_words_is_no_sentences(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    settings = llm_settings(database_url, pdf_root, scripted_llm)
    put = await put_chunk(
        settings, {"id": "dashes", "text": "— — … —", "page_start": 1, "page_end": 1}
    )
    assert put["chunks"][0]["placement"] == "unchecked"  # nothing to look for
    data = await post(settings, batch("dashes"))
    (result,) = data["results"]
    assert (result["status"], result["reason"]) == ("no_match", "no_sentences")
    # Nothing to ask about: the LLM is not called for a batch without sentences.
    assert scripted_llm.requests == []


async def test_unreachable_database_is_a_clear_503(pdf_root: Path) -> None:
    settings = make_settings("postgresql+asyncpg://nobody@127.0.0.1:9/none", pdf_root)
    async with app_client(settings) as client:
        response = await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))
        health = await client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "database_unavailable"
    assert health.status_code == 503
    assert health.json()["database"] == "unreachable"


async def test_pdf_replaced_after_ingest_is_not_guessed_on(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    from app.pdfs.sample import write_sample_pdf

    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    # Same name, other content: the stored chunks no longer describe this file.
    other = write_sample_pdf(tmp_path / "other.pdf")
    doc = pymupdf.open(other)
    doc[0].insert_text((72, 800), "A line added later.", fontname="helv", fontsize=9)
    doc.save(pdf_root / "sample" / "sample-assembly.pdf")
    doc.close()
    data = await post(settings, batch(CHUNK_MAIN))
    (result,) = data["results"]
    assert (result["status"], result["reason"]) == ("fallback", "pdf_changed")
    assert result["highlights"] == []
