"""API behaviour on the team's real PDFs (skipped where ../shared/pdfs is absent)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.fixtures.app import app_client, make_settings

SCAN = "ocrmypdf_linn_scan-no-text.pdf"


async def test_scan_without_text_layer_is_no_text_layer_never_a_guess(
    database_url: str, pdf_root: Path, shared_pdfs: Path
) -> None:
    shutil.copyfile(shared_pdfs / SCAN, pdf_root / SCAN)
    # An upstream OCR pipeline could still have produced chunk text for the scan.
    text = "The Linn family papers were deposited with the library in 1952. They fill two boxes."
    settings = make_settings(database_url, pdf_root)
    async with app_client(settings) as client:
        put = await client.put(
            "/v2/documents/linn",
            json={
                "source_path": SCAN,
                "chunks": [{"id": "linn-1", "text": text, "page_start": 1, "page_end": 1}],
            },
        )
        assert put.status_code == 201, put.text
        response = await client.post(
            "/v2/highlights/batch",
            json={
                "query": "When were the papers deposited?",
                "answer": "The Linn family papers were deposited with the library in 1952.",
                "citations": [{"chunk_id": "linn-1"}],
            },
        )
    (result,) = response.json()["results"]
    assert (result["status"], result["reason"]) == ("fallback", "no_text_layer")
    assert result["highlights"] == []
    assert result["link"] == "/v2/documents/linn/pdf#page=1"
