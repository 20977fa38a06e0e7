"""Page preview images: one PDF page rendered with highlights drawn on it, for chat UIs that show
a thumbnail instead of a viewer. Blocking (PyMuPDF): run it in the bounded PDF workers
(pdfs/workers.py), where a content bomb costs one job's limits, not the service.

The scale asked for is lowered when the image would have more than ``max_pixels`` pixels: a page
can be 200 inches wide (14,400 points), 207 million pixels at scale 1.

The highlights are painted on the rendered image, in the displayed frame the API's rectangles
are in, not drawn into the PDF: PyMuPDF's drawing coordinates on a rotated page whose crop box is
off the media box's origin do not match its text coordinates, and the image is what users see.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from app.highlights.schemas import Rect
from app.pdfs.pdf import open_pdf

FILL = (255, 214, 0)  # the reference viewer's highlight colour
FILL_OPACITY = 0.45


def _blend(value: float, over: int) -> int:
    return round(value * (1 - FILL_OPACITY) + over * FILL_OPACITY)


def _packed(channels: Sequence[int]) -> int:
    return (channels[0] << 16) | (channels[1] << 8) | channels[2]


# tint_with maps each channel linearly from black to white: with these two ends the mapping is
# exactly "FILL at FILL_OPACITY over the page".
_ON_BLACK = _packed([_blend(0, c) for c in FILL])
_ON_WHITE = _packed([_blend(255, c) for c in FILL])


def bounded_scale(width: float, height: float, scale: float, max_pixels: int) -> float:
    """``scale``, or the largest scale at which a ``width`` x ``height`` points page has at most
    ``max_pixels`` pixels (rounded down to a thousandth, so the bound holds after rounding)."""
    area = max(width, 1.0) * max(height, 1.0)
    if area * scale * scale <= max_pixels:
        return scale
    return math.floor(math.sqrt(max_pixels / area) * 1000) / 1000


def render_page(
    pdf: bytes, page_number: int, rects: Sequence[Rect], scale: float, max_pixels: int
) -> tuple[bytes, float]:
    """PNG of page ``page_number`` (1-based) as displayed, with ``rects`` (the API's displayed
    frame, PDF points) filled, and the scale it was rendered at."""
    import pymupdf  # in the PDF worker that renders: the service never imports it itself

    with open_pdf(pdf) as doc:
        page = doc[page_number - 1]
        scale = bounded_scale(page.rect.width, page.rect.height, scale, max_pixels)
        pixmap = page.get_pixmap(matrix=pymupdf.Matrix(scale, scale), alpha=False)
    if rects:
        tinted = pymupdf.Pixmap(pixmap, 0)  # a copy, without alpha like its source
        tinted.tint_with(_ON_BLACK, _ON_WHITE)
        for rect in rects:
            area = (
                pymupdf.IRect(
                    round(rect.x0 * scale),
                    round(rect.y0 * scale),
                    round(rect.x1 * scale),
                    round(rect.y1 * scale),
                )
                & pixmap.irect
            )
            if not area.is_empty:
                pixmap.copy(tinted, area)
    png: bytes = pixmap.tobytes("png")
    return png, scale
