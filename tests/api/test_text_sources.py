"""Web and text sources end to end: HTML, Markdown and plain text stored through
``store_text``, a batch (no LLM) on real SQLite and PostgreSQL, and highlights whose W3C
selectors find the cited sentence in the document's text (GET /v2/documents/{id}/text); the
stored highlight, the stream and the viewer link answer too, without a PDF."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from app.alignment.selectors import TextQuote, resolve_quote
from app.core.config import Settings
from app.core.formats import SourceFormat, sniff
from app.documents.text_sources import TextUpload, store_text, upload_text
from app.services import open_services
from tests.api.helpers import CHUNK_MAIN, ingest_sample, sse_events
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.text_sources import CITED, HTML, MARKDOWN, TEXT

SOURCES = {
    "html": (HTML, "debate.html"),
    "markdown": (MARKDOWN, "debate.md"),
    "text": (TEXT, "debate.txt"),
}
ANSWER = "The programme costs 12.5 billion shillings over three years [1]."


async def store(settings: Settings, kind: str, document_id: str = "debate") -> TextUpload:
    body, name = SOURCES[kind]
    data = body.encode()
    fmt = sniff(data, name)
    assert fmt is SourceFormat(kind)
    async with open_services(settings, command=True) as services:
        return await store_text(
            services.session_factory, services.storage, document_id, data, fmt, original_name=name
        )


def cited_chunk(upload: TextUpload) -> str:
    return next(str(c.id) for c in upload.document.chunks if CITED in c.text)


def batch(chunk_id: str) -> dict[str, Any]:
    return {
        "query": "What will the water programme cost?",
        "answer": ANSWER,
        "citations": [{"chunk_id": chunk_id, "citation_id": "1"}],
    }


def check_selectors(highlight: dict[str, Any], text: str) -> None:
    quote, position = highlight["selectors"]
    assert quote["type"] == "TextQuoteSelector"
    assert position["type"] == "TextPositionSelector"
    start, end = position["start"], position["end"]
    assert text[start:end] == highlight["text"] == quote["exact"]
    found = resolve_quote(text, TextQuote(quote["exact"], quote["prefix"], quote["suffix"]))
    assert found == (start, end)


@pytest.mark.parametrize("kind", ["html", "markdown", "text"])
async def test_a_text_source_is_highlighted_in_its_text(
    database_url: str, pdf_root: Path, kind: str
) -> None:
    settings = make_settings(database_url, pdf_root)
    upload = await store(settings, kind)
    assert upload.created
    assert upload.document.page_count == 1
    chunk_id = cited_chunk(upload)
    async with app_client(settings) as client:
        answered = await client.post("/v2/highlights/batch", json=batch(chunk_id))
        assert answered.status_code == 200, answered.text
        result = answered.json()["results"][0]
        served = await client.get("/v2/documents/debate/text")
        assert served.status_code == 200, served.text
        text = served.json()["text"]
        assert result["status"] == "highlighted"
        assert result["source_format"] == kind
        assert result["pdf_url"] is None
        assert result["link"] == result["viewer_link"]
        assert result["link"].startswith("/viewer?document_id=debate&view=text&highlight=h_")
        [highlight] = [h for h in result["highlights"] if CITED in h["text"]]
        assert highlight["rects"] == []
        assert highlight["page"] == 1
        check_selectors(highlight, text)
        # The sentence is twice in the text; the selector names the first, cited, one.
        assert text.count(CITED) == 2
        assert highlight["selectors"][1]["start"] == text.index(CITED)
        fragment = highlight["text_fragment"]
        if kind == "html":
            assert fragment.startswith("#:~:text=")
            assert unquote(fragment).startswith("#:~:text=opened the debate.-,The water")
        else:
            assert fragment is None
        # Nothing of the page's furniture or scripts is in the text.
        for absent in ("injected", "Home", "Copyright", "track", "**", "](", "# "):
            assert absent not in text
        # The highlight by id, the viewer's data, and a cached second answer.
        stored = await client.get(f"/v2/highlights/{highlight['highlight_id']}")
        assert stored.status_code == 200, stored.text
        out = stored.json()
        assert out["pdf_url"] is None
        assert out["source_format"] == kind
        assert out["text_url"] == "/v2/documents/debate/text"
        assert out["highlight"]["selectors"] == highlight["selectors"]
        again = await client.post("/v2/highlights/batch", json=batch(chunk_id))
        assert again.json()["results"][0]["highlights"] == result["highlights"]
        assert (await client.get("/viewer", params={"document_id": "debate"})).status_code == 200
        # A text source has no PDF: a clear 404, not the text served as a PDF.
        assert (await client.get("/v2/documents/debate/pdf")).status_code == 404


async def test_the_stream_answers_a_text_source(database_url: str, pdf_root: Path) -> None:
    settings = make_settings(database_url, pdf_root)
    upload = await store(settings, "markdown")
    async with app_client(settings) as client:
        response = await client.post("/v2/highlights/stream", json=batch(cited_chunk(upload)))
        text = (await client.get("/v2/documents/debate/text")).json()["text"]
    assert response.status_code == 200
    events = sse_events(response.text)
    citation = next(data for name, data in events if name == "citation")["citation"]
    assert citation["status"] == "highlighted"
    for highlight in citation["highlights"]:
        check_selectors(highlight, text)
    assert events[-1][0] == "summary"


async def test_the_text_route_gives_blocks_that_tile_the_text(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    await store(settings, "html")
    async with app_client(settings) as client:
        body = (await client.get("/v2/documents/debate/text")).json()
    text, blocks = body["text"], body["blocks"]
    assert body["source_format"] == "html"
    assert body["title"] == "Water & roads debate"
    kinds = [(b["kind"], b["level"]) for b in blocks]
    assert kinds[:3] == [("heading", 1), ("paragraph", 0), ("heading", 2)]
    assert ("item", 0) in kinds
    assert "\n\n".join(text[b["start"] : b["end"]] for b in blocks) == text
    assert text.startswith("Water bill — second reading\n\nThe minister")


async def test_the_same_upload_again_changes_nothing(database_url: str, pdf_root: Path) -> None:
    settings = make_settings(database_url, pdf_root)
    first = await store(settings, "text")
    second = await store(settings, "text")
    assert first.created
    assert first.changed
    assert not second.created
    assert not second.changed
    chunks = second.document.chunks
    text = "\n\n".join(c.text for c in chunks)
    for chunk in chunks:
        assert text[chunk.source_start : chunk.source_end] == chunk.text


async def test_a_text_source_replaced_by_a_pdf_is_a_pdf_again(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    await store(settings, "text", document_id="sample")
    await ingest_sample(settings)
    async with app_client(settings) as client:
        document = (await client.get("/v2/documents/sample")).json()
        response = await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))
    assert document["source_format"] == "pdf"
    result = response.json()["results"][0]
    assert result["source_format"] == "pdf"
    assert result["pdf_url"] == "/v2/documents/sample/pdf"
    assert all(h["rects"] for h in result["highlights"])


async def test_the_upload_seam_answers_like_a_pdf_upload(database_url: str, pdf_root: Path) -> None:
    settings = make_settings(database_url, pdf_root)
    data = HTML.encode()
    async with open_services(settings, command=True) as services:
        upload = await upload_text(
            services.documents, "page", data, SourceFormat.html, filename="page.html"
        )
        again = await upload_text(
            services.documents, "page", data, SourceFormat.html, filename="page.html"
        )
    assert upload.document is not None
    assert again.document is not None
    assert upload.document.created
    assert not again.document.changed
    document = upload.document.document
    assert upload.saved.source_path == document.source_path
    assert upload.facts.page_count == 1
    assert document.original_name == "page.html"
    assert document.title == "Water & roads debate"
    assert document.original_path is not None
    assert (pdf_root / document.original_path).read_bytes() == data
    text = (pdf_root / document.source_path).read_text()
    assert text == "\n\n".join(c.text for c in document.chunks)


async def test_with_auth_the_text_takes_a_token_or_the_signed_link(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(
        database_url, pdf_root, auth_read_tokens=["reader-1"], auth_write_tokens=["writer-1"]
    )
    upload = await store(settings, "markdown")
    async with app_client(settings) as client:
        token = {"authorization": "Bearer reader-1"}
        answered = await client.post(
            "/v2/highlights/batch", json=batch(cited_chunk(upload)), headers=token
        )
        highlight_id = answered.json()["results"][0]["highlights"][0]["highlight_id"]
        stored = (await client.get(f"/v2/highlights/{highlight_id}", headers=token)).json()
        signed = await client.get(stored["text_url"])
        bare = await client.get("/v2/documents/debate/text")
        with_token = await client.get("/v2/documents/debate/text", headers=token)
    assert "signature=" in stored["text_url"]
    assert signed.status_code == 200
    assert bare.status_code == 401
    assert with_token.json()["text"] == signed.json()["text"]
