"""The English word list that decides line-end hyphens (app/highlights/dictionary.py), with the
display form it is given to."""

from __future__ import annotations

import pytest

from app.alignment.display import display_text
from app.highlights.dictionary import ENGLISH_WORDS, english_words


def test_the_container_loads_the_list_when_first_asked() -> None:
    assert "parliamentary" in ENGLISH_WORDS
    assert "parlia" not in ENGLISH_WORDS


def test_the_word_list_is_loaded_once_and_lower_case() -> None:
    words = english_words()
    assert english_words() is words
    assert len(words) > 100_000
    assert {"year", "over", "parliamentary", "without", "long", "term"} <= words
    assert not {"yearover", "longterm", "parlia", "mentary"} & words
    assert all(w == w.lower() for w in list(words)[:1000])


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("year-\nover-year growth", "year-over-year growth"),
        ("long-\nterm debt", "long-term debt"),
        ("the parlia-\nmentary session", "the parliamentary session"),
        ("manage-\nment discussion", "management discussion"),
        ("with-\nout notice", "without notice"),
        ("be-\ncause of", "because of"),
        ("a multi-\nyear plan", "a multi-year plan"),
        ("multi-\nple times", "multiple times"),
        ("cyber-\nattacks", "cyber-attacks"),
        # A prefix that keeps its hyphen in English keeps it only where the joined word is not
        # one: TeX breaks "ex-pected" and "pre-sident" there too.
        ("as ex-\npected", "as expected"),
        ("the pre-\nsident said", "the president said"),
        ("co-\nvered bonds", "covered bonds"),
        ("self-\nevident truths", "self-evident truths"),
        ("a well-\nknown risk", "a well-known risk"),
        ("his ex-\nwife", "his ex-wife"),
    ],
)
def test_line_end_hyphens_with_the_real_word_list(stored: str, shown: str) -> None:
    assert display_text(stored, known=english_words()) == shown
