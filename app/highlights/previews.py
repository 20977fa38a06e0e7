"""Page preview images: one PDF page rendered with highlights drawn on it, for chat UIs that show
a thumbnail instead of a viewer. Blocking (PyMuPDF): call it from a worker thread.

The highlights are painted on the rendered image, in the displayed frame the API's rectangles
are in, not drawn into the PDF: PyMuPDF's drawing coordinates on a rotated page whose crop box is
off the media box's origin do not match its text coordinates, and the image is what users see.
"""

from __future__ import annotations

from collections.abc import Sequence

import pymupdf

from app.highlights.schemas import Rect

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


def render_page(pdf: bytes, page_number: int, rects: Sequence[Rect], scale: float) -> bytes:
    """PNG of page ``page_number`` (1-based) as displayed, with ``rects`` (the API's displayed
    frame, PDF points) filled."""
    with pymupdf.open(stream=pdf) as doc:
        page = doc[page_number - 1]
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
    return png
