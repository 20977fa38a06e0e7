"""API behaviour on the team's real PDFs (skipped where ../shared/pdfs is absent)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.fixtures.app import app_client, make_settings

SCAN = "ocrmypdf_linn_scan-no-text.pdf"


@pytest.mark.parametrize(
    ("ocr_mode", "expected"),
    [("off", ("fallback", "no_text_layer")), ("auto", ("no_match", "chunk_not_in_pdf"))],
)
async def test_scan_without_text_layer_is_no_text_layer_never_a_guess(
    database_url: str, pdf_root: Path, shared_pdfs: Path, ocr_mode: str, expected: tuple[str, str]
) -> None:
    if ocr_mode == "auto" and shutil.which("tesseract") is None:
        pytest.skip("Tesseract is not installed (apt-get install tesseract-ocr)")
    shutil.copyfile(shared_pdfs / SCAN, pdf_root / SCAN)
    # An upstream pipeline could still have produced chunk text for the scan, here text that is
    # not on the page: without OCR there is nothing to place it on (stored unchecked, its
    # citations say the page has no text layer); with OCR the page's words are read and the
    # sentence is not among them (told at PUT, and its citations say so). Never a guess.
    text = "The Linn family papers were deposited with the library in 1952. They fill two boxes."
    settings = make_settings(database_url, pdf_root, ocr_mode=ocr_mode)
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
    assert (result["status"], result["reason"]) == expected
    assert result["highlights"] == []
    assert result["link"] == "/v2/documents/linn/pdf#page=1"
