"""Helpers for API tests: ingest with the real CLI code path, and read back what rects cover."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pymupdf
from rapidfuzz import fuzz

from app.core.config import Settings
from app.services import ingest_file

SAMPLE_ID = "sample"
CHUNK_MAIN = f"{SAMPLE_ID}-c0000"  # pages 1-2: the water bill debate and the road motion
CHUNK_LIGATURES = f"{SAMPLE_ID}-c0001"  # page 2: the finance paragraph with fi/fl ligatures


async def ingest_sample(settings: Settings) -> dict[str, Any]:
    pdf = settings.pdf_root / "sample" / "sample-assembly.pdf"
    return await ingest_file(settings, pdf, SAMPLE_ID)


def text_under(pdf: Path, rects: list[dict[str, Any]]) -> str:
    """The PDF's own words inside the returned rectangles, in order: proof the rects cover the
    sentence, independent of the locator's matched_text."""
    with pymupdf.open(pdf) as doc:
        parts = []
        for r in rects:
            page = doc[r["page"] - 1]
            # Shrink vertically a little so glyphs of the neighbouring lines are not caught.
            height = r["y1"] - r["y0"]
            clip = pymupdf.Rect(r["x0"], r["y0"] + height * 0.3, r["x1"], r["y1"] - height * 0.3)
            parts.append(page.get_textbox(clip).strip())
    return " ".join(parts)


def similarity(a: str, b: str) -> float:
    def norm(s: str) -> str:
        s = s.replace("\ufb01", "fi").replace("\ufb02", "fl").replace("-\n", "").replace("- ", "")
        return " ".join(s.split()).lower()

    return float(fuzz.ratio(norm(a), norm(b)))


def ocr_line(png: bytes) -> str:
    """What Tesseract reads in an image of one line of English text."""
    read = subprocess.run(
        ["tesseract", "stdin", "stdout", "--psm", "7", "-l", "eng"],
        input=png,
        capture_output=True,
        check=True,
        env={**os.environ, "OMP_THREAD_LIMIT": "1"},
    )
    return read.stdout.decode().strip()


def ocr_under(pdf: Path, rects: list[dict[str, Any]]) -> str:
    """What Tesseract reads in the page image inside the returned rectangles (unrotated pages),
    read afresh at 300 dpi: for a scan, proof independent of the index that the rectangles
    cover the sentence."""
    parts = []
    with pymupdf.open(pdf) as doc:
        for r in rects:
            page = doc[r["page"] - 1]
            clip = pymupdf.Rect(r["x0"] - 2, r["y0"] - 2, r["x1"] + 2, r["y1"] + 2)
            image = page.get_pixmap(dpi=300, clip=clip, colorspace=pymupdf.csGRAY).tobytes("png")
            parts.append(ocr_line(image))
    return " ".join(parts)


def sse_events(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The (event, data) pairs of a whole event-stream body, read at once."""
    events = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            events.append((fields["event"], json.loads(fields["data"])))
    return events
