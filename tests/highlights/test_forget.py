"""The highlights of a document's earlier content are forgotten (their rectangles deleted) by
the highlights side after the new content is committed (the PUT's background task, and
``ingest``), not by the documents upsert (which would make ``documents`` import
``highlights``). Real databases, real PDFs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf
import pytest
from sqlalchemy import select

from app.core.config import Settings
from app.db.session import create_engine, create_session_factory, dispose_engine, transaction
from app.documents.schemas import ChunkIn, DocumentUpsert
from app.documents.service import DocumentService
from app.highlights.models import StoredHighlight
from app.highlights.repository import FORGOTTEN
from app.highlights.stored import forget_other_content
from app.pdfs.index_cache import IndexCache
from app.pdfs.storage import PdfStorage
from app.pdfs.workers import PdfWorkers
from tests.fixtures.app import app_client, make_settings

SENTENCE = "The ferry to Lamu leaves the harbour every morning."


def _pdf(path: Path, footer: str) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 100), SENTENCE, fontname="helv", fontsize=11)
    page.insert_text((72, 800), footer, fontname="helv", fontsize=8)
    doc.save(path)
    doc.close()


async def _stored(settings: Settings) -> list[tuple[str, str]]:
    engine = create_engine(settings.database_url)
    try:
        async with transaction(create_session_factory(engine)) as session:
            # The rows that still hold rectangles: a forgotten one keeps only its id and
            # content hash, so a link to it answers 410 (test_stored_highlights.py).
            rows = await session.execute(
                select(StoredHighlight.id, StoredHighlight.document_sha256).where(
                    StoredHighlight.data != FORGOTTEN
                )
            )
            return sorted((row[0], row[1]) for row in rows)
    finally:
        await dispose_engine(engine)


async def _put_and_highlight(client: Any, source: str) -> str:
    chunk = {"id": "ferry-c1", "text": SENTENCE, "page_start": 1, "page_end": 1}
    put = await client.put("/v2/documents/ferry", json={"source_path": source, "chunks": [chunk]})
    assert put.status_code in (200, 201), put.text
    body = {
        "query": "When does the ferry leave?",
        "answer": "The ferry leaves every morning [1].",
        "citations": [{"chunk_id": "ferry-c1", "citation_id": "1"}],
    }
    response = await client.post("/v2/highlights/batch", json=body)
    assert response.status_code == 200, response.text
    (highlight,) = response.json()["results"][0]["highlights"]
    return str(highlight["highlight_id"])


@pytest.mark.slow  # ingests in the PDF worker processes
async def test_a_new_content_deletes_the_old_contents_highlights(
    database_url: str, tmp_path: Path
) -> None:
    _pdf(tmp_path / "v1.pdf", "Edition one.")
    _pdf(tmp_path / "v2.pdf", "Edition two.")
    settings = make_settings(database_url, tmp_path)
    async with app_client(settings) as client:
        first = await _put_and_highlight(client, "v1.pdf")
        assert [row[0] for row in await _stored(settings)] == [first]
        # The PUT's background task has run when the ASGI call returns.
        second = await _put_and_highlight(client, "v2.pdf")
        assert [row[0] for row in await _stored(settings)] == [second]
        assert first != second


async def _upsert_only(settings: Settings, source: str) -> None:
    """The documents side alone: the content changes, nothing is cleaned up yet."""
    chunk = ChunkIn(id="ferry-c1", text=SENTENCE, page_start=1, page_end=1)
    engine = create_engine(settings.database_url)
    try:
        storage = PdfStorage(settings.pdf_root, PdfWorkers(None))
        body = DocumentUpsert(source_path=source, chunks=[chunk])
        documents = DocumentService(create_session_factory(engine), storage, IndexCache())
        await documents.put("ferry", body)
    finally:
        await dispose_engine(engine)


@pytest.mark.slow  # ingests in the PDF worker processes
async def test_a_late_clean_up_keeps_the_content_stored_now(
    database_url: str, tmp_path: Path
) -> None:
    """Content A, then B, then A again, with the clean-ups late: the one that runs compares with
    the content stored when it runs (A), so A's highlights stay and only B's go."""
    _pdf(tmp_path / "v1.pdf", "Edition one.")
    _pdf(tmp_path / "v2.pdf", "Edition two.")
    settings = make_settings(database_url, tmp_path)
    async with app_client(settings) as client:
        first = await _put_and_highlight(client, "v1.pdf")
        await _upsert_only(settings, "v2.pdf")
        body = {
            "query": "When does the ferry leave?",
            "answer": "The ferry leaves every morning [1].",
            "citations": [{"chunk_id": "ferry-c1", "citation_id": "1"}],
        }
        assert (await client.post("/v2/highlights/batch", json=body)).status_code == 200
        await _upsert_only(settings, "v1.pdf")
    assert len({sha for _, sha in await _stored(settings)}) == 2  # both contents' rows
    engine = create_engine(settings.database_url)
    try:
        await forget_other_content(create_session_factory(engine), "ferry")
    finally:
        await dispose_engine(engine)
    assert [row[0] for row in await _stored(settings)] == [first]
