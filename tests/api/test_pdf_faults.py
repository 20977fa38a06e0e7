"""PDF files that change under a running service, rotated pages and encrypted files: a highlight is
either on the words a viewer shows, or it is not given at all."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from app.core.errors import BadRequest
from tests.api.helpers import CHUNK_MAIN, ingest_sample, similarity
from tests.api.test_highlights import batch
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.pdfs import ROTATED_SENTENCES, write_encrypted_pdf, write_rotated_pdf

SAMPLE = Path("sample") / "sample-assembly.pdf"


async def _batch(client: Any, *chunk_ids: str, answer: str | None = None) -> dict[str, Any]:
    body = batch(*chunk_ids) if answer is None else batch(*chunk_ids, answer=answer)
    response = await client.post("/v2/highlights/batch", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _replace_with_other_content(pdf: Path, tmp_path: Path) -> None:
    doc = pymupdf.open(pdf)
    doc[0].insert_text((72, 800), "A line added later.", fontname="helv", fontsize=9)
    other = tmp_path / "other.pdf"
    doc.save(other)
    doc.close()
    shutil.copyfile(other, pdf)  # in place: same inode, as an editor or `cp` would do


async def test_pdf_replaced_while_its_index_is_cached_is_pdf_changed(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    settings = make_settings(database_url, pdf_root)
    await ingest_sample(settings)
    pdf = pdf_root / SAMPLE
    original = pdf.read_bytes()
    async with app_client(settings) as client:
        first = await _batch(client, CHUNK_MAIN)
        assert first["results"][0]["status"] == "highlighted"

        _replace_with_other_content(pdf, tmp_path)
        (changed,) = (await _batch(client, CHUNK_MAIN))["results"]
        assert (changed["status"], changed["reason"]) == ("fallback", "pdf_changed")
        assert changed["highlights"] == []
        assert changed["link"].endswith("/pdf#page=1")

        pdf.write_bytes(original[: len(original) // 2])  # truncated by a failed copy
        (truncated,) = (await _batch(client, CHUNK_MAIN))["results"]
        assert (truncated["status"], truncated["reason"]) == ("fallback", "pdf_changed")

        pdf.write_bytes(original)  # put back: the ingested content highlights again
        (restored,) = (await _batch(client, CHUNK_MAIN))["results"]
        assert restored["status"] == "highlighted"


def _ink_box(page: pymupdf.Page) -> pymupdf.Rect:
    """Bounding box of the dark pixels of the page as rendered, i.e. as a viewer shows it, in PDF
    points (rendered at 72 dpi, so one pixel is one point)."""
    pix = page.get_pixmap(dpi=72, colorspace=pymupdf.csGRAY)
    samples = pix.samples
    xs: list[int] = []
    ys: list[int] = []
    for y in range(pix.height):
        row = samples[y * pix.stride : y * pix.stride + pix.width]
        dark = [x for x, value in enumerate(row) if value < 128]
        if dark:
            xs += (dark[0], dark[-1])
            ys.append(y)
    return pymupdf.Rect(min(xs), min(ys), max(xs) + 1, max(ys) + 1)


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
async def test_rects_are_in_the_displayed_frame_of_a_rotated_page(
    database_url: str, pdf_root: Path, rotation: int
) -> None:
    write_rotated_pdf(pdf_root / "rotated.pdf")
    page_number = list(ROTATED_SENTENCES).index(rotation) + 1
    sentence = ROTATED_SENTENCES[rotation]
    chunk = {"id": "rot", "text": sentence, "page_start": page_number, "page_end": page_number}
    settings = make_settings(database_url, pdf_root)
    async with app_client(settings) as client:
        put = await client.put(
            "/v2/documents/rotated", json={"source_path": "rotated.pdf", "chunks": [chunk]}
        )
        assert put.status_code == 201, put.text
        (result,) = (await _batch(client, "rot", answer=sentence))["results"]
    assert result["status"] == "highlighted", result
    (highlight,) = result["highlights"]
    with pymupdf.open(pdf_root / "rotated.pdf") as doc:
        page = doc[page_number - 1]
        assert (highlight["page_width"], highlight["page_height"]) == (
            pytest.approx(page.rect.width),
            pytest.approx(page.rect.height),
        )
        ink = _ink_box(page)
        rects = [pymupdf.Rect(r["x0"], r["y0"], r["x1"], r["y1"]) for r in highlight["rects"]]
        union = pymupdf.Rect(rects[0])
        for rect in rects[1:]:
            union |= rect
        # The drawn rectangles cover the ink of the sentence, as displayed, and not much more.
        assert union.contains(ink + (2, 2, -2, -2)), (union, ink)
        assert union.get_area() < 1.6 * ink.get_area(), (union, ink)
        # And the words under them, read in the displayed frame, are the sentence.
        derotate = page.derotation_matrix
        under = " ".join(page.get_textbox(rect * derotate) for rect in rects)
    assert similarity(under, sentence) >= 90, under


async def test_encrypted_pdf_is_refused_at_put_and_ingest(
    database_url: str, pdf_root: Path, sample_pdf: Path
) -> None:
    from app.services import ingest_file

    write_encrypted_pdf(sample_pdf, pdf_root / "locked.pdf")
    chunk = {"id": "l1", "text": "The House met.", "page_start": 1, "page_end": 1}
    settings = make_settings(database_url, pdf_root)
    async with app_client(settings) as client:
        response = await client.put(
            "/v2/documents/locked", json={"source_path": "locked.pdf", "chunks": [chunk]}
        )
        assert response.status_code == 422, response.text
        message = response.json()["error"]["message"]
        assert "locked.pdf is encrypted with a user password" in message
        assert str(pdf_root) not in message
        assert (await client.get("/v2/documents/locked")).status_code == 404
    with pytest.raises(BadRequest, match="encrypted with a user password"):
        await ingest_file(settings, pdf_root / "locked.pdf", "locked")
