"""CitationResult.pdf_url: the document's PDF as its own field, so a frontend never cuts
``#page=N`` off ``link``. The same URL as ``link`` without the fragment (one signature for both),
relative or absolute as ``link`` is, null exactly when ``link`` is; in the batch, the stream and
cached answers, including answers cached before the field existed."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.api.helpers import CHUNK_LIGATURES, CHUNK_MAIN, SAMPLE_ID, ingest_sample, sse_events
from tests.api.test_highlights import batch
from tests.fixtures.app import app_client, make_settings

READ = "reader-token-1"
UNKNOWN = "no-such-chunk"
BODY = batch(CHUNK_MAIN, CHUNK_LIGATURES, UNKNOWN)


def _consistent(result: dict[str, Any]) -> str | None:
    """pdf_url, after checking it is link without its page (both null for an unknown chunk)."""
    pdf_url, link = result["pdf_url"], result["link"]
    if result["document_id"] is None:
        assert (pdf_url, link) == (None, None), result
        return None
    page = result["highlights"][0]["page"] if result["highlights"] else result["page_start"]
    assert "#" not in pdf_url
    assert link == f"{pdf_url}#page={page}"
    return str(pdf_url)


async def _opens_the_pdf(client: httpx.AsyncClient, url: str) -> None:
    opened = await client.get(url)  # no token: with auth on, the signature alone opens it
    assert opened.status_code == 200, opened.text
    assert opened.headers["content-type"] == "application/pdf"
    assert opened.content.startswith(b"%PDF")


async def _stream_urls(client: httpx.AsyncClient, headers: dict[str, str]) -> list[str | None]:
    stream = await client.post("/v2/highlights/stream", json=BODY, headers=headers)
    assert stream.status_code == 200, stream.text
    events = [data for name, data in sse_events(stream.text) if name == "citation"]
    return [_consistent(event["citation"]) for event in sorted(events, key=lambda e: e["index"])]


async def test_pdf_url_is_the_link_without_its_page(database_url: str, pdf_root: Path) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        answer = await client.post("/v2/highlights/batch", json=BODY)
        legacy = await client.post("/api/v1/v2/highlights/batch", json=BODY)
        urls = [_consistent(r) for r in answer.json()["results"]]
        assert urls == [f"/v2/documents/{SAMPLE_ID}/pdf"] * 2 + [None]
        assert [_consistent(r) for r in legacy.json()["results"]] == urls
        assert await _stream_urls(client, {}) == urls
        await _opens_the_pdf(client, str(urls[0]))


async def test_pdf_url_is_absolute_with_a_public_base_url(
    database_url: str, pdf_root: Path
) -> None:
    base = "https://highlights.example.org/citations"  # behind a proxy, under a path
    settings = make_settings(database_url, pdf_root, public_base_url=base)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        answer = await client.post("/v2/highlights/batch", json=BODY)
        urls = [_consistent(r) for r in answer.json()["results"]]
        assert urls == [f"{base}/v2/documents/{SAMPLE_ID}/pdf"] * 2 + [None]
        assert await _stream_urls(client, {}) == urls
        # What the proxy passes on: the path below the base.
        await _opens_the_pdf(client, str(urls[0]).removeprefix(base))


async def test_with_auth_on_pdf_url_is_signed_and_opens_the_pdf_without_a_token(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root, auth_read_tokens=[READ])
    await ingest_sample(settings)
    token = {"authorization": f"Bearer {READ}"}
    async with app_client(settings) as client:
        answer = await client.post("/v2/highlights/batch", json=BODY, headers=token)
        assert answer.status_code == 200, answer.text
        urls = [_consistent(r) for r in answer.json()["results"]]
        assert urls[2] is None
        for url in urls[:2]:
            signed = rf"/v2/documents/{SAMPLE_ID}/pdf\?expires=\d+&signature=[\w-]+"
            assert re.fullmatch(signed, str(url)), url
            await _opens_the_pdf(client, str(url))
        for url in (await _stream_urls(client, token))[:2]:
            await _opens_the_pdf(client, str(url))
        unsigned = await client.get(f"/v2/documents/{SAMPLE_ID}/pdf")
        assert unsigned.status_code == 401


async def _strip_pdf_url_from_the_cache(database_url: str) -> int:
    """Make every cached answer look as one stored before pdf_url existed; how many there were.
    Links are never cached: the stored field must be null."""
    engine = create_async_engine(database_url)
    try:
        async with engine.begin() as conn:
            rows = (await conn.execute(text("SELECT key, response FROM result_cache"))).all()
            for key, stored in rows:
                response = json.loads(stored)
                for result in response["results"]:
                    assert result.pop("pdf_url") is None
                    assert result["link"] is None
                update = text("UPDATE result_cache SET response = :response WHERE key = :key")
                await conn.execute(update, {"response": json.dumps(response), "key": key})
    finally:
        await engine.dispose()
    return len(rows)


async def test_cached_answers_carry_pdf_url_also_when_cached_before_it_existed(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root, public_base_url="https://h.example.org")
    await ingest_sample(settings)
    async with app_client(settings) as client:
        first = await client.post("/v2/highlights/batch", json=BODY)
        assert first.headers["x-highlight-cache"] == "miss"
        assert await _strip_pdf_url_from_the_cache(database_url) == 1
        again = await client.post("/v2/highlights/batch", json=BODY)
        assert again.headers["x-highlight-cache"] == "hit"
        assert again.json() == first.json()
        assert [_consistent(r) for r in again.json()["results"]][2] is None
        assert (
            again.json()["results"][0]["pdf_url"]
            == f"https://h.example.org/v2/documents/{SAMPLE_ID}/pdf"
        )
        streamed = await client.post("/v2/highlights/stream", json=BODY)
        (summary,) = [data for name, data in sse_events(streamed.text) if name == "summary"]
        assert summary["cached"] is True
        assert await _stream_urls(client, {}) == [_consistent(r) for r in first.json()["results"]]
