"""Through the API: a sentence the PDF prints twice on one page is highlighted where its cited
chunk has it (the service passes each chunk's text to the locator), never at the other copy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.api.test_highlights import post
from tests.fixtures.app import app_client, make_settings
from tests.highlights.test_locating import FIRST, REPEATED, SECOND, repeated_pdf


def _body(chunk_id: str) -> dict[str, Any]:
    return {
        "query": "Are the figures audited?",
        "answer": REPEATED,
        "citations": [{"citation_id": "1", "chunk_id": chunk_id}],
    }


async def test_each_chunk_highlights_its_own_copy(database_url: str, pdf_root: Path) -> None:
    settings = make_settings(database_url, pdf_root)
    pdf = repeated_pdf(pdf_root)
    chunks = [
        {"id": "q-first", "text": FIRST, "page_start": 1, "page_end": 1},
        {"id": "q-second", "text": SECOND, "page_start": 1, "page_end": 1},
    ]
    async with app_client(settings) as client:
        put = await client.put(
            "/v2/documents/quarter", json={"source_path": pdf.name, "chunks": chunks}
        )
    assert put.status_code == 201, put.text
    # The two copies of the repeated sentence sit on the lines with these baselines.
    for chunk_id, baseline in (("q-first", 140), ("q-second", 220)):
        (result,) = (await post(settings, _body(chunk_id)))["results"]
        assert result["status"] == "highlighted", result
        (highlight,) = [h for h in result["highlights"] if h["text"] == REPEATED]
        (rect,) = highlight["rects"]
        assert rect["y0"] < baseline < rect["y1"] + 3, (chunk_id, rect)
