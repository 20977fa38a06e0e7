"""A stored highlight row follows how its sentence is shown: the id hashes the content, chunk,
offsets and rectangles, not ``display_text``, so a row written before the display rule changed
(a line-end hyphen joined that is a compound's own) is rewritten by the next batch that computes
it, and the highlight fetched by id says what the batch says. Real databases, a real PDF."""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest
from sqlalchemy import delete, select, update

from app.db.session import create_engine, create_session_factory, dispose_engine, transaction
from app.highlights.models import CachedResult, StoredHighlight
from tests.fixtures.app import app_client, make_settings

LINES = ["Revenue grew 8 per cent year-", "over-year, the company said."]


def _pdf(path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    for number, line in enumerate(LINES):
        page.insert_text((72, 100 + 14 * number), line, fontname="helv", fontsize=11)
    doc.save(path)
    doc.close()


@pytest.mark.slow  # reads the PDF in the PDF worker processes
async def test_a_row_written_under_an_older_display_rule_is_rewritten(
    database_url: str, tmp_path: Path
) -> None:
    _pdf(tmp_path / "growth.pdf")
    settings = make_settings(database_url, tmp_path)
    chunk = {"id": "growth-c1", "text": "\n".join(LINES), "page_start": 1, "page_end": 1}
    body = {
        "query": "How much did revenue grow?",
        "answer": "Revenue grew 8 per cent [1].",
        "citations": [{"chunk_id": "growth-c1", "citation_id": "1"}],
    }
    engine = create_engine(settings.database_url)
    try:
        async with app_client(settings) as client:
            put = await client.put(
                "/v2/documents/growth", json={"source_path": "growth.pdf", "chunks": [chunk]}
            )
            assert put.status_code in (200, 201), put.text
            first = (await client.post("/v2/highlights/batch", json=body)).json()
            (highlight,) = first["results"][0]["highlights"]
            assert (
                highlight["display_text"]
                == "Revenue grew 8 per cent year-over-year, the company said."
            )
            hid = highlight["highlight_id"]

            # As an older release wrote it, and no cached answer to short-cut the next batch.
            async with transaction(create_session_factory(engine)) as session:
                stored = await session.scalar(select(StoredHighlight.data))
                assert stored is not None
                data = json.loads(stored)
                data["display_text"] = "Revenue grew 8 per cent yearover-year, the company said."
                await session.execute(update(StoredHighlight).values(data=json.dumps(data)))
                await session.execute(delete(CachedResult))
            stale = (await client.get(f"/v2/highlights/{hid}")).json()
            assert "yearover-year" in stale["highlight"]["display_text"]

            again = (await client.post("/v2/highlights/batch", json=body)).json()
            assert again["results"][0]["highlights"][0]["highlight_id"] == hid
            fetched = (await client.get(f"/v2/highlights/{hid}")).json()
            assert fetched["highlight"]["display_text"] == highlight["display_text"]
    finally:
        await dispose_engine(engine)
