"""A PDF's text layer (PyMuPDF ``rawdict``) and its OCR'd pages as a ``DocumentIndex``.

Blocking; run in the PDF workers (``workers.py``) for files the service did not make.
"""

from __future__ import annotations

import gc
import math
from array import array
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any

import pymupdf

from app.alignment.furniture import LineBox, find_furniture
from app.alignment.grams import GramTable
from app.alignment.index import MAX_PAGE_CHARS, DocumentIndex, PageTooDense
from app.alignment.layout import NO_LINE, Segment, line_pieces
from app.alignment.margins import (
    MarginNumber,
    NumberCandidate,
    hide,
    leading_number,
    margin_numbers,
)
from app.alignment.readings import build_readings
from app.alignment.text import normalize
from app.pdfs.ocr import OcrPage
from app.pdfs.pdf import open_pdf

# Ligatures stay single glyphs (one box, expanded by normalisation); clip to the page so text
# hidden outside the crop box is never "found"; no images (they cost time and are not text).
_TEXT_FLAGS = (
    pymupdf.TEXT_PRESERVE_LIGATURES
    | pymupdf.TEXT_PRESERVE_WHITESPACE
    | pymupdf.TEXT_MEDIABOX_CLIP
    | pymupdf.TEXT_CID_FOR_UNKNOWN_UNICODE
)
_CHARS, _C, _BBOX = itemgetter("chars"), itemgetter("c"), itemgetter("bbox")
_Y0, _Y1 = itemgetter(1), itemgetter(3)
# Bytes of a text page's memory pool per character of its extracted text, at the least: MuPDF
# takes each character from the pool (its quad alone is 32 bytes) and each line too, and the
# text holds at most four code points per character (UTF-8 decoded with replacements) and a
# line break per line. About 72 in practice. The pool's size leaves out its first block (4 KiB
# in MuPDF 1.2x), so as much again as any first block could be is added.
_POOL_BYTES_PER_CHAR = 4
_POOL_UNCOUNTED = 64 << 10


def _text_bound(textpage: Any) -> float:
    """At least ``len(textpage.extractText())``, from the size of MuPDF's pool: counting the
    text took a tenth of the time of reading it as "rawdict"; this takes microseconds."""
    try:
        pool = pymupdf.mupdf.ll_fz_pool_size(textpage.this.m_internal.pool)
    except (AttributeError, TypeError):  # another PyMuPDF's bindings: count the text
        return math.inf
    return (int(pool) + _POOL_UNCOUNTED) / _POOL_BYTES_PER_CHAR


class _Builder:
    def __init__(self) -> None:
        self.chars: list[str] = []  # pieces of the text: lines and the breaks after them
        self.size = 0  # characters so far
        self.boxes: array[float] = array("f")
        self.lines: array[int] = array("i")
        self.line_count = 0
        self.margin_numbers: list[MarginNumber] = []
        self.line_boxes: list[LineBox] = []
        self.pieces: list[list[Segment]] = []  # each page's line pieces (layout.segments)
        self.page = 0
        self.confidence: array[int] | None = None  # kept once a page is read by OCR

    def _confident(self, count: int, value: int = 100) -> None:
        if self.confidence is not None:
            self.confidence.extend([value] * count)

    def start_page(self, number: int) -> None:
        self.page = number
        self.pieces.append([])

    def add_line(self, text: str, bboxes: Sequence[Sequence[float]]) -> NumberCandidate | None:
        """One extracted line: its characters and their boxes (one per character)."""
        start = self.size
        count = len(text)
        self.chars.append(text)
        self.boxes.fromlist(list(chain.from_iterable(bboxes)))
        self.lines.extend(array("i", [self.line_count]) * count)
        self._confident(count)
        self.line_count += 1
        self.size = end = start + count
        self.pieces[-1].extend(line_pieces(start, text, bboxes))
        self.add_break()
        y0 = min(map(_Y0, bboxes))
        y1 = max(map(_Y1, bboxes))
        self.line_boxes.append(LineBox(self.page, start, end, y0, y1))
        if not (text[0].isdigit() or text[0].isspace()):
            return None
        return leading_number(text, start, self.boxes[4 * start : 4 * end])

    def add_break(self) -> None:
        self.chars.append("\n")
        self.size += 1
        self.boxes.extend((0.0, 0.0, 0.0, 0.0))
        self.lines.append(NO_LINE)
        self._confident(1)

    def add_ocr_page(self, ocr: OcrPage) -> None:
        """A page's lines as OCR read them (boxes already in the displayed frame)."""
        PageTooDense.check(ocr.page, sum(len(line.text) for line in ocr.lines))
        if self.confidence is None:
            self.confidence = array("i", [100] * self.size)
        self.start_page(ocr.page)
        for line in ocr.lines:
            if not line.text:
                continue
            boxes = [line.boxes[4 * k : 4 * k + 4] for k in range(len(line.text))]
            start = len(self.confidence)
            self.add_line(line.text, boxes)
            # add_line counted the line (and its break) as read with certainty: correct that.
            self.confidence[start : start + len(line.text)] = array("i", line.confidence)

    def add_page(self, page: Any, number: int) -> None:
        # Counted on MuPDF's own text page first: the Python dicts of "rawdict" cost about
        # 600 bytes per character, which is where a bomb would take the memory.
        textpage = page.get_textpage(flags=_TEXT_FLAGS)
        if _text_bound(textpage) > MAX_PAGE_CHARS:  # else the page cannot hold too many
            PageTooDense.check(number, len(textpage.extractText()))
        content = page.get_text("rawdict", flags=_TEXT_FLAGS, textpage=textpage)
        self.start_page(number)
        candidates: list[NumberCandidate] = []
        # Whole lines at a time through C-level iterators: a Python step per character cost
        # as much as PyMuPDF's extraction itself.
        for block in content["blocks"]:
            for line in block.get("lines", ()):
                chars = list(chain.from_iterable(map(_CHARS, line["spans"])))
                if not chars:
                    continue
                text = "".join(map(_C, chars))
                if (candidate := self.add_line(text, list(map(_BBOX, chars)))) is not None:
                    candidates.append(candidate)
        self.margin_numbers.extend(margin_numbers(number, candidates))


def page_count(pdf: Path | bytes) -> int:
    """Blocking: the PDF's page count, read from its page tree (milliseconds, no page parsed):
    what sizes the CPU budget of the jobs on the whole document (``workers.WorkerLimits``)."""
    with open_pdf(pdf) as doc:
        return int(doc.page_count)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a build: PyMuPDF's "rawdict" makes millions of
    short-lived dicts and tuples (none in a cycle, so reference counting frees them all), and
    each young generation filled set off a collection that walked the index built so far:
    about a quarter of a build's CPU time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build_index(pdf: Path | bytes, ocr_pages: Mapping[int, OcrPage] | None = None) -> DocumentIndex:
    """Blocking: index a PDF given by path or by its bytes (what ``PdfStorage.read_verified``
    returns, so the content indexed is the content whose hash was checked). ``ocr_pages``: the
    pages read by OCR (``ocr.py``), which replace those pages' text layers."""
    with _collector_paused():
        return _build_index(pdf, ocr_pages or {})


def _build_index(pdf: Path | bytes, ocr_pages: Mapping[int, OcrPage]) -> DocumentIndex:
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
            char_page_start.append(builder.size)
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
        readings=build_readings(norm, char_page_start, builder.pieces),
        confidence=builder.confidence if builder.confidence is not None else array("i"),
        ocr_pages=tuple(sorted(p for p in ocr_pages if 1 <= p <= len(sizes))),
    )
