"""A text source's blocks are extracted once, at upload, and kept with its document:
GET /v2/documents/{id}/text reads the database alone (the stored files deleted, it still serves
the real block kinds), on SQLite and PostgreSQL. A document stored before blocks were kept is
served with its chunks as paragraphs until its file is uploaded again."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import update

from app.documents.models import Document
from app.services import open_services
from tests.api.helpers import ingest_sample
from tests.fixtures.app import app_client, make_settings

MARKDOWN = """# Ferry timetable

Ferries leave every hour.

- North pier
- South pier

> Times may change.

```
08:00 North
```

| Route | Minutes |
|-------|---------|
| North | 40      |
"""
KINDS = [
    ("heading", 1),
    ("paragraph", 0),
    ("item", 0),
    ("item", 0),
    ("quote", 0),
    ("code", 0),
    ("row", 0),
    ("row", 0),
]


async def upload(client: httpx.AsyncClient, document_id: str = "ferry") -> dict[str, Any]:
    response = await client.put(
        f"/v2/documents/{document_id}/file",
        params={"filename": "ferry.md", "chunk": "true"},
        content=MARKDOWN.encode(),
        headers={"content-type": "text/markdown"},
    )
    assert response.status_code in (200, 201), response.text
    body: dict[str, Any] = response.json()
    return body


def kinds(served: dict[str, Any]) -> list[tuple[str, int]]:
    return [(b["kind"], b["level"]) for b in served["blocks"]]


async def test_the_text_and_its_blocks_come_from_the_database_alone(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    async with app_client(settings) as client:
        stored = await upload(client)
        before = (await client.get("/v2/documents/ferry/text")).json()
        # Every stored file gone (the original and its text): nothing is read again.
        for folder in ("originals", "texts"):
            shutil.rmtree(pdf_root / folder)
        after = await client.get("/v2/documents/ferry/text")
    assert stored["source_format"] == "markdown"
    assert after.status_code == 200, after.text
    assert after.json() == before
    assert kinds(before) == KINDS
    text = before["text"]
    assert "\n\n".join(text[b["start"] : b["end"]] for b in before["blocks"]) == text
    assert text.split("\n\n")[-3:] == ["08:00 North", "Route\tMinutes", "North\t40"]


async def test_a_document_stored_before_blocks_were_kept_gets_them_from_its_next_upload(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    async with app_client(settings) as client:
        await upload(client)
    async with open_services(settings, command=True) as services:
        async with services.session_factory() as session, session.begin():
            await session.execute(
                update(Document).where(Document.id == "ferry").values(text_blocks=None)
            )
    async with app_client(settings) as client:
        plain = (await client.get("/v2/documents/ferry/text")).json()
        again = await upload(client)
        filled = (await client.get("/v2/documents/ferry/text")).json()
    # Its chunks as paragraphs: the text is the same, only the blocks' kinds are lost.
    assert plain["text"] == filled["text"]
    assert {b["kind"] for b in plain["blocks"]} == {"paragraph"}
    assert (
        "\n\n".join(plain["text"][b["start"] : b["end"]] for b in plain["blocks"])
        == (plain["text"])
    )
    assert again["changed"] is False
    assert kinds(filled) == KINDS


async def test_a_text_source_replaced_by_a_pdf_keeps_no_blocks(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    async with app_client(settings) as client:
        await upload(client, "sample")
    await ingest_sample(settings)
    async with open_services(settings, command=True) as services:
        async with services.session_factory() as session:
            row = await session.get(Document, "sample")
            assert row is not None
            blocks = await session.run_sync(lambda _: row.text_blocks)
    async with app_client(settings) as client:
        served = (await client.get("/v2/documents/sample/text")).json()
    assert blocks is None
    assert served["source_format"] == "pdf"
    assert {b["kind"] for b in served["blocks"]} == {"paragraph"}
