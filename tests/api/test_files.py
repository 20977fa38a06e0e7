"""The files a frontend loads: the PDF (ETag, Range as PDF.js uses it, errors in the contract's
shape) and page preview images with the highlights drawn where the words are."""

from __future__ import annotations

import shutil
from pathlib import Path

import pymupdf
import pytest

from tests.api.helpers import CHUNK_MAIN, SAMPLE_ID, ingest_sample
from tests.api.test_highlights import batch
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.pdfs import ROTATED_SENTENCES, write_rotated_pdf

SAMPLE = Path("sample") / "sample-assembly.pdf"
PDF_URL = f"/v2/documents/{SAMPLE_ID}/pdf"


async def test_pdf_etag_ranges_and_range_errors(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    stored = await ingest_sample(settings)
    content = (pdf_root / SAMPLE).read_bytes()
    async with app_client(settings) as client:
        whole = await client.get(PDF_URL)
        assert whole.status_code == 200
        assert whole.content == content
        document = (await client.get(f"/v2/documents/{SAMPLE_ID}")).json()
        assert whole.headers["etag"] == f'"{document["sha256"]}"'
        assert stored["document_id"] == SAMPLE_ID
        again = await client.get(PDF_URL, headers={"if-none-match": whole.headers["etag"]})
        assert again.status_code == 304

        part = await client.get(PDF_URL, headers={"range": "bytes=0-99"})
        assert part.status_code == 206
        assert part.content == content[:100]
        past = await client.get(PDF_URL, headers={"range": f"bytes={len(content) + 10}-"})
        assert past.status_code == 416
        assert past.json()["error"]["code"] == "range_not_satisfiable"
        assert past.headers["content-range"] == f"bytes */{len(content)}"
        garbled = await client.get(PDF_URL, headers={"range": "pages=1-2"})
        assert (garbled.status_code, garbled.content) == (200, content)

        # Replaced on disk: served as it is, but no longer under the ingested content's ETag.
        doc = pymupdf.open(pdf_root / SAMPLE)
        doc[0].insert_text((72, 800), "A line added later.", fontname="helv", fontsize=9)
        doc.save(tmp_path / "other.pdf")
        doc.close()
        shutil.copyfile(tmp_path / "other.pdf", pdf_root / SAMPLE)
        replaced = await client.get(PDF_URL, headers={"if-none-match": whole.headers["etag"]})
        assert replaced.status_code == 200
        assert replaced.headers["etag"] != whole.headers["etag"]


def _yellow_share(pix: pymupdf.Pixmap, box: pymupdf.IRect) -> float:
    """Share of the pixels in ``box`` that carry the highlight fill: rgb(255, 214, 0) at 45% over
    white paper is about (255, 237, 140); ink under the fill is dark and does not count."""
    yellow = total = 0
    for y in range(max(box.y0, 0), min(box.y1, pix.height)):
        for x in range(max(box.x0, 0), min(box.x1, pix.width)):
            r, g, b = pix.pixel(x, y)[:3]
            total += 1
            yellow += int(r > 220 and g > 200 and b < 180 and r - b > 60)
    return yellow / max(total, 1)


async def test_page_preview_draws_the_highlights_on_their_words(
    database_url: str, pdf_root: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        data = (await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))).json()
        highlight = data["results"][0]["highlights"][0]
        url = f"/v2/documents/{SAMPLE_ID}/pages/{highlight['page']}.png"
        response = await client.get(
            url, params={"highlight": highlight["highlight_id"], "scale": 2}
        )
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == "image/png"
        cached = await client.get(
            url,
            params={"highlight": highlight["highlight_id"], "scale": 2},
            headers={"if-none-match": response.headers["etag"]},
        )
        assert cached.status_code == 304
        plain = await client.get(url, params={"scale": 2})
        assert plain.status_code == 200
        assert plain.headers["etag"] != response.headers["etag"]
        assert (await client.get(url, params={"highlight": "h_" + "0" * 32})).status_code == 404
        missing = await client.get(f"/v2/documents/{SAMPLE_ID}/pages/99.png")
        assert missing.status_code == 404
        # Says what to fix: the pages there are, and from where they are numbered.
        assert missing.json()["error"]["message"] == (
            f"document '{SAMPLE_ID}' has no page 99: it has 3 pages, numbered from 1"
        )
        assert (await client.get(url, params={"highlight": "bad"})).status_code == 422
    pix = pymupdf.Pixmap(response.content)
    assert (pix.width, pix.height) == (595 * 2, 842 * 2)
    for rect in highlight["rects"]:
        box = pymupdf.IRect(
            *(round(v * 2) for v in (rect["x0"], rect["y0"], rect["x1"], rect["y1"]))
        )
        assert _yellow_share(pix, box) > 0.6, rect
    # Well away from the highlight, the page is as it was: no fill.
    assert _yellow_share(pix, pymupdf.IRect(100, 1400, 900, 1600)) == 0


@pytest.mark.parametrize("rotation", [90, 270])
async def test_page_preview_of_a_rotated_page(
    database_url: str, pdf_root: Path, rotation: int
) -> None:
    write_rotated_pdf(pdf_root / "rotated.pdf")
    page = list(ROTATED_SENTENCES).index(rotation) + 1
    sentence = ROTATED_SENTENCES[rotation]
    chunk = {"id": "rot", "text": sentence, "page_start": page, "page_end": page}
    async with app_client(make_settings(database_url, pdf_root)) as client:
        put = await client.put(
            "/v2/documents/rotated", json={"source_path": "rotated.pdf", "chunks": [chunk]}
        )
        assert put.status_code == 201
        data = (
            await client.post("/v2/highlights/batch", json=batch("rot", answer=sentence))
        ).json()
        (highlight,) = data["results"][0]["highlights"]
        png = await client.get(
            f"/v2/documents/rotated/pages/{page}.png",
            params={"highlight": highlight["highlight_id"]},
        )
    assert png.status_code == 200
    pix = pymupdf.Pixmap(png.content)
    assert (pix.width, pix.height) == (
        round(highlight["page_width"]),
        round(highlight["page_height"]),
    )
    for rect in highlight["rects"]:
        box = pymupdf.IRect(*(round(v) for v in (rect["x0"], rect["y0"], rect["x1"], rect["y1"])))
        assert _yellow_share(pix, box) > 0.6, rect


async def test_page_preview_of_a_pdf_changed_on_disk_is_409(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    doc = pymupdf.open(pdf_root / SAMPLE)
    doc[0].insert_text((72, 800), "A line added later.", fontname="helv", fontsize=9)
    doc.save(tmp_path / "other.pdf")
    doc.close()
    shutil.copyfile(tmp_path / "other.pdf", pdf_root / SAMPLE)
    async with app_client(settings) as client:
        response = await client.get(f"/v2/documents/{SAMPLE_ID}/pages/1.png")
    assert response.status_code == 409
    assert "re-ingest" in response.json()["error"]["message"]
