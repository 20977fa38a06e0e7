"""Per-PDF text index: every character with its box, plus the normalised skeleton to search.

Data only: built once per PDF by ``app/pdfs/extract.py`` (PyMuPDF; scanned pages through OCR)
and cached by content hash in ``app/pdfs/index_cache.py`` (data-only blobs, ``index_codec.py``).
Character boxes stay in the page's unrotated frame, where lines of text are horizontal;
``rotations`` lets callers turn rectangles into the frame a viewer displays
(``geometry.displayed``).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from dataclasses import dataclass, field

from app.alignment.furniture import FurnitureLine
from app.alignment.grams import GramTable
from app.alignment.margins import MarginNumber
from app.alignment.readings import Readings
from app.alignment.text import Normalized

# Bump whenever the blob layout (index_codec.py), what an index holds or the normalisation
# changes: blobs are named by it, so stale ones are never read.
INDEX_VERSION = 9

# Tesseract word confidence (0-100) at or above which OCR is taken as read correctly.
CONFIDENT = 90
# More characters than this on one page is not text a reader reads (a dense page of small print
# holds about 15,000): it is a generated bomb, and indexing it would cost gigabytes.
MAX_PAGE_CHARS = 200_000


class PageTooDense(ValueError):
    """A page with more characters than ``MAX_PAGE_CHARS``."""

    @classmethod
    def check(cls, page: int, count: int) -> None:
        """Raise for 1-based ``page`` holding ``count`` characters when that is too many."""
        if count > MAX_PAGE_CHARS:
            raise cls(
                f"page {page} holds {count} characters (at most {MAX_PAGE_CHARS} are indexed)"
            )


@dataclass(frozen=True, slots=True, eq=False)
class DocumentIndex:
    """Immutable text index of one PDF (picklable, for the PDF worker processes).

    ``chars`` holds every extracted character, with a synthetic "\\n" after each line;
    ``boxes`` has four floats per character (x0, y0, x1, y1, page points, origin at the top-left
    of the crop box before the page's /Rotate is applied);
    ``lines`` gives each character's line number (``NO_LINE`` for the synthetic breaks).
    ``norm`` is the search skeleton of ``chars``; the ``*_page_start`` arrays hold page starts;
    ``grams`` finds seeds for fuzzy matching in ``norm.text``; ``margin_numbers`` are the
    printed line numbers beside the text, which the skeleton leaves out; ``furniture`` are the
    running headers/footers, ``furniture_pattern`` a regex matching runs of their text;
    ``readings`` is a second skeleton of the pages drawn out of reading order.
    """

    page_count: int
    sizes: tuple[tuple[float, float], ...]  # as displayed, i.e. after /Rotate
    chars: str
    boxes: array[float]
    lines: array[int]
    char_page_start: array[int]
    norm: Normalized
    norm_page_start: array[int]
    grams: GramTable
    margin_numbers: tuple[MarginNumber, ...] = ()
    furniture: tuple[FurnitureLine, ...] = ()
    furniture_pattern: str = ""
    rotations: tuple[int, ...] = ()  # each page's /Rotate: 0, 90, 180 or 270
    readings: Readings | None = None  # column readings of pages drawn out of reading order
    # Tesseract's confidence (0-100) of each character, when any page was read by OCR (text
    # layers count as 100); empty otherwise. OCR'd pages have rotation 0: their boxes are in
    # the displayed frame already.
    confidence: array[int] = field(default_factory=lambda: array("i"))
    ocr_pages: tuple[int, ...] = ()

    def page_size(self, page: int) -> tuple[float, float]:
        """Width and height of the page as a viewer shows it (rotation applied)."""
        return self.sizes[page - 1]

    def rotation(self, page: int) -> int:
        return self.rotations[page - 1] if self.rotations else 0

    def text_frame_size(self, page: int) -> tuple[float, float]:
        """Width and height of the frame the character boxes are in (before rotation)."""
        width, height = self.sizes[page - 1]
        return (height, width) if self.rotation(page) in (90, 270) else (width, height)

    def clamp_pages(self, pages: tuple[int, int] | None) -> tuple[int, int]:
        """``pages`` (1-based, inclusive, either order) inside the document; None is all of it.
        A chunk's stored pages may lie beyond a PDF that was replaced by a shorter one."""
        if pages is None:
            return 1, self.page_count
        first, last = sorted(pages)
        return max(1, min(first, self.page_count)), max(1, min(last, self.page_count))

    def has_text(self, page: int) -> bool:
        return self.norm_page_start[page - 1] < self.norm_page_start[page]

    def text_pages(self, pages: tuple[int, int] | None) -> tuple[int, int] | None:
        """``pages`` clamped to the document (``clamp_pages``), or None when none of them has
        text to search (a scan without a text layer, a blank page)."""
        if self.page_count == 0:
            return None
        first, last = self.clamp_pages(pages)
        if not any(self.has_text(page) for page in range(first, last + 1)):
            return None
        return first, last

    def page_of_char(self, char_index: int) -> int:
        """1-based page holding source character ``char_index``."""
        return bisect_right(self.char_page_start, char_index)

    def confidence_of(self, spans: list[tuple[int, int]]) -> float:
        """Mean OCR confidence (0-100) of the visible characters in source ``spans``; 100 where
        no page was read by OCR."""
        if not self.confidence:
            return 100.0
        values = [
            self.confidence[i]
            for start, end in spans
            for i in range(start, end)
            if not self.chars[i].isspace()
        ]
        return sum(values) / len(values) if values else 100.0

    def norm_range(self, first: int, last: int) -> tuple[int, int]:
        """Skeleton half-open range of 1-based inclusive pages ``first..last``."""
        return self.norm_page_start[first - 1], self.norm_page_start[last]
