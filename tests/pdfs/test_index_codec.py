"""Index blobs: an exact round trip, and nothing but ``CorruptIndex`` out of any other bytes."""

from __future__ import annotations

import hashlib
import json
import struct
from array import array
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.alignment.furniture import FurnitureLine
from app.alignment.geometry import line_rects
from app.alignment.grams import GramTable
from app.alignment.index import DocumentIndex
from app.alignment.locate import LocateResult, locate
from app.alignment.margins import MarginNumber
from app.alignment.readings import Readings
from app.alignment.text import normalize, normalize_text
from app.pdfs.extract import build_index
from app.pdfs.index_codec import PREFIX_SIZE, CorruptIndex, decode_index, encode_index
from tests.fixtures.pdfs import write_control_chars_pdf, write_rotated_pdf, write_scan_pdf

PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

HEADER = "Quarterly Bulletin of the Harbour Board"
FOOTER = "Harbour Board Bulletin"
NUMBERED = [
    "The above-entitled matter came on for oral",
    "argument before the board at its harbour office",
    "on the first Monday of the month at ten o'clock.",
    "The pilots asked for a second tug at the bar",
    "and the board agreed to hire one for the winter.",
    "The clerk read the minutes of the last meeting.",
]
LEFT = [
    "Vessels that arrive after dark must anchor in",
    "the outer roads and wait for the morning pilot",
    "unless the harbour master allows them in early.",
]
RIGHT = [
    "Dredging of the inner basin resumes in the",
    "spring once the ice has left the channel and",
    "the contractor has repaired the bucket chain.",
]
CHINESE = "港務局於本季完成航道疏濬工程，並擴建第三號碼頭以容納更大型之貨輪。"
ROTATED = "The landscape page lists the tide tables for the whole of next quarter."
QUOTES = [
    "Vessels that arrive after dark must anchor in the outer roads and wait for the morning "
    "pilot unless the harbour master allows them in early.",  # down the left column
    "argument before the board at its harbour office on the first Monday",  # past the numbers
    "3 on the first Monday of the month at ten o'clock. 4 The pilots asked",  # numbers quoted
    "the contractor has repaired the bucket chain. Harbour Board Bulletin Page 3 "
    "Quarterly Bulletin of the Harbour Board The clerk",  # across a page break with furniture
    CHINESE[:20],
    ROTATED,
    "The pilots asked for a third tug at the bar and the board agreed",  # an edit: fuzzy
    "Nothing of the sort is printed anywhere in this bulletin at all.",
]


def write_mixed_pdf(path: Path) -> Path:
    """One PDF with everything an index holds: running headers and footers, a line-numbered
    margin, two columns drawn row by row (a second reading), Chinese, a rotated page."""
    doc = pymupdf.open()
    for number in range(1, 6):
        page = doc.new_page(width=595, height=842)
        page.insert_text((72, 40), HEADER, fontsize=9)
        page.insert_text((72, 815), f"{FOOTER} Page {number}", fontsize=9)
    for line, text in enumerate(NUMBERED, start=1):
        doc[1].insert_text((40, 100 + 24 * line), f"{line}", fontname="cour", fontsize=11)
        doc[1].insert_text((90, 100 + 24 * line), text, fontname="cour", fontsize=11)
    for row, (left, right) in enumerate(zip(LEFT, RIGHT, strict=True)):
        doc[2].insert_text((72, 700 + 14 * row), left, fontsize=10)
        doc[2].insert_text((320, 700 + 14 * row), right, fontsize=10)
    doc[3].insert_text((72, 120), "The clerk read the minutes again.", fontsize=11)
    doc[3].insert_text((72, 150), CHINESE, fontname="china-t", fontsize=11)
    doc[4].insert_text((72, 200), ROTATED, fontsize=11)
    doc[4].set_rotation(90)
    doc.save(path)
    doc.close()
    return path


@pytest.fixture(scope="module")
def mixed_index(tmp_path_factory: pytest.TempPathFactory) -> DocumentIndex:
    index = build_index(write_mixed_pdf(tmp_path_factory.mktemp("mixed") / "mixed.pdf"))
    # The fixture must hold every part of an index, or the round trip proves less than it says.
    assert index.furniture
    assert index.furniture_pattern
    assert index.margin_numbers
    assert index.readings is not None
    assert 90 in index.rotations
    assert CHINESE[:10] in index.chars
    return index


