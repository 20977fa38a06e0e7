"""Through the API: a sentence the PDF prints twice on one page is highlighted where its cited
chunk has it (the service passes each chunk's text to the locator), never at the other copy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf

from app.alignment.sentences import split_sentences
from tests.api.test_highlights import post
from tests.fixtures.app import app_client, make_settings

REPEATED = "All figures are unaudited and stated in millions of dollars."
FIRST = "Hotel revenue grew strongly in the spring quarter this year. " + REPEATED
SECOND = "Casino revenue in the autumn fell short of the forecast again. " + REPEATED
LINE_Y = 100  # baseline of the first line; each sentence is a line 40 pt below the previous


def _write_pdf(pdf_root: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    lines = [*split_sentences(FIRST), *split_sentences(SECOND)]
    for number, line in enumerate(lines):
        page.insert_text((72, LINE_Y + 40 * number), line.text, fontsize=10)
    (pdf_root / "reports").mkdir(parents=True, exist_ok=True)
    doc.save(pdf_root / "reports" / "quarter.pdf")
    doc.close()


def _body(chunk_id: str) -> dict[str, Any]:
    return {
        "query": "Are the figures audited?",
        "answer": REPEATED,
        "citations": [{"citation_id": "1", "chunk_id": chunk_id}],
    }


async def test_each_chunk_highlights_its_own_copy(database_url: str, pdf_root: Path) -> None:
    settings = make_settings(database_url, pdf_root)
    _write_pdf(pdf_root)
    chunks = [
        {"id": "q-first", "text": FIRST, "page_start": 1, "page_end": 1},
        {"id": "q-second", "text": SECOND, "page_start": 1, "page_end": 1},
    ]
    async with app_client(settings) as client:
        put = await client.put(
            "/v2/documents/quarter",
            json={"source_path": "reports/quarter.pdf", "chunks": chunks},
        )
    assert put.status_code == 201, put.text
    # Lines 2 and 4 (0-based 1 and 3) are the two copies of the repeated sentence.
    for chunk_id, line in (("q-first", 1), ("q-second", 3)):
        (result,) = (await post(settings, _body(chunk_id)))["results"]
        assert result["status"] == "highlighted", result
        (highlight,) = [h for h in result["highlights"] if h["text"] == REPEATED]
        (rect,) = highlight["rects"]
        baseline = LINE_Y + 40 * line
        assert rect["y0"] < baseline < rect["y1"] + 3, (chunk_id, rect)
