"""A ``DocumentIndex`` as bytes that are only data: for the disk cache and the shared store.

Loading a pickle runs whatever the file names, and the index cache is read from a directory and
a bucket that other processes and replicas write. A blob here is decoded by reading numbers and
strings and building the known dataclasses from them, after checking every invariant whose
breach would raise later (an ``IndexError`` halfway through a batch) or place a rectangle on a
page that does not exist. A truncated, corrupt or foreign blob raises ``CorruptIndex``, and
nothing else; the cache treats that as a miss.

Checked is consistency, not truth: whoever may write the store can still write an index of
other words. That is the store's permissions' business, as it is for the PDFs themselves.

Layout (integers little-endian)::

    0   8   MAGIC
    8   2   INDEX_VERSION (this layout and what the fields mean: normalisation, grams)
    10  1   compression: 0 none, 1 zlib
    11  5   zero
    16  8   body length as stored
    24  8   body length once decompressed (at most MAX_RAW_BYTES)
    32  32  SHA-256 of bytes 0..32 and the stored body (truncation, bit rot)
    64      body: u32 header length, header (JSON: small fields and the list of sections),
            then each section in the header's order: UTF-8 text (lone surrogates kept, as
            PyMuPDF can extract them) or an array of 4-byte items (``i``, ``I``, ``f``).

The running-header pattern is not stored: it is a regular expression, so one from a foreign
blob could be made to backtrack for ever; it is derived again from the furniture lines.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import sys
import zlib
from array import array
from typing import Any, NoReturn

from app.alignment.furniture import FurnitureLine, LineBox, find_furniture
from app.alignment.grams import GramTable
from app.alignment.index import INDEX_VERSION, DocumentIndex
from app.alignment.margins import MarginNumber
from app.alignment.readings import Readings, Reordered
from app.alignment.text import Normalized

MAGIC = b"HLINDEX\x00"
# A larger index would be a document of some 30 million characters; a blob claiming more is
# refused before anything is allocated for it.
MAX_RAW_BYTES = 1 << 30

_FIXED = struct.Struct("<8sHB5xQQ")
PREFIX_SIZE = _FIXED.size + hashlib.sha256().digest_size
# zlib grows incompressible data by well under 1/256: no blob of a valid index is larger.
MAX_BLOB_BYTES = PREFIX_SIZE + MAX_RAW_BYTES + (MAX_RAW_BYTES >> 8)
_U32 = struct.Struct("<I")
_NONE, _ZLIB = 0, 1
# zlib level 1: the blob shrinks to about 40% (a round trip to the object store is cheaper), and
# higher levels gain a few per cent for twice the time (bench/index_cache_bench.py).
_ZLIB_LEVEL = 1

_TEXT = "s"
_ITEM_SIZE = {"i": 4, "I": 4, "f": 4}
if any(array(code).itemsize != size for code, size in _ITEM_SIZE.items()):
    raise ImportError("index blobs need 4-byte array items for 'i', 'I' and 'f'")
_SWAP = sys.byteorder == "big"

# Each section's name and item type, in the order they follow the header.
_MAIN = (
    ("chars", _TEXT),
    ("boxes", "f"),
    ("lines", "i"),
    ("char_page_start", "i"),
    ("norm.text", _TEXT),
    ("norm.origin", "i"),
    ("norm_page_start", "i"),
    ("grams.keys", "I"),
    ("grams.positions", "i"),
    ("confidence", "i"),  # empty unless a page was read by OCR
)
_READINGS = (
    ("readings.text", _TEXT),
    ("readings.origin", "i"),
    ("readings.breaks", "i"),
    ("readings.page_start", "i"),
    ("readings.grams.keys", "I"),
    ("readings.grams.positions", "i"),
)
_HEADER_KEYS = {
    "page_count",
    "sizes",
    "rotations",
    "margin_numbers",
    "furniture",
    "ocr_pages",
    "sections",
}
_ROTATIONS = {0, 90, 180, 270}


class CorruptIndex(ValueError):
    """Bytes that are not an index blob of this format and version, or not a consistent one."""


def _corrupt(what: str) -> NoReturn:
    raise CorruptIndex(f"not a usable index blob: {what}")


def _finite(values: array[float]) -> bool:
    # One pass in C: a NaN or infinity anywhere makes the sum one, and float32 items cannot add
    # up to an overflow of the double it is taken in.
    return math.isfinite(sum(values))


def _array_bytes(values: array[Any], code: str) -> bytes:
    if values.typecode != code:
        raise TypeError(f"expected an array of {code!r}, got {values.typecode!r}")
    if _SWAP:
        values = array(code, values)
        values.byteswap()
    return values.tobytes()


def _sections(index: DocumentIndex) -> list[tuple[str, str, str | array[Any]]]:
    keys, positions = index.grams.__getstate__()
    values: list[str | array[Any]] = [
        index.chars,
        index.boxes,
        index.lines,
        index.char_page_start,
        index.norm.text,
        index.norm.origin,
        index.norm_page_start,
        keys,
        positions,
        index.confidence,
    ]
    names = list(_MAIN)
    if index.readings is not None:
        norm = index.readings.norm
        keys, positions = index.readings.grams.__getstate__()
        values += [norm.text, norm.origin, norm.breaks, index.readings.page_start, keys, positions]
        names += _READINGS
    return [(name, code, value) for (name, code), value in zip(names, values, strict=True)]


def encode_index(index: DocumentIndex, *, compress: bool = True) -> bytes:
    """The blob of ``index`` (one built by ``build_index``)."""
    if type(index.norm) is not Normalized:
        raise TypeError("only a built index is encoded, not a reading view of one")
    if not _finite(index.boxes):
        raise ValueError("character boxes that are not finite numbers")
    header: dict[str, Any] = {
        "page_count": index.page_count,
        "sizes": [list(size) for size in index.sizes],
        "rotations": list(index.rotations),
        "margin_numbers": [
            [n.page, n.value, n.start, n.end, n.y_centre, n.height] for n in index.margin_numbers
        ],
        "furniture": [[f.page, f.start, f.end, f.top] for f in index.furniture],
        "ocr_pages": list(index.ocr_pages),
        "sections": [],
    }
    buffers: list[bytes] = []
    for name, code, value in _sections(index):
        if isinstance(value, str):
            data = value.encode("utf-8", "surrogatepass")
            header["sections"].append([name, code, len(data)])
        else:
            data = _array_bytes(value, code)
            header["sections"].append([name, code, len(value)])
        buffers.append(data)
    head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("ascii")
    raw = b"".join([_U32.pack(len(head)), head, *buffers])
    body = zlib.compress(raw, _ZLIB_LEVEL) if compress else raw
    fixed = _FIXED.pack(MAGIC, INDEX_VERSION, _ZLIB if compress else _NONE, len(body), len(raw))
    check = hashlib.sha256(fixed)
    check.update(body)
    return b"".join((fixed, check.digest(), body))


def _raw(blob: bytes) -> memoryview:
    """The checked, decompressed body of ``blob``."""
    if len(blob) < PREFIX_SIZE:
        _corrupt("shorter than its prefix")
    view = memoryview(blob)
    fixed, digest, body = view[: _FIXED.size], view[_FIXED.size : PREFIX_SIZE], view[PREFIX_SIZE:]
    magic, version, compression, stored, raw_size = _FIXED.unpack(fixed)
    if magic != MAGIC:
        _corrupt("wrong magic")
    if version != INDEX_VERSION:
        _corrupt(f"index version {version}, expected {INDEX_VERSION}")
    if stored != len(body):
        _corrupt(f"body of {len(body)} bytes, the prefix says {stored}")
    # Zero would mean "no limit" to zlib; at least the header's length is always there.
    if not _U32.size <= raw_size <= MAX_RAW_BYTES:
        _corrupt(f"claims a body of {raw_size} bytes")
    check = hashlib.sha256(fixed)
    check.update(body)
    if check.digest() != digest:
        _corrupt("checksum mismatch")
    if compression == _NONE:
        raw = body
    elif compression == _ZLIB:
        inflater = zlib.decompressobj()
        try:
            raw = memoryview(inflater.decompress(body, raw_size))
        except zlib.error as exc:
            _corrupt(f"zlib: {exc}")
        if not inflater.eof or inflater.unconsumed_tail or inflater.unused_data:
            _corrupt("compressed body does not end where it should")
    else:
        _corrupt(f"unknown compression {compression}")
    if len(raw) != raw_size:
        _corrupt(f"body of {len(raw)} bytes, the prefix says {raw_size}")
    return raw


def _reject_constant(name: str) -> NoReturn:
    _corrupt(f"{name} in the header")


def _header(raw: memoryview) -> tuple[dict[str, Any], int]:
    if len(raw) < _U32.size:
        _corrupt("no header")
    (size,) = _U32.unpack_from(raw)
    end = _U32.size + size
    if end > len(raw):
        _corrupt("header runs past the body")
    try:
        header = json.loads(bytes(raw[_U32.size : end]), parse_constant=_reject_constant)
    except CorruptIndex:
        raise
    except (ValueError, RecursionError) as exc:  # JSON, UTF-8, int digits, nesting
        raise CorruptIndex(f"not a usable index blob: header: {exc}") from None
    if not isinstance(header, dict) or set(header) != _HEADER_KEYS:
        _corrupt("header fields")
    return header, end


def _list(value: Any, what: str, length: int | None = None) -> list[Any]:
    if not isinstance(value, list) or (length is not None and len(value) != length):
        _corrupt(what)
    return value


def _int(value: Any, what: str, lo: int = 0, hi: int = 2**31 - 1) -> int:
    if type(value) is not int or not lo <= value <= hi:
        _corrupt(what)
    return value


def _float(value: Any, what: str) -> float:
    if type(value) not in (int, float) or not math.isfinite(value):
        _corrupt(what)
    return float(value)


class _Sections:
    """The sections after the header, read and typed as the format lists them."""

    def __init__(self, raw: memoryview, start: int, listed: Any) -> None:
        entries = _list(listed, "section list")
        expected = _MAIN + (_READINGS if len(entries) > len(_MAIN) else ())
        _list(entries, "section list", len(expected))
        self.texts: dict[str, str] = {}
        self.arrays: dict[str, array[Any]] = {}
        offset = start
        for entry, (name, code) in zip(entries, expected, strict=True):
            listed_name, listed_code, count = _list(entry, "section entry", 3)
            if (listed_name, listed_code) != (name, code):
                _corrupt(f"a section listed where {name!r} of type {code!r} belongs")
            size = _int(count, f"{name} length", hi=len(raw)) * _ITEM_SIZE.get(code, 1)
            end = offset + size
            if end > len(raw):
                _corrupt(f"{name} runs past the body")
            if code == _TEXT:
                try:
                    self.texts[name] = str(raw[offset:end], "utf-8", "surrogatepass")
                except UnicodeDecodeError:
                    _corrupt(f"{name} is not UTF-8")
            else:
                values = array(code)
                values.frombytes(raw[offset:end])
                if _SWAP:
                    values.byteswap()
                self.arrays[name] = values
            offset = end
        if offset != len(raw):
            _corrupt("bytes after the last section")

    @property
    def has_readings(self) -> bool:
        return "readings.text" in self.texts


def _within(values: array[int], lo: int, hi: int, what: str) -> None:
    """Every value in ``[lo, hi)``."""
    if values and (min(values) < lo or max(values) >= hi):
        _corrupt(f"{what} out of range")


def _page_starts(values: array[int], pages: int, total: int, what: str) -> None:
    """One start per page and the end: from 0 to ``total``, never going back."""
    if len(values) != pages + 1 or values[0] != 0 or values[-1] != total:
        _corrupt(f"{what} do not span the document")
    if any(b < a for a, b in zip(values, values[1:], strict=False)):
        _corrupt(f"{what} go back")


def _grams(keys: array[int], positions: array[int], text: str, what: str) -> GramTable:
    if len(keys) != len(positions):
        _corrupt(f"{what} keys and positions differ in number")
    _within(positions, 0, max(len(text), 1), f"{what} positions")
    table = GramTable.__new__(GramTable)
    table.__setstate__((keys, positions))
    return table


def _normalized(text: str, origin: array[int], chars: int, what: str) -> None:
    if len(origin) != len(text):
        _corrupt(f"{what} text and origin differ in length")
    _within(origin, 0, chars, f"{what} origin")


def _margin_numbers(listed: Any, pages: int, chars: int) -> tuple[MarginNumber, ...]:
    numbers: list[MarginNumber] = []
    last_end = 0
    for entry in _list(listed, "margin numbers"):
        page, value, start, end, y_centre, height = _list(entry, "margin number", 6)
        number = MarginNumber(
            _int(page, "margin number page", 1, pages),
            _int(value, "margin number value"),
            _int(start, "margin number start", last_end, chars),
            _int(end, "margin number end", start, chars),
            _float(y_centre, "margin number position"),
            _float(height, "margin number height"),
        )
        last_end = number.end  # in source order, apart: the locator bisects them
        numbers.append(number)
    return tuple(numbers)


def _furniture(listed: Any, chars: str, pages: int) -> tuple[tuple[FurnitureLine, ...], str]:
    """The furniture lines and their pattern, derived from ``chars`` as ``build_index`` does: a
    top line sits at the top of a page one unit high, a bottom line at its foot. Lines are in
    source order and apart, so deriving reads each character once at most."""
    boxes: list[LineBox] = []
    last_end = 0
    for entry in _list(listed, "furniture"):
        page, start, end, top = _list(entry, "furniture line", 4)
        if type(top) is not bool:
            _corrupt("furniture line side")
        y = 0.0 if top else 1.0
        start = _int(start, "furniture start", last_end, len(chars))
        last_end = _int(end, "furniture end", start, len(chars))
        boxes.append(LineBox(_int(page, "furniture page", 1, pages), start, last_end, y, y))
    lines, pattern = find_furniture(chars, boxes, [1.0] * pages)
    if len(lines) != len(boxes):
        _corrupt("furniture lines that are not running headers or footers")
    return lines, pattern


def _readings(sections: _Sections, pages: int, chars: int) -> Readings:
    text, arrays = sections.texts["readings.text"], sections.arrays
    origin, breaks = arrays["readings.origin"], arrays["readings.breaks"]
    page_start = arrays["readings.page_start"]
    _normalized(text, origin, chars, "reading")
    _within(breaks, 0, len(text), "reading breaks")
    # Strictly increasing, or a match's pieces (Reordered.source_runs) would be cut wrongly.
    if any(b <= a for a, b in zip(breaks, breaks[1:], strict=False)):
        _corrupt("reading breaks are not increasing")
    _page_starts(page_start, pages, len(text), "reading page starts")
    keys, positions = arrays["readings.grams.keys"], arrays["readings.grams.positions"]
    grams = _grams(keys, positions, text, "reading grams")
    return Readings(Reordered(text, origin, breaks), grams, page_start)


def _pages(header: dict[str, Any]) -> tuple[int, tuple[tuple[float, float], ...], tuple[int, ...]]:
    pages = _int(header["page_count"], "page count")
    sizes = tuple(
        (_float(width, "page width"), _float(height, "page height"))
        for width, height in (
            _list(size, "page size", 2) for size in _list(header["sizes"], "page sizes", pages)
        )
    )
    rotations = tuple(_int(r, "rotation") for r in _list(header["rotations"], "rotations"))
    if len(rotations) not in (0, pages) or not _ROTATIONS.issuperset(rotations):
        _corrupt("rotations")
    return pages, sizes, rotations


def decode_index(blob: bytes) -> DocumentIndex:
    """The index ``encode_index`` made ``blob`` from; raises ``CorruptIndex`` for anything else."""
    raw = _raw(blob)
    header, start = _header(raw)
    pages, sizes, rotations = _pages(header)
    sections = _Sections(raw, start, header["sections"])
    chars, arrays = sections.texts["chars"], sections.arrays
    boxes, lines = arrays["boxes"], arrays["lines"]
    if len(boxes) != 4 * len(chars) or len(lines) != len(chars):
        _corrupt("boxes or lines do not match the characters")
    if not _finite(boxes):
        _corrupt("character boxes that are not finite numbers")
    char_page_start = arrays["char_page_start"]
    _page_starts(char_page_start, pages, len(chars), "page starts")
    norm = Normalized(sections.texts["norm.text"], arrays["norm.origin"])
    _normalized(norm.text, norm.origin, len(chars), "skeleton")
    norm_page_start = arrays["norm_page_start"]
    _page_starts(norm_page_start, pages, len(norm.text), "skeleton page starts")
    grams = _grams(arrays["grams.keys"], arrays["grams.positions"], norm.text, "grams")
    furniture, pattern = _furniture(header["furniture"], chars, pages)
    confidence = arrays["confidence"]
    if len(confidence) not in (0, len(chars)):
        _corrupt("OCR confidences do not match the characters")
    _within(confidence, 0, 101, "OCR confidences")
    ocr_pages = tuple(_int(p, "OCR page", 1, pages) for p in _list(header["ocr_pages"], "OCR"))
    return DocumentIndex(
        page_count=pages,
        sizes=sizes,
        chars=chars,
        boxes=boxes,
        lines=lines,
        char_page_start=char_page_start,
        norm=norm,
        norm_page_start=norm_page_start,
        grams=grams,
        margin_numbers=_margin_numbers(header["margin_numbers"], pages, len(chars)),
        furniture=furniture,
        furniture_pattern=pattern,
        rotations=rotations,
        readings=_readings(sections, pages, len(chars)) if sections.has_readings else None,
        confidence=confidence,
        ocr_pages=ocr_pages,
    )