def assert_same_index(built: DocumentIndex, decoded: DocumentIndex) -> None:
    """Every field of the two indexes equal (arrays with their item types)."""
    for field in fields(DocumentIndex):
        a, b = getattr(built, field.name), getattr(decoded, field.name)
        if isinstance(a, GramTable):
            assert a.__getstate__() == b.__getstate__(), field.name
        elif isinstance(a, Readings):
            assert (a.norm, a.page_start) == (b.norm, b.page_start)
            assert type(a.norm) is type(b.norm)
            assert a.grams.__getstate__() == b.grams.__getstate__()
        else:
            assert a == b, field.name
            assert getattr(a, "typecode", None) == getattr(b, "typecode", None), field.name


def located(index: DocumentIndex, quotes: list[str]) -> list[LocateResult]:
    return [locate(index, quote) for quote in quotes]


def quotes_of(index: DocumentIndex, count: int = 12) -> list[str]:
    """Lines of the document's own text, two at a time (so quotes cross line ends)."""
    lines = [line for line in index.chars.split("\n") if len(line.strip()) >= 10]
    step = max(1, len(lines) // count)
    return [" ".join(lines[i : i + 2]) for i in range(0, len(lines), step)][:count]


@pytest.mark.parametrize("compress", [True, False], ids=["zlib", "plain"])
def test_mixed_pdf_round_trip_locates_alike(mixed_index: DocumentIndex, compress: bool) -> None:
    decoded = decode_index(encode_index(mixed_index, compress=compress))
    assert_same_index(mixed_index, decoded)
    results = located(mixed_index, QUOTES)
    assert located(decoded, QUOTES) == results
    assert [r.status for r in results].count("found") >= 6  # not a comparison of misses


@pytest.mark.parametrize(
    "write", [write_rotated_pdf, write_control_chars_pdf, write_scan_pdf], ids=lambda w: w.__name__
)
def test_generated_pdfs_round_trip(tmp_path: Path, write: Any) -> None:
    built = build_index(write(tmp_path / "generated.pdf"))
    decoded = decode_index(encode_index(built))
    assert_same_index(built, decoded)
    quotes = quotes_of(built)
    results = located(built, quotes)
    assert located(decoded, quotes) == results
    assert not quotes or any(result.status == "found" for result in results)


def test_empty_document_and_lone_surrogates_round_trip(mixed_index: DocumentIndex) -> None:
    """PyMuPDF can extract lone surrogates; they survive the blob as they are."""
    at = mixed_index.chars.index("clerk")
    chars = mixed_index.chars[:at] + "\ud800" + mixed_index.chars[at + 1 :]
    odd = replace(mixed_index, chars=chars)
    assert decode_index(encode_index(odd)).chars == chars
    empty = DocumentIndex(
        page_count=0,
        sizes=(),
        chars="",
        boxes=array("f"),
        lines=array("i"),
        char_page_start=array("i", [0]),
        norm=normalize(""),
        norm_page_start=array("i", [0]),
        grams=GramTable(""),
    )
    decoded = decode_index(encode_index(empty))
    assert_same_index(empty, decoded)
    assert locate(decoded, "anything").status == "no_text_layer"


REAL = [
    pytest.param("pdfjs_tracemonkey.pdf", "readings", id="two-column-paper"),
    pytest.param("twly_bill_LCEWA01_080202_00016_zh-hant.pdf", "furniture", id="chinese-bill"),
    pytest.param("pdfplumber_scotus-transcript-p1.pdf", "margin_numbers", id="transcript"),
    pytest.param("pdfjs_freeculture.pdf", "furniture", marks=pytest.mark.slow, id="book-352pp"),
]


@pytest.mark.shared_pdfs
@pytest.mark.parametrize(("name", "holds"), REAL)
def test_real_pdfs_round_trip_and_locate_alike(shared_pdfs: Path, name: str, holds: str) -> None:
    built = build_index(shared_pdfs / name)
    assert getattr(built, holds)  # the part of an index this document is here for
    decoded = decode_index(encode_index(built))
    assert_same_index(built, decoded)
    quotes = quotes_of(built)
    results = located(built, quotes)
    assert located(decoded, quotes) == results
    assert any(result.status == "found" for result in results)


# -- bad bytes ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def blob(mixed_index: DocumentIndex) -> bytes:
    return encode_index(mixed_index)


@pytest.fixture(scope="module")
def plain_blob(mixed_index: DocumentIndex) -> bytes:
    return encode_index(mixed_index, compress=False)


def resealed(blob: bytes) -> bytes:
    """``blob`` with its lengths and checksum made to fit whatever its body now holds, as a
    writer who knows the format would make them: the body's own checks must catch the rest."""
    body = blob[PREFIX_SIZE:]
    fixed = bytearray(blob[:32])
    struct.pack_into("<Q", fixed, 16, len(body))
    if fixed[10] == 0:  # uncompressed: the body is the raw body
        struct.pack_into("<Q", fixed, 24, len(body))
    return bytes(fixed) + hashlib.sha256(bytes(fixed) + body).digest() + body


def exercise(index: DocumentIndex) -> None:
    """What a batch does with an index: must not raise, whatever the numbers in it say."""
    for quote in QUOTES:
        locate(index, quote)
        locate(index, quote, pages=(2, 3))
    for page in range(1, index.page_count + 1):
        index.has_text(page)
        index.text_frame_size(page)
    line_rects(index, 0, len(index.chars))
    skeletons = [index.norm] + ([index.readings.norm] if index.readings else [])
    for norm in skeletons:  # any skeleton character may be part of a match
        for at in range(len(norm.text)):
            for start, end in norm.source_runs(at, at + 1):
                line_rects(index, start, end)
    spans = [(n.start, n.end) for n in index.margin_numbers]
    for start, end in spans + [(line.start, line.end) for line in index.furniture]:
        line_rects(index, start, end)


@PROPERTY
@given(st.binary(max_size=4096))
def test_random_bytes_are_corrupt(data: bytes) -> None:
    with pytest.raises(CorruptIndex):
        decode_index(data)


@PROPERTY
@given(st.data())
def test_truncated_blob_is_corrupt(blob: bytes, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(blob) - 1))
    with pytest.raises(CorruptIndex):
        decode_index(blob[:cut])


