"""Compatibility forms must not stop a match: NFKC, width variants, CJK spacing, Hangul jamo."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Literal

import pymupdf
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.alignment.index import DocumentIndex
from app.alignment.locate import locate
from app.alignment.text import normalize_text
from app.pdfs.extract import build_index
from tests.alignment.test_text import FAST

# Scripts and forms the issue is about, plus the Latin that surrounds them in real filings.
_ALPHABET = st.one_of(
    st.characters(min_codepoint=0x4E00, max_codepoint=0x4FFF),  # ideographs
    st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3),  # Hangul syllables
    st.characters(min_codepoint=0x1100, max_codepoint=0x11FF),  # conjoining jamo
    st.characters(min_codepoint=0x3131, max_codepoint=0x318E),  # compatibility jamo
    st.characters(min_codepoint=0xFF01, max_codepoint=0xFF5E),  # full-width ASCII
    st.characters(min_codepoint=0xFF61, max_codepoint=0xFF9F),  # half-width katakana
    st.characters(min_codepoint=0x3040, max_codepoint=0x30FF),  # kana
    st.sampled_from(list("abcXYZ0189éü,.;:()「」、。，．（）")),
)
_TEXT = st.text(alphabet=_ALPHABET, max_size=60)


@FAST
@given(_TEXT)
def test_nfkc_and_nfd_forms_share_a_skeleton(text: str) -> None:
    skeleton = normalize_text(text)
    for form in ("NFC", "NFD", "NFKC", "NFKD"):
        assert normalize_text(unicodedata.normalize(form, text)) == skeleton


@FAST
@given(_TEXT, st.lists(st.tuples(st.integers(0, 60), st.sampled_from([" ", "\u3000", "\n"]))))
def test_whitespace_anywhere_changes_nothing(text: str, spaces: list[tuple[int, str]]) -> None:
    spaced = text
    for at, space in sorted(spaces, reverse=True):
        spaced = spaced[:at] + space + spaced[at:]
    assert normalize_text(spaced) == normalize_text(text)


def test_examples_from_the_issue() -> None:
    assert normalize_text("第8 屆，第２會期") == normalize_text("第8屆,第2會期")
    assert normalize_text("（ＡＢＣ）１２３") == normalize_text("(abc)123")
    syllables = "한국어 문장"
    assert normalize_text(unicodedata.normalize("NFD", syllables)) == normalize_text(syllables)


CHINESE = "立法院第8 屆第２會期（第3 次）會議，審查預算案條例修正草案。"
KOREAN = "국회 위원회는 법률안을 심사하여 보고서를 제출한다."


@pytest.fixture(scope="module")
def cjk_index(tmp_path_factory: pytest.TempPathFactory) -> DocumentIndex:
    path = tmp_path_factory.mktemp("cjk") / "cjk.pdf"
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), CHINESE, fontname="china-t", fontsize=11)
    page.insert_text((72, 130), KOREAN, fontname="korea", fontsize=11)
    page.insert_text((72, 160), "Unrelated English filler on the same page.", fontsize=11)
    doc.save(path)
    doc.close()
    return build_index(Path(path))


def test_compat_quote_of_chinese_is_found(cjk_index: DocumentIndex) -> None:
    quote = unicodedata.normalize("NFKC", CHINESE).replace("8 屆", "8屆").replace("3 次", "3次")
    assert "," in quote  # really the compatibility form
    assert "8屆" in quote
    result = locate(cjk_index, quote)
    assert result.status == "found"
    assert len(result.rects) == 1
    assert result.rects[0].y0 < 100 < result.rects[0].y1


@pytest.mark.parametrize("form", ["NFC", "NFD"])
def test_korean_quote_is_found_composed_or_as_jamo(
    cjk_index: DocumentIndex, form: Literal["NFC", "NFD"]
) -> None:
    result = locate(cjk_index, unicodedata.normalize(form, KOREAN))
    assert result.status == "found"
    assert result.rects[0].y0 < 130 < result.rects[0].y1
