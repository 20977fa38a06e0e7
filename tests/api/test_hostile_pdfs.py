"""Hostile PDFs through the real app: each costs one bounded worker job, never the service.
Checked against 89905ca: the text bomb's batch took the index build onto a server thread (23 s and
1.9 GB for the index alone, minutes more to place sentences), `ingest` of it died with a
MemoryError traceback under a memory cap, and a preview of a 200-inch page at scale 3 asked MuPDF
for 1.9 billion pixels (a 500)."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

import httpx
import pytest

from app.highlights import stored
from app.main import create_app
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.hostile_pdfs import (
    BOMB_FIRST_LINE,
    write_deep_nesting_pdf,
    write_drawing_bomb_pdf,
    write_huge_page_pdf,
    write_text_bomb_pdf,
)
from tests.fixtures.live import ingest_refusal

# Runs PyMuPDF in worker processes under their limits: `make test-fast` leaves it out.
pytestmark = pytest.mark.slow


def _document(source_path: str, chunk_id: str) -> dict[str, object]:
    return {
        "source_path": source_path,
        "chunks": [{"id": chunk_id, "text": BOMB_FIRST_LINE, "page_start": 1, "page_end": 1}],
    }


def _batch(chunk_id: str) -> dict[str, object]:
    return {
        "query": "How does the bomb page begin?",
        "answer": "It begins with one honest sentence.",
        "citations": [{"chunk_id": chunk_id, "citation_id": "1"}],
    }


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


async def test_a_text_bomb_gets_pdf_too_complex_once_and_is_then_refused_at_once(
    database_url: str, pdf_root: Path
) -> None:
    write_text_bomb_pdf(pdf_root / "bomb.pdf")
    write_deep_nesting_pdf(pdf_root / "deep.pdf")
    settings = make_settings(database_url, pdf_root)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            # The page tree is fine: the PUT stores it; only indexing its page is refused.
            put = await client.put("/v2/documents/bomb", json=_document("bomb.pdf", "bomb-1"))
            assert put.status_code == 201, put.text
            sha = put.json()["sha256"]
            for _ in range(2):
                response = await client.post("/v2/highlights/batch", json=_batch("bomb-1"))
                assert response.status_code == 200, response.text
                (result,) = response.json()["results"]
                assert (result["status"], result["reason"]) == ("fallback", "pdf_too_complex")
                assert result["highlights"] == []
                assert result["link"].endswith("#page=1")
                assert "memory or time" in result["message"]
                # The second batch is answered from the refusal, with no second worker job.
                cache = app.state.services.highlights.index_cache
                assert "3003" in (cache.refusal(sha) or "")
            assert (await client.get("/healthz")).status_code == 200
            # Nesting 100,000 deep: MuPDF's own nesting limit refuses the page dictionary, so
            # the page has no content it can read: answered at once, with the reason.
            put = await client.put("/v2/documents/deep", json=_document("deep.pdf", "deep-1"))
            assert put.status_code == 201, put.text
            response = await client.post("/v2/highlights/batch", json=_batch("deep-1"))
            assert response.status_code == 200, response.text
            (result,) = response.json()["results"]
            assert (result["status"], result["reason"]) == ("fallback", "no_text_layer")


def test_ingest_refuses_a_text_bomb_in_one_line(tmp_path: Path) -> None:
    pdf = write_text_bomb_pdf(tmp_path / "bomb.pdf")
    assert ingest_refusal(pdf) == [
        "error: bomb.pdf cannot be processed by this service: page 1 holds 3003047 characters "
        "(at most 200000 are indexed)"
    ]


async def test_a_preview_of_a_huge_page_is_rendered_within_the_pixel_bound(
    database_url: str, pdf_root: Path
) -> None:
    write_huge_page_pdf(pdf_root / "huge.pdf")
    settings = make_settings(database_url, pdf_root, preview_max_pixels=4_000_000)
    async with app_client(settings) as client:
        put = await client.put("/v2/documents/huge", json=_document("huge.pdf", "huge-1"))
        assert put.status_code == 201, put.text
        response = await client.get("/v2/documents/huge/pages/1.png", params={"scale": 3})
        assert response.status_code == 200, response.text
        width, height = _png_size(response.content)
        assert width * height <= 4_000_000
        assert width > 1000  # scaled down, not refused
        assert float(response.headers["X-Preview-Scale"]) == pytest.approx(width / 14400, 0.01)


async def test_previews_beyond_the_render_slots_get_busy_and_slow_ones_pdf_too_complex(
    database_url: str, pdf_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 12 million squares: about 5 s of CPU to draw at any scale. The worker's CPU limit is
    # whole seconds (ceil of what it has used plus the budget), so a budget of 0.5 s stops it
    # within 1.5 s: over 3 times short. (4 million squares, 1.8 s, against 1.0 s + 0.5 s for
    # the page, stopped within 2.5 s: a quiet machine sometimes drew it and answered 200.)
    write_drawing_bomb_pdf(pdf_root / "drawing.pdf", squares=12_000_000)
    monkeypatch.setattr(stored, "PREVIEW_WAIT_S", 0.2)
    settings = make_settings(
        database_url,
        pdf_root,
        max_concurrent_previews=1,
        pdf_job_timeout_s=0.5,
        pdf_job_page_s=0.0,
    )
    async with app_client(settings) as client:
        put = await client.put("/v2/documents/drawing", json=_document("drawing.pdf", "d-1"))
        assert put.status_code == 201, put.text
        responses = await asyncio.gather(
            *(
                client.get("/v2/documents/drawing/pages/1.png", params={"scale": 3})
                for _ in range(3)
            )
        )
        statuses = sorted(r.status_code for r in responses)
        # One render runs (over its job limit); the others
        # find no slot within 0.2 s.
        assert statuses == [422, 503, 503], [r.text for r in responses]
        for response in responses:
            code = response.json()["error"]["code"]
            if response.status_code == 503:
                assert code == "busy"
                assert response.headers["Retry-After"]
            else:
                assert code == "pdf_too_complex"
                assert "HIGHLIGHT_PDF_JOB_TIMEOUT_S" in response.json()["error"]["message"]
        assert (await client.get("/healthz")).status_code == 200