@PROPERTY
@given(st.data())
def test_flipped_byte_is_corrupt(blob: bytes, data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(blob) - 1))
    flip = data.draw(st.integers(1, 255))
    damaged = bytearray(blob)
    damaged[at] ^= flip
    with pytest.raises(CorruptIndex):
        decode_index(bytes(damaged))


@PROPERTY
@given(st.data())
def test_forged_body_is_corrupt_or_harmless(plain_blob: bytes, data: st.DataObject) -> None:
    """Bytes changed (or cut) inside the body with the checksum made to fit: the body's own
    checks refuse it, or what decodes is an index a batch can use without an error. Each
    change lands in a region drawn first (the header, or one section), so that every field is
    reached, and its high bytes too."""
    damaged = bytearray(plain_blob)
    for _ in range(data.draw(st.integers(1, 3))):
        first, last = data.draw(st.sampled_from(regions(plain_blob)))
        at = data.draw(st.integers(first, last - 1))
        damaged[at] ^= data.draw(st.integers(1, 255))
    if data.draw(st.booleans()):
        del damaged[data.draw(st.integers(PREFIX_SIZE, len(damaged))) :]
    try:
        index = decode_index(resealed(bytes(damaged)))
    except CorruptIndex:
        return
    exercise(index)


def regions(plain: bytes) -> list[tuple[int, int]]:
    """Byte ranges of an uncompressed blob's header and of each non-empty section."""
    (size,) = struct.unpack_from("<I", plain, PREFIX_SIZE)
    offset = PREFIX_SIZE + 4 + size
    found = [(PREFIX_SIZE, offset)]
    for _, code, count in json.loads(plain[PREFIX_SIZE + 4 : offset])["sections"]:
        length = count * (1 if code == "s" else 4)
        if length:
            found.append((offset, offset + length))
        offset += length
    assert offset == len(plain)
    return found


def _sealed(index: DocumentIndex) -> bytes:
    """An index breaking an invariant, written by an encoder that does not check (as a foreign
    writer's would)."""
    return encode_index(index, compress=False)


def _margin(index: DocumentIndex, **changes: int) -> tuple[MarginNumber, ...]:
    first, *rest = index.margin_numbers
    return (replace(first, **changes), *rest)


def _body_line_as_furniture(index: DocumentIndex) -> tuple[FurnitureLine, ...]:
    start = index.chars.index(ROTATED)
    line = FurnitureLine(5, start, start + len(ROTATED), True, normalize_text(ROTATED))
    return (*index.furniture, line)


