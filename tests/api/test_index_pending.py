"""A batch that stops waiting for a PDF's index says what is pending: ``index_pending`` while a
text layer is read (no OCR involved), ``text_layer_pending`` while scanned pages are read by OCR,
each with how far the build is. Before, both were ``text_layer_pending`` with a message about
OCR, also for a 392-page 10-K with a text layer on a machine without Tesseract."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

import httpx
import pymupdf
import pytest

from app.core.config import Settings
from app.pdfs import extract
from app.pdfs.extract import build_index
from app.pdfs.sample import write_sample_pdf
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.pdfs import write_image_only_copy

PDF = {"content-type": "application/pdf"}
SENTENCE = "Members asked how the counties would share the maintenance costs."


def sleepy_build(*args: Any) -> Any:
    """The index build, a few seconds late (in the worker; at module level, imported by name)."""
    time.sleep(3)
    return build_index(*args)


@pytest.fixture
def sqlite_url(tmp_path: Path, sqlite_template: Path) -> str:
    shutil.copyfile(sqlite_template, tmp_path / "highlight.db")
    return f"sqlite+aiosqlite:///{tmp_path / 'highlight.db'}"


def _settings(url: str, tmp_path: Path, **extra: Any) -> Settings:
    return make_settings(url, tmp_path / "pdfs", **extra)


def _batch(chunk_id: str) -> dict[str, Any]:
    return {
        "query": "Who pays for the water scheme's maintenance?",
        "answer": SENTENCE,
        "citations": [{"chunk_id": chunk_id, "citation_id": "1"}],
    }


async def _chunk_citing(settings: Settings, data: bytes) -> str:
    """Upload and chunk ``data`` in one process; the id of the chunk holding SENTENCE."""
    async with app_client(settings) as client:
        put = await client.put(
            "/v2/documents/doc/pdf", content=data, headers=PDF, params={"chunk": "true"}
        )
        assert put.status_code == 201, put.text
        chunks = (await client.get("/v2/documents/doc?include_text=true")).json()["chunks"]
    return str(next(c["id"] for c in chunks if "maintenance costs" in c["text"]))


async def _pending_then_highlighted(client: httpx.AsyncClient, chunk_id: str) -> dict[str, Any]:
    first = await client.post("/v2/highlights/batch", json=_batch(chunk_id))
    assert first.status_code == 200, first.text
    (pending,) = first.json()["results"]
    for _ in range(240):  # the build goes on in the background; a later batch highlights
        await asyncio.sleep(0.5)
        later = (await client.post("/v2/highlights/batch", json=_batch(chunk_id))).json()
        if not later["results"][0]["reason"].endswith("_pending"):
            break
    assert later["results"][0]["status"] == "highlighted", later
    return dict(pending)


async def test_a_text_pdf_being_indexed_is_index_pending_with_its_page_count(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = write_sample_pdf(tmp_path / "sample.pdf")
    with pymupdf.open(original) as doc:
        pages = doc.page_count
    chunk_id = await _chunk_citing(_settings(sqlite_url, tmp_path), original.read_bytes())
    # A new process (nothing cached in memory, no disk cache), whose index build is slow, and a
    # batch that waits for it no longer than it takes to learn what is pending.
    monkeypatch.setattr(extract, "build_index", sleepy_build)
    settings = _settings(sqlite_url, tmp_path, index_wait_s=0, index_wait_page_s=0)
    async with app_client(settings) as client:
        pending = await _pending_then_highlighted(client, chunk_id)
    assert (pending["status"], pending["reason"]) == ("fallback", "index_pending")
    assert f"{pages}-page" in pending["message"]
    assert "text layer" in pending["message"]
    assert "no OCR needed" in pending["message"]
    assert pending["link"].endswith("#page=1")


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="Tesseract is not installed")
async def test_a_scan_being_read_is_text_layer_pending_with_pages_read_of_pages(
    sqlite_url: str, tmp_path: Path
) -> None:
    original = write_sample_pdf(tmp_path / "sample.pdf")
    scan = write_image_only_copy(original, tmp_path / "scan.pdf", dpi=200)
    chunk_id = await _chunk_citing(_settings(sqlite_url, tmp_path), scan.read_bytes())
    settings = _settings(sqlite_url, tmp_path, index_wait_s=0)
    async with app_client(settings) as client:
        pending = await _pending_then_highlighted(client, chunk_id)
    assert (pending["status"], pending["reason"]) == ("fallback", "text_layer_pending")
    assert "OCR" in pending["message"]
    with pymupdf.open(scan) as doc:
        assert f"of {doc.page_count} read" in pending["message"]
