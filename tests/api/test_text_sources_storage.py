"""Where a web or text source's files are stored, on SQLite and PostgreSQL, in a local folder and
an object store: the original as an Office original is kept (``originals/<sha256>.<ext>``), the
text under ``texts/<sha256>.txt``, nothing under the PDFs' ``ingested/<sha256>.pdf``; the same
bytes again change nothing; a document stored under the older PDF names moves to these, unchanged;
and no answer links a text document to a PDF it does not have."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from app.documents.models import Document
from app.services import open_services
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.s3 import S3Bucket
from tests.fixtures.text_sources import CITED, HTML, MARKDOWN

OCTETS = {"content-type": "application/octet-stream"}


async def upload(client: httpx.AsyncClient, body: bytes, filename: str) -> httpx.Response:
    return await client.put(
        "/v2/documents/debate/file",
        params={"filename": filename, "chunk": "true"},
        content=body,
        headers=OCTETS,
    )


async def highlight(client: httpx.AsyncClient) -> dict[str, Any]:
    """A batch over the cited chunk, then the stored highlight by id (both read the text)."""
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
    result: dict[str, Any] = answered.json()["results"][0]
    assert result["status"] == "highlighted", result
    [found] = [h for h in result["highlights"] if h["text"] == CITED]
    stored = await client.get(f"/v2/highlights/{found['highlight_id']}")
    assert stored.status_code == 200, stored.text
    assert stored.json()["pdf_url"] is None
    return result


@pytest.mark.parametrize(
    ("body", "filename", "extension"),
    [(HTML, "debate.html", "html"), (MARKDOWN, "debate.md", "md")],
)
async def test_the_original_and_the_text_are_stored_by_content_not_as_pdfs(
    database_url: str, pdf_root: Path, body: str, filename: str, extension: str
) -> None:
    data = body.encode()
    original_sha = hashlib.sha256(data).hexdigest()
    async with app_client(make_settings(database_url, pdf_root)) as client:
        first = await upload(client, data, filename)
        assert first.status_code == 201, first.text
        again = await upload(client, data, filename)
        document = (await client.get("/v2/documents/debate")).json()
        text = (await client.get("/v2/documents/debate/text")).json()["text"]
        await highlight(client)
    stored, repeated = first.json(), again.json()
    key = f"texts/{document['sha256']}.txt"
    assert stored["source_path"] == repeated["source_path"] == document["source_path"] == key
    assert (repeated["changed"], repeated["newly_stored"]) == (False, False)
    assert stored["newly_stored"] is True
    assert (pdf_root / key).read_text(encoding="utf-8") == text
    assert hashlib.sha256((pdf_root / key).read_bytes()).hexdigest() == document["sha256"]
    assert (pdf_root / "originals" / f"{original_sha}.{extension}").read_bytes() == data
    assert not (pdf_root / "ingested").exists()


async def test_a_text_document_names_no_pdf(database_url: str, pdf_root: Path) -> None:
    async with app_client(make_settings(database_url, pdf_root)) as client:
        uploaded = await upload(client, HTML.encode(), "debate.html")
        document = (await client.get("/v2/documents/debate")).json()
        result = await highlight(client)
        pdf = await client.get("/v2/documents/debate/pdf")
        # Its text is no PDF: a document PUT naming it is refused, and changes nothing.
        put = await client.put(
            "/v2/documents/debate",
            json={
                "title": "Debate",
                "source_path": document["source_path"],
                "chunks": [{"id": "debate-x", "text": CITED, "page_start": 1, "page_end": 1}],
            },
        )
        still = (await client.get("/v2/documents/debate")).json()
    assert uploaded.status_code == 201, uploaded.text
    assert put.status_code == 422, put.text
    assert still == document
    assert document["source_format"] == "html"
    assert document["pdf_url"] is None
    assert document["page_count"] == 1
    assert result["pdf_url"] is None
    assert pdf.status_code == 404


async def test_a_text_document_stored_under_pdf_names_moves_unchanged(
    database_url: str, pdf_root: Path
) -> None:
    """Stored before this naming: both files under ``ingested/<sha256>.pdf``. The same upload
    again keeps its highlights (changed: false) and names the new files."""
    settings = make_settings(database_url, pdf_root)
    data = HTML.encode()
    async with app_client(settings) as client:
        first = (await upload(client, data, "debate.html")).json()
        before = await highlight(client)
    async with open_services(settings, command=True) as services:
        row = await services.documents.get("debate")
        paths = {"source_path": row.source_path, "original_path": str(row.original_path)}
        legacy = {}
        for column, key in paths.items():
            old = f"ingested/{Path(key).name.split('.')[0]}.pdf"
            (pdf_root / "ingested").mkdir(exist_ok=True)
            shutil.move(pdf_root / key, pdf_root / old)
            legacy[column] = old
        async with services.session_factory() as session, session.begin():
            await session.execute(update(Document).where(Document.id == "debate").values(**legacy))
    async with app_client(settings) as client:
        # The older names still serve it (the text, the batch) until it is uploaded again.
        assert (await highlight(client))["highlights"] == before["highlights"]
        again = (await upload(client, data, "debate.html")).json()
        document = (await client.get("/v2/documents/debate")).json()
        after = await highlight(client)
    assert again["changed"] is False
    assert again["source_path"] == document["source_path"] == first["source_path"]
    assert document["source_path"].startswith("texts/")
    assert after["highlights"] == before["highlights"]
    async with open_services(settings, command=True) as services:
        row = await services.documents.get("debate")
    assert str(row.original_path).startswith("originals/")
    assert (pdf_root / str(row.original_path)).read_bytes() == data


async def test_on_an_object_store_the_original_and_the_text_are_objects(
    database_url: str, s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    data = HTML.encode()
    original_sha = hashlib.sha256(data).hexdigest()
    settings = make_settings(
        database_url,
        tmp_path / "pdfs",
        storage_url=s3_bucket.url,
        storage_cache_dir=tmp_path / "storage-cache",
    )
    async with app_client(settings) as client:
        first = (await upload(client, data, "debate.html")).json()
        await highlight(client)
    # Another replica (its own cache) reads both from the store, and the same upload is no change.
    settings = settings.model_copy(update={"storage_cache_dir": tmp_path / "replica-cache"})
    async with app_client(settings) as client:
        await highlight(client)
        served = await client.get("/v2/documents/debate/text")
        again = (await upload(client, data, "debate.html")).json()
    assert served.status_code == 200
    assert first["source_path"] == f"texts/{first['sha256']}.txt"
    assert (again["source_path"], again["changed"], again["newly_stored"]) == (
        first["source_path"],
        False,
        False,
    )
    store = s3_bucket.store()
    assert bytes(store.get(first["source_path"]).bytes()).decode() == served.json()["text"]
    assert bytes(store.get(f"originals/{original_sha}.html").bytes()) == data
    assert not store.list("ingested/").collect()  # nothing named as a PDF
