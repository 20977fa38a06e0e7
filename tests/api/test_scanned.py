"""Scanned PDFs end to end: uploaded and chunked through OCR, highlighted on the page image, a
batch during OCR answered at once with ``text_layer_pending``, and OCR off or not installed
keeping today's ``no_text_layer``. On SQLite only: the database plays no part in OCR (the
document and batch paths run on both databases elsewhere). Skipped, saying so, where Tesseract
is not installed; CI installs it.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.core.config import Settings
from app.pdfs.indexing import ocr_options
from app.pdfs.sample import write_sample_pdf
from tests.api.helpers import ocr_under, similarity
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.pdfs import write_image_only_copy

pytestmark = pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="Tesseract is not installed (apt-get install tesseract-ocr tesseract-ocr-osd)",
)
PDF = {"content-type": "application/pdf"}
SENTENCE = "Members asked how the counties would share the maintenance costs."
LINN = "ocrmypdf_linn_scan-no-text.pdf"


@pytest.fixture
def sqlite_url(tmp_path: Path, sqlite_template: Path) -> str:
    shutil.copyfile(sqlite_template, tmp_path / "highlight.db")
    return f"sqlite+aiosqlite:///{tmp_path / 'highlight.db'}"


@pytest.fixture
def scan(tmp_path: Path) -> bytes:
    original = write_sample_pdf(tmp_path / "original.pdf")
    return write_image_only_copy(original, tmp_path / "scan.pdf", dpi=200).read_bytes()


def _settings(url: str, tmp_path: Path, **extra: Any) -> Settings:
    return make_settings(url, tmp_path / "pdfs", **extra)


def _batch(chunk_id: str, answer: str = SENTENCE) -> dict[str, Any]:
    return {
        "query": "Who pays for the water scheme's maintenance?",
        "answer": answer,
        "citations": [{"chunk_id": chunk_id, "citation_id": "1"}],
    }


async def _upload(client: httpx.AsyncClient, data: bytes, doc: str = "scan") -> dict[str, Any]:
    put = await client.put(
        f"/v2/documents/{doc}/pdf", content=data, headers=PDF, params={"chunk": "true"}
    )
    assert put.status_code == 201, put.text
    return dict(put.json())


@pytest.mark.slow  # runs Tesseract
async def test_a_scanned_pdf_is_chunked_by_ocr_and_highlighted_on_its_image(
    sqlite_url: str, tmp_path: Path, scan: bytes
) -> None:
    async with app_client(_settings(sqlite_url, tmp_path)) as client:
        uploaded = await _upload(client, scan)
        chunks = (await client.get("/v2/documents/scan?include_text=true")).json()["chunks"]
        holding = [c for c in chunks if "maintenance costs" in c["text"]]
        assert holding, [c["text"][:80] for c in chunks]
        response = await client.post("/v2/highlights/batch", json=_batch(holding[0]["id"]))
    assert response.status_code == 200, response.text
    (result,) = response.json()["results"]
    assert result["status"] == "highlighted", result
    (highlight,) = [h for h in result["highlights"] if "maintenance" in h["text"]]
    assert highlight["page"] == 1
    assert highlight["score"] >= 90
    # Tesseract, reading the page image inside the rectangles afresh, reads the sentence.
    stored = tmp_path / "pdfs" / uploaded["source_path"]
    assert similarity(ocr_under(stored, highlight["rects"]), SENTENCE) >= 90


async def test_a_batch_while_the_scan_is_read_answers_pending_then_highlights(
    sqlite_url: str, tmp_path: Path, scan: bytes
) -> None:
    async with app_client(_settings(sqlite_url, tmp_path)) as client:
        await _upload(client, scan)
        chunks = (await client.get("/v2/documents/scan?include_text=true")).json()["chunks"]
    chunk_id = next(c["id"] for c in chunks if "maintenance costs" in c["text"])
    # A new process: nothing cached in memory, no disk cache, so its index must be built again,
    # and a batch may wait 0 s for it.
    async with app_client(_settings(sqlite_url, tmp_path, index_wait_s=0)) as client:
        first = await client.post("/v2/highlights/batch", json=_batch(chunk_id))
        (pending,) = first.json()["results"]
        assert (pending["status"], pending["reason"]) == ("fallback", "text_layer_pending")
        assert pending["link"].endswith("/v2/documents/scan/pdf#page=1")
        assert "OCR" in pending["message"]
        for _ in range(120):  # the build goes on in the background; the next request uses it
            await asyncio.sleep(0.5)
            later = (await client.post("/v2/highlights/batch", json=_batch(chunk_id))).json()
            if later["results"][0]["reason"] != "text_layer_pending":
                break
    assert later["results"][0]["status"] == "highlighted", later


async def test_with_ocr_off_a_scan_is_refused_by_ingest_and_has_no_text_layer(
    sqlite_url: str, tmp_path: Path, scan: bytes
) -> None:
    async with app_client(_settings(sqlite_url, tmp_path, ocr_mode="off")) as client:
        refused = await client.put(
            "/v2/documents/scan/pdf", content=scan, headers=PDF, params={"chunk": "true"}
        )
        assert refused.status_code == 422
        assert "OCR is off" in refused.json()["error"]["message"]
        stored = await client.put("/v2/documents/scan/pdf", content=scan, headers=PDF)
        chunk = {"id": "scan-1", "text": SENTENCE, "page_start": 1, "page_end": 1}
        put = await client.put(
            "/v2/documents/scan",
            json={"source_path": stored.json()["source_path"], "chunks": [chunk]},
        )
        assert put.status_code == 201, put.text
        response = await client.post("/v2/highlights/batch", json=_batch("scan-1"))
    (result,) = response.json()["results"]
    assert (result["status"], result["reason"]) == ("fallback", "no_text_layer")


def test_without_tesseract_ocr_is_off_and_start_up_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH on which there is no tesseract
    with caplog.at_level(logging.INFO, logger="app.pdfs.indexing"):
        assert ocr_options(make_settings("sqlite+aiosqlite:///x.db", tmp_path)) is None
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert "Tesseract is not installed" in record.getMessage()
    assert "apt-get install tesseract-ocr" in record.getMessage()


def test_languages_that_are_not_installed_are_left_out_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings("sqlite+aiosqlite:///x.db", tmp_path, ocr_languages="eng+xyz")
    with caplog.at_level(logging.WARNING, logger="app.pdfs.indexing"):
        options = ocr_options(settings)
    assert options is not None
    assert options.languages == "eng"
    assert "xyz" in caplog.text


@pytest.mark.slow  # runs Tesseract
async def test_the_real_scan_is_ingested_and_highlighted(
    sqlite_url: str, tmp_path: Path, shared_pdfs: Path
) -> None:
    """The corpus's scan without a text layer (a two-column 1980s product sheet)."""
    sentence = "Each of the 100 sequences contains 32 simultaneous, polyphonic tracks."
    async with app_client(_settings(sqlite_url, tmp_path)) as client:
        uploaded = await _upload(client, (shared_pdfs / LINN).read_bytes(), "linn")
        chunks = (await client.get("/v2/documents/linn?include_text=true")).json()["chunks"]
        chunk_id = next(c["id"] for c in chunks if "polyphonic tracks" in c["text"])
        response = await client.post("/v2/highlights/batch", json=_batch(chunk_id, sentence))
    (result,) = response.json()["results"]
    assert result["status"] == "highlighted", result
    (highlight,) = [h for h in result["highlights"] if "polyphonic" in h["text"]]
    stored = tmp_path / "pdfs" / uploaded["source_path"]
    assert similarity(ocr_under(stored, highlight["rects"]), sentence) >= 85
