"""The index build's fast paths give what the plain versions give: ``line_pieces`` (one pass
over PyMuPDF's doubles) the pieces ``segments`` cuts from the stored float32 boxes, the
translated skeleton and packed gram table the character-by-character ones, and the bound on a
page's text from MuPDF's pool never less than the text (so no page too dense goes uncounted)."""

from __future__ import annotations

from array import array
from pathlib import Path

import pymupdf
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.alignment.grams import GRAM, STRIDE, GramTable, _key
from app.alignment.index import MAX_PAGE_CHARS, PageTooDense
from app.alignment.layout import SPLIT_GAP, line_pieces, segments
from app.alignment.text import normalize, normalize_char
from app.pdfs import extract
from tests.fixtures.hostile_pdfs import write_text_bomb_pdf

# Coordinates near the split threshold (gaps of 1.5 line heights and floats one rounding apart),
# spaces, inside-out boxes and a few far-off numbers.
_COORD = st.one_of(
    st.floats(-5.0, 700.0, width=64),
    st.sampled_from([0.0, -0.0, 1.0, 1.5, 15.0, 15.000001, 14.999999, 1e6, -1e6]),
)
_CHAR = st.sampled_from(["a", "B", "7", " ", "\u00a0", "\t", "\u4e2d", "\ufb01"])


@st.composite
def _lines(draw: st.DrawFn) -> tuple[str, list[tuple[float, float, float, float]]]:
    text = "".join(draw(st.lists(_CHAR, min_size=1, max_size=12)))
    boxes = []
    x = draw(st.floats(0.0, 500.0))
    height = draw(st.sampled_from([0.5, 1.0, 8.0, 10.0, 12.3]))
    for _ in text:
        if draw(st.booleans()):  # a box of its own, not on the pen's path
            box = tuple(draw(_COORD) for _ in range(4))
        else:
            width = draw(st.floats(0.0, 8.0))
            gap = draw(st.sampled_from([0.0, 1.0, SPLIT_GAP * height, SPLIT_GAP * height + 1e-5]))
            box = (x + gap, 100.0, x + gap + width, 100.0 + height)
            x = box[2]
        boxes.append(box)
    return text, boxes  # type: ignore[return-value]


def _reference(start: int, text: str, boxes: list[tuple[float, ...]]) -> list[tuple[float, ...]]:
    stored = array("f", [value for box in boxes for value in box])
    pieces = segments(text, stored, array("i", [0]) * len(text), 0, len(text))
    return [(start + p.start, start + p.end, p.x0, p.y0, p.x1, p.y1) for p in pieces]


def _fields(pieces: list) -> list[tuple[float, ...]]:  # type: ignore[type-arg]
    return [(p.start, p.end, p.x0, p.y0, p.x1, p.y1) for p in pieces]


@settings(max_examples=400, deadline=None)
@given(_lines(), st.integers(0, 1000))
def test_line_pieces_are_the_segments_of_the_stored_boxes(
    line: tuple[str, list[tuple[float, ...]]], start: int
) -> None:
    text, boxes = line
    assert _fields(line_pieces(start, text, boxes)) == _reference(start, text, boxes)


def test_a_built_index_has_the_pieces_segments_finds(sample_pdf: Path) -> None:
    builder = extract._Builder()
    with pymupdf.open(sample_pdf) as doc:
        for number, page in enumerate(doc, start=1):
            builder.add_page(page, number)
            builder.add_break()
    chars = "".join(builder.chars)
    found = [piece for page in builder.pieces for piece in page]
    assert found
    assert _fields(found) == _fields(segments(chars, builder.boxes, builder.lines, 0, len(chars)))


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=40) | st.text("ab \ufb01\ufdfa\uac00"))
def test_skeleton_and_origin_as_character_by_character(source: str) -> None:
    parts, origin = [], array("i")
    for index, char in enumerate(source):
        skeleton = normalize_char(char)
        parts.append(skeleton)
        origin.extend([index] * len(skeleton))
    norm = normalize(source)
    assert (norm.text, norm.origin) == ("".join(parts), origin)


@settings(max_examples=200, deadline=None)
@given(st.text("abc\u00e9\u4e2d", max_size=60))
def test_gram_table_sorted_by_key_then_position(text: str) -> None:
    hashed = sorted(
        (_key(text[pos : pos + GRAM]), pos) for pos in range(0, len(text) - GRAM + 1, STRIDE)
    )
    keys, positions = GramTable(text).__getstate__()
    assert list(keys) == [key for key, _ in hashed]
    assert list(positions) == [pos for _, pos in hashed]


def _text_pages(pdf: Path) -> list[tuple[int, float]]:
    """Each page's text length and the bound ``add_page`` takes from MuPDF's pool instead."""
    found = []
    with pymupdf.open(pdf) as doc:
        for page in doc:
            textpage = page.get_textpage(flags=extract._TEXT_FLAGS)
            found.append((len(textpage.extractText()), extract._text_bound(textpage)))
    return found


def test_the_pool_bounds_the_text_of_every_page(sample_pdf: Path, tmp_path: Path) -> None:
    dense = tmp_path / "dense.pdf"
    with pymupdf.open() as doc:  # a full page of small print, ligatures and CJK
        page = doc.new_page()
        line = "\ufb01 office \u4e2d\u6587 \U0001d400 " * 12
        for row in range(140):
            page.insert_text((5, 5 + 6 * row), line, fontsize=5)
        doc.save(dense)
    pages = _text_pages(sample_pdf) + _text_pages(dense)
    assert all(length <= bound for length, bound in pages)
    assert any(length > 0 for length, _ in pages)


def test_a_text_bomb_is_still_counted_and_refused(tmp_path: Path) -> None:
    bomb = write_text_bomb_pdf(tmp_path / "bomb.pdf", glyphs=600_000)
    ((_, bound),) = _text_pages(bomb)
    assert bound > MAX_PAGE_CHARS
    with pytest.raises(PageTooDense):
        extract.build_index(bomb)