# Each breach of an invariant, and the reason the decoder must give.
BROKEN = [
    pytest.param(lambda i: replace(i, boxes=i.boxes[:-4]), "boxes or lines", id="boxes-short"),
    pytest.param(lambda i: replace(i, lines=i.lines[:-1]), "boxes or lines", id="lines-short"),
    pytest.param(
        lambda i: replace(i, char_page_start=array("i", [0, 50, 10, *i.char_page_start[3:]])),
        "page starts go back",
        id="page-starts-back",
    ),
    pytest.param(
        lambda i: replace(i, char_page_start=i.char_page_start[:-1]),
        "page starts do not span",
        id="page-starts-short",
    ),
    pytest.param(
        lambda i: replace(i, norm=replace(i.norm, origin=array("i", [*i.norm.origin[:-1], 10**6]))),
        "skeleton origin out of range",
        id="origin-past-chars",
    ),
    pytest.param(
        lambda i: replace(i, norm_page_start=array("i", [*i.norm_page_start[:-1], 3])),
        "skeleton page starts do not span",
        id="skeleton-ends-early",
    ),
    pytest.param(
        lambda i: replace(i, grams=_grams(i.grams, positions_end=len(i.norm.text) + 7)),
        "grams positions out of range",
        id="gram-past-text",
    ),
    pytest.param(
        lambda i: replace(i, margin_numbers=_margin(i, page=i.page_count + 1)),
        "margin number page",
        id="margin-number-off-the-document",
    ),
    pytest.param(
        lambda i: replace(i, margin_numbers=_margin(i, end=i.margin_numbers[1].start + 1)),
        "margin number start",
        id="margin-numbers-overlap",
    ),
    pytest.param(
        lambda i: replace(
            i, furniture=(replace(i.furniture[0], end=len(i.chars) + 1), *i.furniture[1:])
        ),
        "furniture end",
        id="furniture-past-chars",
    ),
    pytest.param(
        lambda i: replace(
            i, furniture=(i.furniture[0], replace(i.furniture[1], start=i.furniture[0].end - 1))
        ),
        "furniture start",
        id="furniture-overlaps",
    ),
    pytest.param(
        lambda i: replace(i, furniture=_body_line_as_furniture(i)),
        "not running headers or footers",
        id="body-text-as-furniture",
    ),
    pytest.param(
        lambda i: replace(i, rotations=(45, *i.rotations[1:])), "rotations", id="rotation-45"
    ),
    pytest.param(
        lambda i: replace(
            i,
            readings=replace(i.readings, norm=replace(i.readings.norm, breaks=array("i", [5, 2]))),
        ),
        "reading breaks are not increasing",
        id="reading-breaks-back",
    ),
]


def _grams(table: GramTable, positions_end: int) -> GramTable:
    keys, positions = table.__getstate__()
    forged = GramTable("")
    forged.__setstate__((keys, array("i", [*positions[:-1], positions_end])))
    return forged


@pytest.mark.parametrize(("breach", "reason"), BROKEN)
def test_broken_invariants_are_corrupt(
    mixed_index: DocumentIndex, breach: Callable[[DocumentIndex], DocumentIndex], reason: str
) -> None:
    forged = _sealed(breach(mixed_index))
    with pytest.raises(CorruptIndex, match=reason):
        decode_index(forged)


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_numbers_are_neither_written_nor_read(
    mixed_index: DocumentIndex, value: float
) -> None:
    """A NaN box would turn into a NaN rectangle, which no JSON response can carry."""
    with pytest.raises(ValueError, match="not finite"):
        encode_index(replace(mixed_index, boxes=array("f", [value, *mixed_index.boxes[1:]])))
    with pytest.raises(ValueError, match="JSON"):
        encode_index(replace(mixed_index, sizes=((value, 842.0), *mixed_index.sizes[1:])))
    marker = struct.pack("<f", 12345.5)  # exact in a float: found again byte for byte
    plain = encode_index(
        replace(mixed_index, boxes=array("f", [12345.5, *mixed_index.boxes[1:]])), compress=False
    )
    assert plain.count(marker) == 1
    forged = plain.replace(marker, struct.pack("<f", value))
    with pytest.raises(CorruptIndex, match="not finite"):
        decode_index(resealed(forged))
