"""A PDF whose metadata title is a converter's placeholder ("Microsoft Word - budget_2024.doc")
is titled by the caller's title or its file's name, through ingest, the upload endpoint and the
batch answer; a document stored with such a title before is shown with its file's name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from app.services import ingest_file
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.pdfs import write_text_pdf

SENTENCES = [
    "The county budget for 2024 sets aside forty million shillings for water.",
    "Roads receive twelve million shillings, less than in the year before.",
]
PLACEHOLDER = "Microsoft Word - budget_2024.doc"


def _budget_pdf(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return write_text_pdf(folder / "budget_2024.pdf", SENTENCES, PLACEHOLDER)


async def _batch_title(client: httpx.AsyncClient, chunk_id: str) -> Any:
    response = await client.post(
        "/v2/highlights/batch",
        json={
            "query": "How much goes to water?",
            "answer": "Forty million shillings go to water [1].",
            "citations": [{"chunk_id": chunk_id, "citation_id": "1"}],
        },
    )
    assert response.status_code == 200, response.text
    (result,) = response.json()["results"]
    return result["document_title"]


async def test_ingest_without_a_title_takes_the_file_name_not_the_placeholder(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    pdf = _budget_pdf(pdf_root / "county")
    result = await ingest_file(settings, pdf, "budget")
    assert result["title"] == "budget 2024"
    assert result["chunks"] == ["budget-c0000"]
    titled = await ingest_file(settings, pdf, "budget-titled", "County Budget 2024")
    assert titled["title"] == "County Budget 2024"
    async with app_client(settings) as client:
        document = await client.get("/v2/documents/budget")
        assert document.status_code == 200, document.text
        assert document.json()["title"] == "budget 2024"
        assert await _batch_title(client, "budget-c0000") == "budget 2024"
        assert await _batch_title(client, "budget-titled-c0000") == "County Budget 2024"


async def test_upload_with_chunking_takes_the_title_given_or_the_document_id(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    data = _budget_pdf(tmp_path / "out").read_bytes()
    headers = {"content-type": "application/pdf"}
    async with app_client(make_settings(database_url, pdf_root)) as client:
        # Stored without chunking: the placeholder is not reported as the PDF's title.
        stored = await client.put("/v2/documents/budget/pdf", content=data, headers=headers)
        assert stored.status_code == 201, stored.text
        assert stored.json()["title"] == ""
        # Uploads are stored by their hash, whose name says nothing: the document's id.
        plain = await client.put(
            "/v2/documents/budget/pdf", content=data, headers=headers, params={"chunk": "true"}
        )
        assert plain.status_code == 201, plain.text
        assert plain.json()["title"] == "budget"
        titled = await client.put(
            "/v2/documents/budget2/pdf",
            content=data,
            headers=headers,
            params={"chunk": "true", "title": "County Budget 2024"},
        )
        assert titled.json()["title"] == "County Budget 2024"
        assert await _batch_title(client, plain.json()["chunks"][0]["id"]) == "budget"


async def test_a_placeholder_stored_earlier_is_shown_as_the_file_name(
    database_url: str, pdf_root: Path
) -> None:
    _budget_pdf(pdf_root / "county")
    body = {
        # What an older release stored from the PDF's metadata (or a caller sent as it was).
        "title": PLACEHOLDER,
        "source_path": "county/budget_2024.pdf",
        "chunks": [{"id": "old-1", "text": " ".join(SENTENCES), "page_start": 1, "page_end": 1}],
    }
    async with app_client(make_settings(database_url, pdf_root)) as client:
        put = await client.put("/v2/documents/old", json=body)
        assert put.status_code == 201, put.text
        document = await client.get("/v2/documents/old")
        assert document.json()["title"] == "budget 2024"
        assert await _batch_title(client, "old-1") == "budget 2024"
