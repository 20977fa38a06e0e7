"""The result cache (a conversation reopened answers without an LLM call), stable highlight ids,
highlights by id, and the contract additions (normalised rects, titles, absolute links)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pymupdf

from tests.api.helpers import CHUNK_LIGATURES, CHUNK_MAIN, SAMPLE_ID, ingest_sample
from tests.api.test_highlights import batch
from tests.api.test_highlights import llm_settings as scripted_settings
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.llm_server import ScriptedLLM, choose_by_words, error

SAMPLE = Path("sample") / "sample-assembly.pdf"


def llm_settings(database_url: str, pdf_root: Path, server: ScriptedLLM) -> Any:
    return scripted_settings(database_url, pdf_root, server, llm_max_retries=0)


async def test_a_repeated_batch_answers_from_the_cache_without_an_llm_call(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.chooser = choose_by_words("12.5 billion", "deficit")
    settings = llm_settings(database_url, pdf_root, scripted_llm)
    await ingest_sample(settings)
    body = batch(CHUNK_MAIN, CHUNK_LIGATURES)
    async with app_client(settings) as client:
        first = await client.post("/v2/highlights/batch", json=body)
        assert first.headers["x-highlight-cache"] == "miss"
        assert first.json()["method"] == "llm"
        assert len(scripted_llm.requests) == 1
        second = await client.post("/v2/highlights/batch", json=body)
    assert second.headers["x-highlight-cache"] == "hit"
    assert len(scripted_llm.requests) == 1, "the repeat must not ask the LLM again"
    assert second.json() == first.json()
    assert second.headers["etag"] == first.headers["etag"]
    assert second.headers["cache-control"] == "private, no-cache"
    # Another process (a restart, another worker) finds it too: the cache is in the database.
    async with app_client(settings) as client:
        third = await client.post("/v2/highlights/batch", json=body)
    assert third.headers["x-highlight-cache"] == "hit"
    assert len(scripted_llm.requests) == 1


async def test_a_changed_chunk_or_pdf_misses_the_cache(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM, tmp_path: Path
) -> None:
    settings = llm_settings(database_url, pdf_root, scripted_llm)
    document = {
        "source_path": str(SAMPLE),
        "chunks": [
            {
                "id": "k-1",
                "text": "Eleven bids were received and three firms were short-listed.",
                "page_start": 1,
                "page_end": 2,
            }
        ],
    }
    body = batch("k-1", answer="Eleven bids were received.")
    async with app_client(settings) as client:
        assert (await client.put("/v2/documents/k", json=document)).status_code == 201
        assert (await client.post("/v2/highlights/batch", json=body)).headers[
            "x-highlight-cache"
        ] == "miss"
        assert (await client.post("/v2/highlights/batch", json=body)).headers[
            "x-highlight-cache"
        ] == "hit"
        calls = len(scripted_llm.requests)

        # The chunk's text changes: its old answer must not be served.
        document["chunks"][0]["text"] = "Eleven bids were received by the committee."  # type: ignore[index]
        assert (await client.put("/v2/documents/k", json=document)).status_code == 200
        changed = await client.post("/v2/highlights/batch", json=body)
        assert changed.headers["x-highlight-cache"] == "miss"
        assert len(scripted_llm.requests) == calls + 1

        # The PDF is replaced on disk without re-ingest: the cached answer is not served either.
        pdf = pdf_root / SAMPLE
        original = pdf.read_bytes()
        doc = pymupdf.open(pdf)
        doc[0].insert_text((72, 800), "A line added later.", fontname="helv", fontsize=9)
        doc.save(tmp_path / "other.pdf")
        doc.close()
        shutil.copyfile(tmp_path / "other.pdf", pdf)
        stale = await client.post("/v2/highlights/batch", json=body)
        assert stale.headers["x-highlight-cache"] == "miss"
        assert stale.json()["results"][0]["reason"] == "pdf_changed"

        # Put back: the ingested content answers from the cache again.
        pdf.write_bytes(original)
        again = await client.post("/v2/highlights/batch", json=body)
        assert again.headers["x-highlight-cache"] == "hit"


async def test_answers_that_fell_back_are_not_cached(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    honest = scripted_llm.handler
    scripted_llm.handler = lambda body: error(503, "overloaded", "ServiceUnavailable")
    settings = llm_settings(database_url, pdf_root, scripted_llm)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        down = await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))
        assert down.json()["results"][0]["reason"] == "llm_unavailable"
        scripted_llm.handler = honest
        back = await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))
    # The LLM is back: its answer, not the fallback kept from when it was down.
    assert back.headers["x-highlight-cache"] == "miss"
    assert back.json()["method"] == "llm"


async def test_highlight_ids_are_stable_and_served_until_the_document_changes(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    settings = make_settings(database_url, pdf_root, result_cache_ttl_s=0)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        first = (await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))).json()
        again = (await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))).json()
        ids = [h["highlight_id"] for h in first["results"][0]["highlights"]]
        assert ids == [h["highlight_id"] for h in again["results"][0]["highlights"]]
        assert len(set(ids)) == len(ids) > 0
        stored = await client.get(f"/v2/highlights/{ids[0]}")
        assert stored.status_code == 200, stored.text
        data = stored.json()
        assert data["document_id"] == SAMPLE_ID
        assert data["pdf_url"] == f"/v2/documents/{SAMPLE_ID}/pdf?sha256={data['pdf_sha256']}"
        assert data["document_title"].startswith("Sample Assembly")
        # By id, a highlight is the same for every answer: without the claims of this one.
        assert data["highlight"] == {**first["results"][0]["highlights"][0], "claims": []}
        assert (await client.get("/v2/highlights/h_" + "0" * 32)).status_code == 404
        # Not the shape of an id: no such route (and GET /v2/highlights/batch stays a 405).
        assert (await client.get("/v2/highlights/not-an-id")).status_code == 404
        wrong = await client.get("/v2/highlights/batch")
        assert (wrong.status_code, wrong.headers["allow"]) == (405, "POST")

        # Re-ingested with other content: the old rectangles would be drawn on the wrong words.
        doc = pymupdf.open(pdf_root / SAMPLE)
        doc[0].insert_text((72, 800), "A line added later.", fontname="helv", fontsize=9)
        doc.save(tmp_path / "new.pdf")
        doc.close()
        shutil.copyfile(tmp_path / "new.pdf", pdf_root / SAMPLE)
        await ingest_sample(settings)
        gone = await client.get(f"/v2/highlights/{ids[0]}")
        # Its link was good: the document moved on (410, not "no such highlight").
        assert (gone.status_code, gone.json()["error"]["code"]) == (410, "pdf_changed")
        fresh = (await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))).json()
        new_ids = [h["highlight_id"] for h in fresh["results"][0]["highlights"]]
        assert not set(new_ids) & set(ids)


async def test_contract_additions(database_url: str, pdf_root: Path) -> None:
    settings = make_settings(
        database_url, pdf_root, public_base_url="https://highlights.example.org"
    )
    await ingest_sample(settings)
    async with app_client(settings) as client:
        data = (await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))).json()
        legacy = (await client.post("/api/v1/v2/highlights/batch", json=batch(CHUNK_MAIN))).json()
    (result,) = data["results"]
    assert result["link"] == f"https://highlights.example.org/v2/documents/{SAMPLE_ID}/pdf#page=1"
    assert legacy["results"][0]["link"] == result["link"]
    assert (
        result["document_title"] == "Sample Assembly - Official Report, Thursday 20 November 2025"
    )
    for highlight in result["highlights"]:
        for rect, norm in zip(highlight["rects"], highlight["normalized_rects"], strict=True):
            assert norm["page"] == rect["page"]
            assert abs(norm["x0"] * 595 - rect["x0"]) < 0.01
            assert abs(norm["y1"] * 842 - rect["y1"]) < 0.01
