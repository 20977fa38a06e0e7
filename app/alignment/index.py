"""Per-PDF text index: every character with its box, plus the normalised skeleton to search.

Built once per PDF (PyMuPDF, blocking) and cached by content hash: in memory, optionally on
disk and in a store shared by replicas, as data-only blobs (``index_codec.py``; never pickle,
since a cache directory or bucket that others can write must not be able to run code here).
Character boxes stay in the page's unrotated frame, where lines of text are horizontal;
``rotations`` lets callers turn rectangles into the frame a viewer displays
(``geometry.displayed``).
"""

from __future__ import annotations

import logging
import os
import re
import stat
import tempfile
import threading
import time
from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

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

# Bump whenever the blob layout (index_codec.py), what an index holds or the normalisation
# changes: blobs are named by it, so stale ones are never read.
INDEX_VERSION = 7

# Ligatures stay single glyphs (one box, expanded by normalisation); clip to the page so text
# hidden outside the crop box is never "found"; no images (they cost time and are not text).
_TEXT_FLAGS = (
    pymupdf.TEXT_PRESERVE_LIGATURES
    | pymupdf.TEXT_PRESERVE_WHITESPACE
    | pymupdf.TEXT_MEDIABOX_CLIP
    | pymupdf.TEXT_CID_FOR_UNKNOWN_UNICODE
)

log = logging.getLogger(__name__)

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


class SharedBlobs(Protocol):
    """Index blobs shared between replicas (an object store): blocking calls. Names are flat
    (``<sha256>.v<INDEX_VERSION>.idx``). ``get`` is None when there is no such blob; any other
    failure may raise, and the cache carries on without the store."""

    def get(self, name: str) -> bytes | None: ...

    def put(self, name: str, data: bytes) -> None: ...


class IndexCache:
    """Thread-safe LRU of built indexes keyed by sha256, backed by an optional directory of
    index blobs (``index_codec``: data only, never pickle) and an optional shared store.

    A lookup tries memory, the local file, the shared blob, then ``build``; a build is written
    to both, a shared hit to the local file. A file or blob that does not decode is a miss (and
    is overwritten). Concurrent ``get`` calls for the same file build it once; other files
    proceed in parallel. ``on_build`` is told each build's seconds (for metrics; this package
    imports none). The built index itself usually comes back from a PDF worker process through
    pebble, which pickles it over a pipe: that channel is between this service's own processes
    and stays as it is.
    """

    def __init__(
        self,
        cache_dir: Path | None = None,
        max_entries: int = 16,
        shared: SharedBlobs | None = None,
        on_build: Callable[[float], None] | None = None,
    ) -> None:
        self._cache_dir = cache_dir
        self._shared = shared
        self._on_build = on_build
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
        persisted = self._cache_dir is not None or self._shared is not None
        if persisted and not _SHA256.fullmatch(sha256):
            # The key names files and blobs: only a digest may, never a path.
            raise ValueError(f"index cache key {sha256[:80]!r} is not a hex SHA-256")
        with self._lock:
            key_lock = self._key_locks.setdefault(sha256, threading.Lock())
        with key_lock:
            cached = self._lookup(sha256)
            if cached is not None:
                return cached
            index = self._load(blob_name(sha256))
            if index is None:
                index = self._build(blob_name(sha256), build)
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

    def _load(self, name: str) -> DocumentIndex | None:
        """The index from the local file, else from the shared store (then kept locally)."""
        data = self._read_local(name)
        if data is not None:
            index = _decoded(data, f"cached index {name}")
            if index is not None:
                return index
        data = self._read_shared(name)
        if data is None:
            return None
        index = _decoded(data, f"shared index {name}")
        if index is not None:
            self._write_local(name, data)
        return index

    def _build(self, name: str, build: Callable[[], DocumentIndex]) -> DocumentIndex:
        started = time.perf_counter()
        index = build()
        if self._on_build is not None:
            self._on_build(time.perf_counter() - started)
        if self._cache_dir is not None or self._shared is not None:
            try:
                data = index_codec.encode_index(index)
            except ValueError as exc:  # a non-finite page size: kept in memory only
                log.warning("index %s is not cached (%s)", name, exc)
                return index
            self._write_local(name, data)
            self._write_shared(name, data)
        return index

    def _read_local(self, name: str) -> bytes | None:
        if self._cache_dir is None:
            return None
        try:
            # Non-blocking, so that a FIFO planted under the name cannot hang the reader.
            fd = os.open(self._cache_dir / name, os.O_RDONLY | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as handle:
                facts = os.fstat(fd)
                if stat.S_ISREG(facts.st_mode) and facts.st_size <= index_codec.MAX_BLOB_BYTES:
                    return handle.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("cannot read cached index %s (%s)", name, _why(exc))
            return None
        log.warning("cached index %s is not a file of an index's size and is replaced", name)
        return None

    def _write_local(self, name: str, data: bytes) -> None:
        if self._cache_dir is None:
            return
        tmp_name: str | None = None
        try:
            self._cache_dir.mkdir(parents=True, exist_ok=True)
            # Write-then-rename so a concurrent reader in another process never sees half a file.
            fd, tmp_name = tempfile.mkstemp(dir=self._cache_dir, prefix=f".{name}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp_name, self._cache_dir / name)
        except OSError as exc:  # a full disk costs the next process a rebuild, not this request
            log.warning("cannot write cached index %s (%s)", name, _why(exc))
            if tmp_name is not None:
                Path(tmp_name).unlink(missing_ok=True)

    def _read_shared(self, name: str) -> bytes | None:
        if self._shared is None:
            return None
        try:
            return self._shared.get(name)
        except Exception as exc:  # an unreachable store is a miss: the index can be rebuilt
            log.warning("cannot read shared index %s (%s)", name, type(exc).__name__)
            return None

    def _write_shared(self, name: str, data: bytes) -> None:
        if self._shared is None:
            return
        try:
            self._shared.put(name, data)
        except Exception as exc:  # other replicas will build it themselves
            log.warning("cannot share index %s (%s)", name, type(exc).__name__)


_SHA256 = re.compile("[0-9a-f]{64}")


def blob_name(sha256: str) -> str:
    """The file and blob name of the index of the PDF with this content hash."""
    return f"{sha256}.v{INDEX_VERSION}.idx"


def _decoded(data: bytes, what: str) -> DocumentIndex | None:
    try:
        return index_codec.decode_index(data)
    except index_codec.CorruptIndex as exc:
        log.warning("%s is unusable and is replaced (%s)", what, exc)
        return None


def _why(exc: OSError) -> str:
    """An OS error without the absolute path its message carries."""
    return exc.strerror or type(exc).__name__


# Last: the codec builds DocumentIndex objects, so it imports this module, whichever comes first.
from app.alignment import index_codec  # noqa: E402
