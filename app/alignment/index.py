"""Per-PDF text index: every character with its box, plus the normalised skeleton to search.

Built once per PDF (PyMuPDF, blocking) and cached by content hash, in memory and optionally on
disk, so requests and worker processes reuse it. Character boxes stay in the page's unrotated
frame, where lines of text are horizontal; ``rotations`` lets callers turn rectangles into the
frame a viewer displays (``geometry.displayed``).
"""

from __future__ import annotations

import os
import pickle
import tempfile
import threading
from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
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
from app.alignment.pdf import open_pdf
from app.alignment.readings import Readings, build_readings
from app.alignment.text import Normalized, normalize

# Bump whenever the pickled layout or the normalisation changes: stale disk entries are ignored.
INDEX_VERSION = 6

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
    """Immutable, picklable text index of one PDF.

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

    def add_line(self, chars: list[dict[str, Any]]) -> NumberCandidate | None:
        start = len(self.chars)
        for char in chars:
            self.chars.append(char["c"])
            self.boxes.extend(char["bbox"])
            self.lines.append(self.line_count)
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


def build_index(pdf: Path | bytes) -> DocumentIndex:
    """Blocking: index a PDF given by path or by its bytes (what ``PdfStorage.read_verified``
    returns, so the content indexed is the content whose hash was checked)."""
    builder = _Builder()
    sizes: list[tuple[float, float]] = []
    rotations: list[int] = []
    char_page_start: array[int] = array("i", [0])
    with open_pdf(pdf) as doc:
        for number, page in enumerate(doc, start=1):
            sizes.append((float(page.rect.width), float(page.rect.height)))
            rotations.append(int(page.rotation) % 360)
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
    )


class IndexCache:
    """Thread-safe LRU of built indexes keyed by sha256, backed by an optional pickle directory.

    Concurrent ``get`` calls for the same file build it once; other files proceed in parallel.
    """

    def __init__(self, cache_dir: Path | None = None, max_entries: int = 16) -> None:
        self._cache_dir = cache_dir
        self._max_entries = max(1, max_entries)
        self._entries: OrderedDict[str, DocumentIndex] = OrderedDict()
        # Contents that could not be indexed within the limits, and why: asked again, they are
        # refused at once instead of costing another worker a minute.
        self._refused: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}

    def get(self, sha256: str, build: Callable[[], DocumentIndex]) -> DocumentIndex:
        """The index of the PDF whose content hashes to ``sha256``; ``build`` makes it on a miss.
        The cache trusts the key: checking that a file still has this content is the caller's
        job, on every open (``PdfStorage.verify``), not only on a miss."""
        with self._lock:
            key_lock = self._key_locks.setdefault(sha256, threading.Lock())
        with key_lock:
            cached = self._lookup(sha256)
            if cached is not None:
                return cached
            index = self._load(sha256)
            if index is None:
                index = build()
                self._store(sha256, index)
            self._remember(sha256, index)
            return index

    def refuse(self, sha256: str, reason: str) -> None:
        with self._lock:
            self._refused[sha256] = reason
            while len(self._refused) > 256:
                self._refused.popitem(last=False)

    def refusal(self, sha256: str) -> str | None:
        with self._lock:
            return self._refused.get(sha256)

    def _lookup(self, key: str) -> DocumentIndex | None:
        with self._lock:
            index = self._entries.get(key)
            if index is not None:
                self._entries.move_to_end(key)
            return index

    def _remember(self, key: str, index: DocumentIndex) -> None:
        with self._lock:
            self._entries[key] = index
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                evicted, _ = self._entries.popitem(last=False)
                self._key_locks.pop(evicted, None)

    def _path(self, key: str) -> Path | None:
        if self._cache_dir is None:
            return None
        return self._cache_dir / f"{key}.v{INDEX_VERSION}.pickle"

    def _load(self, key: str) -> DocumentIndex | None:
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        try:
            # Only this class writes the cache directory, so unpickling it is trusted.
            with path.open("rb") as handle:
                index = pickle.load(handle)
        except Exception:  # a truncated or foreign file is just a cache miss
            return None
        return index if isinstance(index, DocumentIndex) else None

    def _store(self, key: str, index: DocumentIndex) -> None:
        path = self._path(key)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write-then-rename so a concurrent reader in another process never sees half a file.
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{key}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(index, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp_name, path)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
