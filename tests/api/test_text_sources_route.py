"""Web and text sources through the upload door, PUT /v2/documents/{id}/file, on SQLite and
PostgreSQL: sniffed by content (Markdown by its name), stored as text, highlighted with selectors
that find the cited sentence in GET /v2/documents/{id}/text; too large (413) and not UTF-8 (422)
refused with what to do, nothing stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.app import app_client, make_settings
from tests.fixtures.text_sources import CITED, HTML, MARKDOWN, TEXT

OCTETS = {"content-type": "application/octet-stream"}


async def upload(client: httpx.AsyncClient, body: bytes, filename: str, **params: Any) -> Any:
    return await client.put(
        "/v2/documents/debate/file",
        params={"filename": filename, "chunk": "true", **params},
        content=body,
        headers=OCTETS,
    )


@pytest.mark.parametrize(
    ("body", "filename", "kind"),
    [
        (HTML, "debate.html", "html"),
        (MARKDOWN, "debate.md", "markdown"),
        (TEXT, "notes.txt", "text"),
    ],
)
async def test_a_text_source_uploaded_is_highlighted_in_its_text(
    database_url: str, pdf_root: Path, body: str, filename: str, kind: str
) -> None:
    async with app_client(make_settings(database_url, pdf_root)) as client:
        response = await upload(client, body.encode(), filename)
        assert response.status_code == 201, response.text
        stored = response.json()
        again = await upload(client, body.encode(), filename)
        document = (await client.get("/v2/documents/debate?include_text=true")).json()
        chunk = next(c["id"] for c in document["chunks"] if CITED in c["text"])
        answered = await client.post(
            "/v2/highlights/batch",
            json={
                "query": "What will the water programme cost?",
                "answer": "It costs 12.5 billion shillings over three years [1].",
                "citations": [{"chunk_id": chunk, "citation_id": "1"}],
            },
        )
        text = (await client.get("/v2/documents/debate/text")).json()["text"]
    assert stored["source_format"] == kind
    assert stored["original_name"] == filename
    assert stored["page_count"] == 1
    assert again.status_code == 200
    assert again.json()["changed"] is False
    assert document["source_format"] == kind
    result = answered.json()["results"][0]
    assert result["status"] == "highlighted"
    assert result["source_format"] == kind
    assert result["original_name"] == filename
    assert result["pdf_url"] is None
    [highlight] = [h for h in result["highlights"] if h["text"] == CITED]
    position = highlight["selectors"][1]
    assert text[position["start"] : position["end"]] == CITED


async def test_a_text_source_over_its_limit_is_refused(database_url: str, pdf_root: Path) -> None:
    settings = make_settings(database_url, pdf_root, max_text_bytes=1024)
    async with app_client(settings) as client:
        response = await upload(client, ("word " * 400).encode(), "big.txt")
        missing = await client.get("/v2/documents/debate")
    assert response.status_code == 413
    assert "HIGHLIGHT_MAX_TEXT_BYTES" in response.json()["error"]["message"]
    assert missing.status_code == 404


async def test_text_that_is_not_utf8_is_refused_with_advice(
    database_url: str, pdf_root: Path
) -> None:
    async with app_client(make_settings(database_url, pdf_root)) as client:
        response = await upload(client, "Caf\u00e9 cr\u00e8me.\n".encode("latin-1"), "menu.txt")
        missing = await client.get("/v2/documents/debate")
    assert response.status_code == 422
    assert "save it as UTF-8" in response.json()["error"]["message"]
    assert missing.status_code == 404
