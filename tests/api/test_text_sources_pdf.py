"""Selectors on PDF highlights: the generated sample PDF ingested, a batch (no LLM) on SQLite and
PostgreSQL, and each highlight's TextQuoteSelector and TextPositionSelector finding its sentence
in the PDF's document text (its own text, the chunks placed in it, GET /v2/documents/{id}/text);
an answer cached before selectors existed is served with them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import select, update

from app.alignment.selectors import TextQuote, resolve_quote
from app.db.session import transaction
from app.highlights.models import CachedResult, StoredHighlight
from app.services import open_services
from tests.api.helpers import CHUNK_LIGATURES, CHUNK_MAIN, SAMPLE_ID, ingest_sample
from tests.fixtures.app import app_client, make_settings

ANSWER = (
    "The programme will cost 12.5 billion shillings over three years [1]. The final figures "
    "show a deficit [2]."
)
BATCH = {
    "query": "What does the water programme cost?",
    "answer": ANSWER,
    "citations": [
        {"chunk_id": CHUNK_MAIN, "citation_id": "1"},
        {"chunk_id": CHUNK_LIGATURES, "citation_id": "2"},
    ],
}


def check(results: list[dict[str, Any]], text: str) -> int:
    checked = 0
    for result in results:
        assert result["source_format"] == "pdf"
        for h in result["highlights"]:
            quote, position = h["selectors"]
            exact = TextQuote(quote["exact"], quote["prefix"], quote["suffix"])
            assert resolve_quote(text, exact) == (position["start"], position["end"])
            assert text[position["start"] : position["end"]] == h["text"]
            assert h["text_fragment"] is None
            checked += 1
    return checked


async def test_pdf_highlights_carry_selectors_into_the_document_text(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        response = await client.post("/v2/highlights/batch", json=BATCH)
        assert response.status_code == 200, response.text
        body = (await client.get(f"/v2/documents/{SAMPLE_ID}/text")).json()
        document = (await client.get(f"/v2/documents/{SAMPLE_ID}?include_text=true")).json()
    # The PDF's own text: its own chunks are stretches of it, and its blocks its paragraphs.
    assert all(c["text"] in body["text"] for c in document["chunks"])
    paragraphs = [body["text"][b["start"] : b["end"]] for b in body["blocks"]]
    assert "\n\n".join(paragraphs) == body["text"]
    assert all(p.strip() and "\n\n" not in p for p in paragraphs)
    assert check(response.json()["results"], body["text"]) >= 2


async def test_an_answer_cached_without_selectors_is_served_with_them(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        first = (await client.post("/v2/highlights/batch", json=BATCH)).json()
    # The cached row as a release before selectors wrote it: no selectors, no text_fragment.
    async with open_services(settings, command=True) as services:
        async with transaction(services.session_factory) as session:
            [(key, cached)] = (
                await session.execute(select(CachedResult.key, CachedResult.response))
            ).all()
            parsed = json.loads(cached)
            for result in parsed["results"]:
                for h in result["highlights"]:
                    del h["selectors"], h["text_fragment"]
            old = json.dumps(parsed)
            await session.execute(
                update(CachedResult).where(CachedResult.key == key).values(response=old)
            )
    async with app_client(settings) as client:
        again = await client.post("/v2/highlights/batch", json=BATCH)
        text = (await client.get(f"/v2/documents/{SAMPLE_ID}/text")).json()["text"]
    assert again.headers["X-Highlight-Cache"] == "hit"
    assert again.json()["results"] == first["results"]
    assert check(again.json()["results"], text) >= 2


async def test_a_highlight_stored_without_selectors_is_served_with_them(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        first = (await client.post("/v2/highlights/batch", json=BATCH)).json()
    highlight = first["results"][0]["highlights"][0]
    async with open_services(settings, command=True) as services:
        async with transaction(services.session_factory) as session:
            row = await session.get(StoredHighlight, highlight["highlight_id"])
            assert row is not None
            data = json.loads(row.data)
            del data["selectors"], data["text_fragment"]
            row.data = json.dumps(data)
    async with app_client(settings) as client:
        stored = await client.get(f"/v2/highlights/{highlight['highlight_id']}")
        text = (await client.get(f"/v2/documents/{SAMPLE_ID}/text")).json()["text"]
    assert stored.status_code == 200, stored.text
    served = stored.json()["highlight"]
    assert served["selectors"] == highlight["selectors"]
    assert check([{"source_format": "pdf", "highlights": [served]}], text) == 1


async def test_a_stored_highlight_keeps_its_place_when_an_earlier_chunk_changes(
    database_url: str, pdf_root: Path
) -> None:
    # The same PDF put again with an earlier chunk's text longer (words the PDF does not print):
    # the document's text is the PDF's own, so no offset moves (it moved every one when the
    # text was the chunks joined); the highlight read by id says the same as the batch.
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    batch = {**BATCH, "citations": [{"chunk_id": CHUNK_LIGATURES, "citation_id": "2"}]}
    async with app_client(settings) as client:
        first = (await client.post("/v2/highlights/batch", json=batch)).json()
        document = (await client.get(f"/v2/documents/{SAMPLE_ID}?include_text=true")).json()
        chunks = [
            {k: c[k] for k in ("id", "text", "page_start", "page_end")} for c in document["chunks"]
        ]
        chunks[0]["text"] = "Twenty-two more chars. "[:22] + chunks[0]["text"]
        put = await client.put(
            f"/v2/documents/{SAMPLE_ID}",
            json={
                "source_path": document["source_path"],
                "title": document["title"],
                "chunks": chunks,
            },
        )
        assert put.status_code in (200, 201), put.text
        again = (await client.post("/v2/highlights/batch", json=batch)).json()
        text = (await client.get(f"/v2/documents/{SAMPLE_ID}/text")).json()["text"]
        highlight = again["results"][0]["highlights"][0]
        stored = await client.get(f"/v2/highlights/{highlight['highlight_id']}")
    assert stored.status_code == 200, stored.text
    assert first["results"][0]["highlights"][0]["highlight_id"] == highlight["highlight_id"]
    old = first["results"][0]["highlights"][0]["selectors"][1]
    assert highlight["selectors"][1]["start"] == old["start"]
    assert stored.json()["highlight"]["selectors"] == highlight["selectors"]
    assert check(again["results"], text) >= 1
