"""Per-PDF text index: every character with its box, plus the normalised skeleton to search.

Built once per PDF (PyMuPDF, blocking; scanned pages through OCR, ``ocr.py``) and cached by
content hash (``index_cache.py``): in memory, optionally on disk and in a store shared by
replicas, as data-only blobs (``index_codec.py``; never pickle, since a cache directory or bucket
that others can write must not be able to run code here).
Character boxes stay in the page's unrotated frame, where lines of text are horizontal;
``rotations`` lets callers turn rectangles into the frame a viewer displays
(``geometry.displayed``).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymupdf

from app.alignment.furniture import FurnitureLine, LineBox, find_furniture
from app.alignment.grams import GramTable
from app.alignment.margins import (
    MarginNumber,
    NumberCandidate,
    hide,
    leading_number,
    margin_numbers,
)
from app.alignment.ocr import OcrPage
from app.alignment.pdf import open_pdf
from app.alignment.readings import Readings, build_readings
from app.alignment.text import Normalized, normalize

# Bump whenever the blob layout (index_codec.py), what an index holds or the normalisation
# changes: blobs are named by it, so stale ones are never read.
INDEX_VERSION = 8

# Ligatures stay single glyphs (one box, expanded by normalisation); clip to the page so text
# hidden outside the crop box is never "found"; no images (they cost time and are not text).
_TEXT_FLAGS = (
    pymupdf.TEXT_PRESERVE_LIGATURES
    | pymupdf.TEXT_PRESERVE_WHITESPACE
    | pymupdf.TEXT_MEDIABOX_CLIP
    | pymupdf.TEXT_CID_FOR_UNKNOWN_UNICODE
)

NO_LINE = -1
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


class _Builder:
    def __init__(self) -> None:
        self.chars: list[str] = []
        self.boxes: array[float] = array("f")
        self.lines: array[int] = array("i")
        self.line_count = 0
        self.margin_numbers: list[MarginNumber] = []
        self.line_boxes: list[LineBox] = []
        self.page = 0
        self.confidence: array[int] | None = None  # kept once a page is read by OCR

    def _confident(self, count: int, value: int = 100) -> None:
        if self.confidence is not None:
            self.confidence.extend([value] * count)

    def add_line(self, chars: list[dict[str, Any]]) -> NumberCandidate | None:
        start = len(self.chars)
        for char in chars:
            self.chars.append(char["c"])
            self.boxes.extend(char["bbox"])
            self.lines.append(self.line_count)
        self._confident(len(chars))
        self.line_count += 1
        end = len(self.chars)
        self.add_break()
        y0 = min(char["bbox"][1] for char in chars)
        y1 = max(char["bbox"][3] for char in chars)
        self.line_boxes.append(LineBox(self.page, start, end, y0, y1))
        if not (chars[0]["c"].isdigit() or chars[0]["c"].isspace()):
            return None
        line = "".join(self.chars[start:end])
        return leading_number(line, start, self.boxes[4 * start : 4 * end])

    def add_break(self) -> None:
        self.chars.append("\n")
        self.boxes.extend((0.0, 0.0, 0.0, 0.0))
        self.lines.append(NO_LINE)
        self._confident(1)

    def add_ocr_page(self, ocr: OcrPage) -> None:
        """A page's lines as OCR read them (boxes already in the displayed frame)."""
        PageTooDense.check(ocr.page, sum(len(line.text) for line in ocr.lines))
        if self.confidence is None:
            self.confidence = array("i", [100] * len(self.chars))
        self.page = ocr.page
        for line in ocr.lines:
            if not line.text:
                continue
            chars = [
                {"c": c, "bbox": line.boxes[4 * k : 4 * k + 4]} for k, c in enumerate(line.text)
            ]
            start = len(self.confidence)
            self.add_line(chars)
            # add_line counted the line (and its break) as read with certainty: correct that.
            self.confidence[start : start + len(line.text)] = array("i", line.confidence)

    def add_page(self, page: Any, number: int) -> None:
        # Counted on MuPDF's own text page first: the Python dicts of "rawdict" cost about
        # 600 bytes per character, which is where a bomb would take the memory.
        textpage = page.get_textpage(flags=_TEXT_FLAGS)
        PageTooDense.check(number, len(textpage.extractText()))
        content = page.get_text("rawdict", flags=_TEXT_FLAGS, textpage=textpage)
        self.page = number
        candidates: list[NumberCandidate] = []
        for block in content["blocks"]:
            for line in block.get("lines", ()):
                chars = [char for span in line["spans"] for char in span["chars"]]
                if chars and (candidate := self.add_line(chars)) is not None:
                    candidates.append(candidate)
        self.margin_numbers.extend(margin_numbers(number, candidates))


def build_index(pdf: Path | bytes, ocr_pages: Mapping[int, OcrPage] | None = None) -> DocumentIndex:
    """Blocking: index a PDF given by path or by its bytes (what ``PdfStorage.read_verified``
    returns, so the content indexed is the content whose hash was checked). ``ocr_pages``: the
    pages read by OCR (``ocr.py``), which replace those pages' text layers."""
    ocr_pages = ocr_pages or {}
    builder = _Builder()
    sizes: list[tuple[float, float]] = []
    rotations: list[int] = []
    char_page_start: array[int] = array("i", [0])
    with open_pdf(pdf) as doc:
        for number, page in enumerate(doc, start=1):
            sizes.append((float(page.rect.width), float(page.rect.height)))
            ocr = ocr_pages.get(number)
            rotations.append(ocr.rotation if ocr is not None else int(page.rotation) % 360)
            if ocr is not None:
                builder.add_ocr_page(ocr)
            else:
                builder.add_page(page, number)
            builder.add_break()
            char_page_start.append(len(builder.chars))
    chars = "".join(builder.chars)
    numbers = tuple(builder.margin_numbers)
    # Headers and footers are found by their place in the text frame (before rotation).
    text_heights = [
        width if rotation in (90, 270) else height
        for (width, height), rotation in zip(sizes, rotations, strict=True)
    ]
    furniture, furniture_pattern = find_furniture(chars, builder.line_boxes, text_heights)
    norm = normalize(hide(chars, numbers))
    norm_page_start = array("i", (bisect_left(norm.origin, start) for start in char_page_start))
    return DocumentIndex(
        page_count=len(sizes),
        sizes=tuple(sizes),
        chars=chars,
        boxes=builder.boxes,
        lines=builder.lines,
        char_page_start=char_page_start,
        norm=norm,
        norm_page_start=norm_page_start,
        grams=GramTable(norm.text),
        margin_numbers=numbers,
        furniture=furniture,
        furniture_pattern=furniture_pattern,
        rotations=tuple(rotations),
        readings=build_readings(chars, norm, builder.boxes, builder.lines, char_page_start),
        confidence=builder.confidence if builder.confidence is not None else array("i"),
        ocr_pages=tuple(sorted(p for p in ocr_pages if 1 <= p <= len(sizes))),
    )
