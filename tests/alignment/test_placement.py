"""Repeated text is placed by the chunk it was cut from; only a true tie stays unplaced."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from app.alignment.index import DocumentIndex
from app.alignment.locate import ChunkHint, locate
from app.pdfs.extract import build_index

REPEATED = "The amounts shown are as of December 31 unless stated otherwise."
PARAGRAPHS = [
    ["Revenue from hotel operations rose in every region we serve.", REPEATED],
    ["Casino revenue in Macau recovered after the travel restrictions ended.", REPEATED],
    ["Our loyalty programme counted more members than in any earlier year.", REPEATED],
]
TWIN = "Identical context sentence opens both of these twin paragraphs here."


def _draw(page: pymupdf.Page, top: float, sentences: list[str]) -> float:
    for sentence in sentences:
        page.insert_text((72, top), sentence, fontsize=10)
        top += 14
    return top + 14


@pytest.fixture(scope="module")
def repeated_index(tmp_path_factory: pytest.TempPathFactory) -> DocumentIndex:
    """Paragraphs 1 and 2 on page 1, paragraph 3 on page 2, and twin paragraphs on page 3."""
    doc = pymupdf.open()
    page = doc.new_page()
    top = _draw(page, 100, PARAGRAPHS[0])
    _draw(page, top, PARAGRAPHS[1])
    _draw(doc.new_page(), 100, PARAGRAPHS[2])
    page = doc.new_page()
    top = _draw(page, 100, [TWIN, REPEATED])
    _draw(page, top + 200, [TWIN, REPEATED])
    path = Path(tmp_path_factory.mktemp("repeated")) / "repeated.pdf"
    doc.save(path)
    doc.close()
    return build_index(path)


def _chunk(paragraph: int) -> ChunkHint:
    """The chunk a chunker would cut: the paragraph and its neighbours, and the offset of the
    repeated sentence inside it."""
    texts = [" ".join(p) for p in PARAGRAPHS]
    before = " ".join(texts[max(0, paragraph - 1) : paragraph])
    own = PARAGRAPHS[paragraph][0]
    start = len(before) + 1 + len(own) + 1 if before else len(own) + 1
    chunk = " ".join(texts[max(0, paragraph - 1) : paragraph + 2])
    assert chunk[start : start + len(REPEATED)] == REPEATED
    return ChunkHint(chunk, start)


def test_without_a_chunk_repeated_text_is_ambiguous(repeated_index: DocumentIndex) -> None:
    assert locate(repeated_index, REPEATED, (1, 2)).status == "no_match"


@pytest.mark.parametrize(("paragraph", "page", "y"), [(0, 1, 114), (1, 1, 156), (2, 2, 114)])
def test_the_chunk_says_which_occurrence(
    repeated_index: DocumentIndex, paragraph: int, page: int, y: float
) -> None:
    result = locate(repeated_index, REPEATED, (1, 2), _chunk(paragraph))
    assert result.status == "found"
    assert result.page == page
    assert len(result.rects) == 1
    assert result.rects[0].y0 < y < result.rects[0].y1


def test_a_chunk_from_elsewhere_decides_nothing(repeated_index: DocumentIndex) -> None:
    unrelated = "Nothing in this chunk is printed in the document at all, not a word. "
    hint = ChunkHint(unrelated + REPEATED, len(unrelated))
    assert locate(repeated_index, REPEATED, (1, 2), hint).status == "no_match"


def test_a_true_tie_stays_unplaced(repeated_index: DocumentIndex) -> None:
    chunk = f"{TWIN} {REPEATED}"
    result = locate(repeated_index, REPEATED, (3, 3), ChunkHint(chunk, len(TWIN) + 1))
    assert result.status == "no_match"


def test_unique_text_ignores_the_chunk(repeated_index: DocumentIndex) -> None:
    quote = PARAGRAPHS[1][0]
    plain = locate(repeated_index, quote)
    hinted = locate(repeated_index, quote, None, ChunkHint("unrelated words only", 0))
    assert plain.status == "found"
    assert hinted == plain
