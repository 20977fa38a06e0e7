"""The display form of a highlight's text (app/alignment/display.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.alignment.display import context_of, display_text

# A stand-in for the English word list (app/highlights/dictionary.py), small enough to read.
KNOWN = frozenset(
    "year over state of the art long term self evident parliamentary any one anyone with out "
    "without cross border".split()
)


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


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        # A compound broken at either of its hyphens keeps both.
        ("a year-\nover-year rise", "a year-over-year rise"),
        ("a year-over-\nyear rise", "a year-over-year rise"),
        ("a year- over-year rise", "a year-over-year rise"),
        ("state-\nof-the-art", "state-of-the-art"),
        ("state-of-\nthe-art", "state-of-the-art"),
        ("state-of-the-\nart", "state-of-the-art"),
        # Two words the dictionary knows, and not their join.
        ("the long-\nterm debt", "the long-term debt"),
        # The dictionary knows the joined word: the typesetter's hyphen.
        ("any-\none who asks", "anyone who asks"),
        ("with-\nout notice", "without notice"),
        ("the parlia-\nmentary session", "the parliamentary session"),
        ("a self-\nevident truth", "a self-evident truth"),
        ("in fiscal 2023-\nend balances", "in fiscal 2023-end balances"),  # no word "2023end"
    ],
)
def test_line_end_hyphens_with_a_dictionary(stored: str, shown: str) -> None:
    assert display_text(stored, known=KNOWN) == shown


@pytest.mark.parametrize(
    ("stored", "context", "shown"),
    [
        # The chunk writes the pair with a hyphen inside a line: a compound.
        ("the risk-\nfree rate", "a risk-free rate of 4%", "the risk-free rate"),
        # ... or joined: the line end's hyphen is the typesetter's, whatever the dictionary says.
        ("the long-\nterm view", "our longterm view", "the longterm view"),
        ("a year-\nover-year rise", "the yearover figure", "a yearover-year rise"),
        # The pieces of the broken word itself are no evidence.
        ("the risk-\nfree rate", "the risk-\nfree rate", "the riskfree rate"),
    ],
)
def test_line_end_hyphens_from_the_context(stored: str, context: str, shown: str) -> None:
    assert display_text(stored, context, KNOWN) == shown


def test_the_context_reads_words_and_pairs_written_inside_a_line() -> None:
    seen = context_of("a year-\nover-year rise, state-of-the-art o\ufb03ces and parlia- mentary")
    assert ("over", "year") in seen.pairs
    assert ("year", "over") not in seen.pairs
    assert {"rise", "state", "art", "offices", "year"} <= seen.words
    assert not {"parlia", "mentary", "yearover"} & seen.words


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


WORDS = ["a", "b", "ab", "ba", "bo", "oba", "o"]


@given(
    st.text(alphabet="abo- \n2", max_size=40),
    st.text(alphabet="abo- \n", max_size=40),
    st.frozensets(st.sampled_from(WORDS)),
    st.text(alphabet="abo- \n", max_size=40),
    st.frozensets(st.sampled_from(WORDS)),
)
def test_settled_with_any_context_and_dictionary(
    stored: str, context: str, known: frozenset[str], other: str, other_known: frozenset[str]
) -> None:
    """Shown once, the text has no line-end hyphen left for any context or dictionary to judge:
    the highlight fetched by id (shown with its chunk) and a copy quoted anywhere else agree."""
    shown = display_text(stored, context, known)
    assert display_text(shown, other, other_known) == shown
    assert "\n" not in shown
