"""A ``DocumentIndex`` as bytes that are only data: for the disk cache and the shared store.

Loading a pickle runs whatever the file names, and the index cache is read from a directory and
a bucket that other processes and replicas write. A blob here is decoded by reading numbers and
strings and building the known dataclasses from them, after checking every invariant whose
breach would raise later (an ``IndexError`` halfway through a batch) or place a rectangle on a
page that does not exist. A truncated, corrupt or foreign blob raises ``CorruptIndex``, and
nothing else; the cache treats that as a miss.

Checked is consistency, not truth: whoever may write the store can still write an index of
other words, or of the right words in the wrong places. What the cache believes is signed and
bound to its PDF around these bytes (``index_signing.py``).

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

from app.alignment.index import INDEX_VERSION, DocumentIndex
from app.alignment.readings import Readings, Reordered
from app.alignment.text import Normalized
from app.pdfs.blob_checks import (
    CorruptIndex as CorruptIndex,
)
from app.pdfs.blob_checks import (
    check_float,
    check_int,
    check_list,
    check_normalized,
    check_page_starts,
    check_within,
    corrupt,
    furniture_of,
    gram_table,
    margin_numbers_of,
)

MAGIC = b"HLINDEX\x00"
# A larger index would be a document of some 30 million characters; a blob claiming more is
# refused before anything is allocated for it.
MAX_RAW_BYTES = 1 << 30

_FIXED = struct.Struct("<8sHB5xQQ")
PREFIX_SIZE = _FIXED.size + hashlib.sha256().digest_size
# zlib grows incompressible data by well under 1/256, and the signed envelope around a blob
# (index_signing.py) takes under 1 KiB: no stored blob of a valid index is larger.
MAX_BLOB_BYTES = PREFIX_SIZE + MAX_RAW_BYTES + (MAX_RAW_BYTES >> 8) + 1024
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


# Of a float32's byte holding its sign and top seven exponent bits: 1 when those are all set,
# which every NaN and infinity has (and only numbers over 2**127 besides).
_TOP_EXPONENT = bytes(int(byte & 0x7F == 0x7F) for byte in range(256))
_TOP_BYTE = 0 if _SWAP else 3


def _finite(values: array[float]) -> bool:
    # Without a Python float per item: their top bytes, looked up in C, rule out a NaN or an
    # infinity nearly always. Else one pass: a NaN or infinity anywhere makes the sum one, and
    # float32 items cannot add up to an overflow of the double it is taken in.
    tops = memoryview(values).cast("B")[_TOP_BYTE::4].tobytes()
    if tops.translate(_TOP_EXPONENT).find(1) < 0:
        return True
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


def _raw(blob: bytes | memoryview) -> memoryview:
    """The checked, decompressed body of ``blob``."""
    if len(blob) < PREFIX_SIZE:
        corrupt("shorter than its prefix")
    view = memoryview(blob)
    fixed, digest, body = view[: _FIXED.size], view[_FIXED.size : PREFIX_SIZE], view[PREFIX_SIZE:]
    magic, version, compression, stored, raw_size = _FIXED.unpack(fixed)
    if magic != MAGIC:
        corrupt("wrong magic")
    if version != INDEX_VERSION:
        corrupt(f"index version {version}, expected {INDEX_VERSION}")
    if stored != len(body):
        corrupt(f"body of {len(body)} bytes, the prefix says {stored}")
    # Zero would mean "no limit" to zlib; at least the header's length is always there.
    if not _U32.size <= raw_size <= MAX_RAW_BYTES:
        corrupt(f"claims a body of {raw_size} bytes")
    check = hashlib.sha256(fixed)
    check.update(body)
    if check.digest() != digest:
        corrupt("checksum mismatch")
    if compression == _NONE:
        raw = body
    elif compression == _ZLIB:
        inflater = zlib.decompressobj()
        try:
            raw = memoryview(inflater.decompress(body, raw_size))
        except zlib.error as exc:
            corrupt(f"zlib: {exc}")
        if not inflater.eof or inflater.unconsumed_tail or inflater.unused_data:
            corrupt("compressed body does not end where it should")
    else:
        corrupt(f"unknown compression {compression}")
    if len(raw) != raw_size:
        corrupt(f"body of {len(raw)} bytes, the prefix says {raw_size}")
    return raw


def _reject_constant(name: str) -> NoReturn:
    corrupt(f"{name} in the header")


def _header(raw: memoryview) -> tuple[dict[str, Any], int]:
    if len(raw) < _U32.size:
        corrupt("no header")
    (size,) = _U32.unpack_from(raw)
    end = _U32.size + size
    if end > len(raw):
        corrupt("header runs past the body")
    try:
        header = json.loads(bytes(raw[_U32.size : end]), parse_constant=_reject_constant)
    except CorruptIndex:
        raise
    except (ValueError, RecursionError) as exc:  # JSON, UTF-8, int digits, nesting
        raise CorruptIndex(f"not a usable index blob: header: {exc}") from None
    if not isinstance(header, dict) or set(header) != _HEADER_KEYS:
        corrupt("header fields")
    return header, end


class _Sections:
    """The sections after the header, read and typed as the format lists them."""

    def __init__(self, raw: memoryview, start: int, listed: Any) -> None:
        entries = check_list(listed, "section list")
        expected = _MAIN + (_READINGS if len(entries) > len(_MAIN) else ())
        check_list(entries, "section list", len(expected))
        self.texts: dict[str, str] = {}
        self.arrays: dict[str, array[Any]] = {}
        offset = start
        for entry, (name, code) in zip(entries, expected, strict=True):
            listed_name, listed_code, count = check_list(entry, "section entry", 3)
            if (listed_name, listed_code) != (name, code):
                corrupt(f"a section listed where {name!r} of type {code!r} belongs")
            size = check_int(count, f"{name} length", hi=len(raw)) * _ITEM_SIZE.get(code, 1)
            end = offset + size
            if end > len(raw):
                corrupt(f"{name} runs past the body")
            if code == _TEXT:
                try:
                    self.texts[name] = str(raw[offset:end], "utf-8", "surrogatepass")
                except UnicodeDecodeError:
                    corrupt(f"{name} is not UTF-8")
            else:
                values = array(code)
                values.frombytes(raw[offset:end])
                if _SWAP:
                    values.byteswap()
                self.arrays[name] = values
            offset = end
        if offset != len(raw):
            corrupt("bytes after the last section")

    @property
    def has_readings(self) -> bool:
        return "readings.text" in self.texts


def _readings(sections: _Sections, pages: int, chars: int) -> Readings:
    text, arrays = sections.texts["readings.text"], sections.arrays
    origin, breaks = arrays["readings.origin"], arrays["readings.breaks"]
    page_start = arrays["readings.page_start"]
    check_normalized(text, origin, chars, "reading")
    check_within(breaks, 0, len(text), "reading breaks")
    # Strictly increasing, or a match's pieces (Reordered.source_runs) would be cut wrongly.
    if any(b <= a for a, b in zip(breaks, breaks[1:], strict=False)):
        corrupt("reading breaks are not increasing")
    check_page_starts(page_start, pages, len(text), "reading page starts")
    keys, positions = arrays["readings.grams.keys"], arrays["readings.grams.positions"]
    grams = gram_table(keys, positions, text, "reading grams")
    return Readings(Reordered(text, origin, breaks), grams, page_start)


def _pages(header: dict[str, Any]) -> tuple[int, tuple[tuple[float, float], ...], tuple[int, ...]]:
    pages = check_int(header["page_count"], "page count")
    sizes = tuple(
        (check_float(width, "page width"), check_float(height, "page height"))
        for width, height in (
            check_list(size, "page size", 2)
            for size in check_list(header["sizes"], "page sizes", pages)
        )
    )
    rotations = tuple(
        check_int(r, "rotation") for r in check_list(header["rotations"], "rotations")
    )
    if len(rotations) not in (0, pages) or not _ROTATIONS.issuperset(rotations):
        corrupt("rotations")
    return pages, sizes, rotations


def decode_index(blob: bytes | memoryview) -> DocumentIndex:
    """The index ``encode_index`` made ``blob`` from; raises ``CorruptIndex`` for anything else."""
    raw = _raw(blob)
    header, start = _header(raw)
    pages, sizes, rotations = _pages(header)
    sections = _Sections(raw, start, header["sections"])
    chars, arrays = sections.texts["chars"], sections.arrays
    boxes, lines = arrays["boxes"], arrays["lines"]
    if len(boxes) != 4 * len(chars) or len(lines) != len(chars):
        corrupt("boxes or lines do not match the characters")
    if not _finite(boxes):
        corrupt("character boxes that are not finite numbers")
    char_page_start = arrays["char_page_start"]
    check_page_starts(char_page_start, pages, len(chars), "page starts")
    norm = Normalized(sections.texts["norm.text"], arrays["norm.origin"])
    check_normalized(norm.text, norm.origin, len(chars), "skeleton")
    norm_page_start = arrays["norm_page_start"]
    check_page_starts(norm_page_start, pages, len(norm.text), "skeleton page starts")
    grams = gram_table(arrays["grams.keys"], arrays["grams.positions"], norm.text, "grams")
    furniture, pattern = furniture_of(header["furniture"], chars, pages)
    confidence = arrays["confidence"]
    if len(confidence) not in (0, len(chars)):
        corrupt("OCR confidences do not match the characters")
    check_within(confidence, 0, 101, "OCR confidences")
    ocr_pages = tuple(
        check_int(p, "OCR page", 1, pages) for p in check_list(header["ocr_pages"], "OCR")
    )
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
        margin_numbers=margin_numbers_of(header["margin_numbers"], pages, len(chars)),
        furniture=furniture,
        furniture_pattern=pattern,
        rotations=rotations,
        readings=_readings(sections, pages, len(chars)) if sections.has_readings else None,
        confidence=confidence,
        ocr_pages=ocr_pages,
    )
