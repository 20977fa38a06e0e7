"""The display form of a highlight's text (app/alignment/display.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.alignment.display import display_text


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("the parlia- mentary session", "the parliamentary session"),
        ("the parlia-\nmentary session", "the parliamentary session"),
        ("the parlia\u00ad\nmentary session", "the parliamentary session"),
        (
            "the \ufb01nal report, \ufb02oor of the o\ufb03ce",
            "the final report, floor of the office",
        ),
        ("a self-\nevident truth", "a self-evident truth"),
        ("short- and long-term debt", "short- and long-term debt"),
        ("pre- or post-war", "pre- or post-war"),
        ("Net  sales\n\n were   $2.1 billion", "Net sales were $2.1 billion"),
        ("US- Mexico border", "US- Mexico border"),  # a capital after it: not a broken word
        ("勞工退休\n金條例", "勞工退休金條例"),
        ("第一條，\n本條例", "第一條，本條例"),  # full-width punctuation stays
        ("Revenue rose 8% in 2023 - a record.", "Revenue rose 8% in 2023 - a record."),
    ],
)
def test_display_text(stored: str, shown: str) -> None:
    assert display_text(stored) == shown


@given(st.text(alphabet="ab- \n\ufb01\u00ad勞工。", max_size=60))
def test_display_text_is_settled_and_tidy(stored: str) -> None:
    shown = display_text(stored)
    assert display_text(shown) == shown
    assert shown == shown.strip()
    assert "  " not in shown
    assert "\n" not in shown
    assert "\ufb01" not in shown
    assert "\u00ad" not in shown


def test_long_runs_are_read_once() -> None:
    # A table cell or garbage text layer: 20,000 letters with no break, or thousands of broken
    # words. The hyphen rule is tried from word starts only (it took 3 s from every position);
    # no timing is asserted, the result is.
    assert display_text("a" * 20_000) == "a" * 20_000
    assert display_text("ab-\n" * 5_000) == "ab" * 5_000 + "-"  # the last has no next line
