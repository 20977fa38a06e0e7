"""Image-only copies of PDF pages for bench/ocr_eval.py (PyMuPDF only: no Pillow, no numpy).

A copy keeps every page's geometry (media box, crop box, /Rotate) and page number; the chosen
pages carry one image of what the original page displays, the others are left blank. The image
is rendered from the page with its /Rotate cleared and inserted on the unrotated page before the
copy's /Rotate is set, so it displays exactly where the original's content displays (inserting
an image on a page already rotated lands it elsewhere when the crop box does not start at 0,0).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pymupdf


@dataclass(frozen=True)
class Variant:
    """How a page is scanned: its resolution, and whether it is degraded (tilted by
    ``tilt`` degrees either way, speckled, saved as JPEG of ``jpeg_quality``)."""

    dpi: int
    degraded: bool = False
    tilt: tuple[float, float] = (0.5, 1.0)
    speckles: float = 0.004  # share of pixels set to a random dark or light grey
    jpeg_quality: int = 30


def _blank(out: pymupdf.Document, page: pymupdf.Page) -> pymupdf.Page:
    new = out.new_page(width=page.mediabox.width, height=page.mediabox.height)
    new.set_mediabox(page.mediabox)
    new.set_cropbox(page.cropbox)
    return new


def _speckle(pixmap: pymupdf.Pixmap, share: float, rng: random.Random) -> None:
    width, height = pixmap.width, pixmap.height
    for _ in range(int(width * height * share)):
        x, y = rng.randrange(width - 1), rng.randrange(height - 1)
        value = rng.choice((rng.randint(0, 90), rng.randint(160, 255)))
        for dx, dy in ((0, 0), (1, 0), (0, 1), (1, 1))[: rng.randint(1, 4)]:
            pixmap.set_pixel(x + dx, y + dy, (value,))


def scan(
    page: pymupdf.Page, variant: Variant, rng: random.Random
) -> tuple[bytes, pymupdf.Rect, float]:
    """The image of ``page`` (whose /Rotate must be 0) and the rectangle to insert it into,
    in the page's coordinates: the page itself, or for a tilted scan a larger rectangle with
    the same centre (the tilt turns the page about its centre at the same scale; the page's
    edges clip what falls outside), and the tilt in degrees."""
    zoom = variant.dpi / 72
    matrix = pymupdf.Matrix(zoom, zoom)
    tilt = 0.0
    if variant.degraded:
        tilt = rng.choice((-1, 1)) * rng.uniform(*variant.tilt)
        matrix.prerotate(tilt)
    pixmap = page.get_pixmap(matrix=matrix, colorspace=pymupdf.csGRAY, alpha=False)
    if not variant.degraded:
        return pixmap.tobytes("png"), page.rect, tilt
    _speckle(pixmap, variant.speckles, rng)
    centre = (page.rect.tl + page.rect.br) / 2
    half = pymupdf.Point(pixmap.width / zoom / 2, pixmap.height / zoom / 2)
    rect = pymupdf.Rect(centre - half, centre + half)
    return pixmap.tobytes("jpg", jpg_quality=variant.jpeg_quality), rect, tilt


def tilted(point: tuple[float, float], centre: pymupdf.Point, tilt: float) -> pymupdf.Point:
    """Where ``point`` of the original page lies on its copy scanned with ``tilt`` degrees."""
    return (pymupdf.Point(point) - centre) * pymupdf.Matrix(tilt) + centre


def image_copy(
    src: Path, pages: list[int], variant: Variant, out: Path, seed: str
) -> dict[int, tuple[pymupdf.Point, float]]:
    """Write ``out``: ``src`` with 1-based ``pages`` as scans and every other page blank.
    Returns each scanned page's centre and tilt (0 unless degraded), for the ground truth."""
    tilts: dict[int, tuple[pymupdf.Point, float]] = {}
    with pymupdf.open(src) as doc, pymupdf.open() as copy:
        for number, page in enumerate(doc, start=1):
            rotation = page.rotation
            new = _blank(copy, page)
            if number in pages:
                page.set_rotation(0)  # in memory only: render the unrotated frame
                rng = random.Random(f"{seed}:{src.name}:{number}")
                image, rect, tilt = scan(page, variant, rng)
                new.insert_image(rect, stream=image)
                tilts[number] = ((page.rect.tl + page.rect.br) / 2, tilt)
            new.set_rotation(rotation)
        copy.save(out, garbage=3, deflate=True)
    return tilts


def text_copy(src: Path, pages: list[int], out: Path) -> None:
    """Write ``out``: ``src`` with 1-based ``pages`` as they are (text layer and all) and
    every other page blank, so the text layer is searched over the same pages as the scans."""
    with pymupdf.open(src) as doc, pymupdf.open() as copy:
        for number, page in enumerate(doc, start=1):
            if number in pages:
                copy.insert_pdf(doc, from_page=number - 1, to_page=number - 1)
            else:
                _blank(copy, page).set_rotation(page.rotation)
        copy.save(out, garbage=3, deflate=True)
