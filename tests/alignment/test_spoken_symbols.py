""" "&" and "and" are one word to the locator, in both directions, with exact offsets."""

from __future__ import annotations

import pymupdf
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.alignment.index import DocumentIndex
from app.alignment.locate import locate
from app.alignment.text import normalize, normalize_text
from app.pdfs.extract import build_index

LINES = [
    "The board approved the Profit and Loss statement on Monday.",
    "Our research and development spending grew, as did sales and marketing.",
    "Johnson & Johnson and Black & Decker were listed among the vendors.",
]

_WORDS = st.lists(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8), min_size=2
)


@settings(max_examples=100, deadline=None)
@given(_WORDS)
def test_ampersand_and_and_share_a_skeleton(words: list[str]) -> None:
    assert normalize_text(" & ".join(words)) == normalize_text(" and ".join(words))
    assert normalize_text("\uff06".join(words)) == normalize_text("&".join(words))  # full width


def test_the_spelt_out_letters_map_back_to_the_symbol() -> None:
    norm = normalize("R&D")
    assert norm.text == "randd"
    assert list(norm.origin) == [0, 1, 1, 1, 2]
    assert norm.source_span(1, 4) == (1, 2)


@pytest.fixture(scope="module")
def symbols_index(tmp_path_factory: pytest.TempPathFactory) -> DocumentIndex:
    doc = pymupdf.open()
    page = doc.new_page()
    for number, line in enumerate(LINES):
        page.insert_text((72, 100 + 16 * number), line, fontsize=11)
    path = tmp_path_factory.mktemp("symbols") / "symbols.pdf"
    doc.save(path)
    doc.close()
    return build_index(path)


@pytest.mark.parametrize(
    ("quote", "printed"),
    [
        # A short quote must match exactly: "Profit & Loss" was not found at all.
        ("Profit & Loss", "Profit and Loss"),
        (
            "research & development spending grew, as did sales & marketing.",
            "research and development spending grew, as did sales and marketing.",
        ),
        ("Johnson and Johnson and Black and Decker", "Johnson & Johnson and Black & Decker"),
    ],
)
def test_quote_and_page_may_spell_it_either_way(
    symbols_index: DocumentIndex, quote: str, printed: str
) -> None:
    result = locate(symbols_index, quote)
    assert result.status == "found"
    assert result.score == 100.0
    assert result.matched_text == printed  # the page's own words, whole
