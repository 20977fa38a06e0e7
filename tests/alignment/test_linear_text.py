"""No text makes the sentence splitter, the elision split or the lexical selector slow: their time
grows linearly with the input, on inputs built to make a regex backtrack or a look-back rescan.

Timing is relative (the same input repeated four times more must not take more than eight times
as long; quadratic time would take sixteen), the best of several runs in this thread's CPU time,
never an absolute bound. The rewrites are also checked against the old implementations, kept here
as the oracle and run on small inputs only.
"""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.alignment.text import normalize_text, split_elision
from app.selection.selection import select_batch
from app.selection.sentences import split_sentences
from app.selection.support import spells

# --- The oracle: split_elision as it was before it was made linear. ---
# (split_sentences had one too, until issue 41 changed where sentences end: pySBD's golden rules,
# tests/selection/test_golden_rules.py, are its reference now.)

_OLD_ELLIPSIS = re.compile(
    r"[\[(]?\s*(?:\.\s*){3,}\s*[\])]?|[\[(]?\s*[\u2026\u22ef\u2025]\s*[\])]?"
)


def old_split_elision(quote: str) -> list[str]:
    pieces = (normalize_text(piece) for piece in _OLD_ELLIPSIS.split(quote))
    return [piece for piece in pieces if piece]


# --- Inputs: what PDFs, answers and attackers put in text, in adversarial runs. ---

PIECES = [
    "x. ",
    ". . .",
    ".",
    "...",
    "!",
    "?",
    "!?",
    "…",
    "[...]",
    "(…)",
    "[",
    "]",
    "(",
    ")",
    " ",
    "  ",
    "\t",
    "\n",
    "\n\n",
    "\n \n",
    "\r\n",
    "\u00a0",
    "\u202f",
    " • ",
    "•",
    "\uf0b7",
    "Mr. ",
    "Mrs.",
    "J. ",
    "e.g. ",
    "i.e.",
    "U.S. ",
    "No. 5",
    "10.5",
    "1,234",
    "12%",
    "。",
    "！",
    "？",
    "」",
    "»",
    " »",
    "« oui. »",
    '"',
    "”",
    "'",
    "Word",
    "word",
    "x",
    "é",
    "中文",
    "The sales rose.",
    "Revenue",
    "_",
    # What the golden rules steer on (issue 41): list items, initialisms, ellipses, brackets.
    "1. ",
    "2.) ",
    "(3) ",
    "a. ",
    "iv. ",
    "U.S.A. ",
    "co. ",
    "I. ",
    "12. Juni",
    " . . . ",
    ". . . .",
    ". .x",
    "《",
    "》",
    "「",
    "と",
    "-\n\n",
]
piece = st.sampled_from(PIECES)
# A unit repeated into a long run: the shape every blow-up needs.
unit = st.lists(piece, min_size=1, max_size=5).map("".join)
# Small texts for comparing with the oracle (its quadratic cost stays negligible here).
small_text = st.one_of(
    st.lists(piece, max_size=40).map("".join),
    st.text(alphabet=st.sampled_from(list(".!?… \n\t\u00a0»)]['\"aAbMr.Jx1,%。•_")), max_size=80),
    st.text(max_size=60),
)
REAL_ISH = [
    "Mr. Speaker, the hon. Member for Kisumu, Dr. Otieno, asked: what is the cost? It is KSh 12.5 "
    "billion (see p. 4, para. 3). The motion was carried.\n\nNext item. « C'est fait. » Fin.",
    "Net revenues were $3.8 billion, an increase of 12% • Same-store revenues rose 9.1% • "
    "Adjusted EBITDA was $1.2 billion.\nTable of contents\n1. Overview ..... 3\n2. Results .... 7",
    "会议于下午三点开始。主席宣布开会！有问题吗？没有。J. Smith and M. Dupont agreed, i.e. all.",
]


def _best_time(function: Callable[[], object], runs: int = 5) -> float:
    best = float("inf")
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(runs):
            # CPU time of this thread: other processes taking the CPU do not count.
            started = time.thread_time()
            function()
            best = min(best, time.thread_time() - started)
    finally:
        if gc_was_enabled:
            gc.enable()
    return best


def _repeated(text: str, size: int) -> str:
    # Whole repetitions: cut mid-unit, the two sizes would end differently ("10." against
    # "10.5"), and a different ending is a different input, not a longer one.
    return text * max(1, size // len(text))


def assert_linear(function: Callable[[str], object], text: str, size: int, tail: str = "") -> None:
    """Four times the input (``text`` repeated, then ``tail``) takes at most eight times as long
    (quadratic would be sixteen)."""
    small = _repeated(text, size)
    small, large = small + tail, small * 4 + tail
    function(small)  # warm caches (stemmer, normalisation) so they do not count for the small one
    ratio = _best_time(lambda: function(large)) / max(_best_time(lambda: function(small)), 1e-4)
    assert ratio < 8, f"4x the input ({text[:40]!r}...) took {ratio:.1f}x as long"


# Table rows too: figures after a label, a caption alone on its line.
ADVERSARIAL = [
    "x. ",
    ".",
    "!?",
    ". ",
    "Mr. ",
    "\n",
    " ",
    "\n ",
    " •",
    "。",
    "[...] ",
    "a",
    "Total 1,234 ",
    "B\n",
]


# What ends a run matters as much as the run: dots followed by a letter, a word by a period.
tail = st.one_of(st.just(""), piece, unit)


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(unit, tail)
@example("x. ", "")
@example(".", "x")
@example("!?", "a")
@example("Mr. ", "")
@example("a", " b. c")
@example(" ", "x.")
@example("\n", "a")
@example(")", "a")
def test_splitting_takes_linear_time(text: str, end: str) -> None:
    assert_linear(split_sentences, text, 5_000, end)


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(unit, tail)
@example(" ", "a")
@example(". ", "")
@example("[ ", "x")
@example("\u2026 ", "")
def test_elision_split_takes_linear_time(text: str, end: str) -> None:
    assert_linear(split_elision, text, 5_000, end)


@pytest.mark.slow
@settings(max_examples=10, deadline=None)
@given(st.sampled_from(ADVERSARIAL))
@example("x. ")
def test_the_lexical_selector_takes_linear_time_in_the_answer(text: str) -> None:
    chunk = split_sentences(REAL_ISH[0] + " " + REAL_ISH[1])
    assert_linear(lambda answer: select_batch({"c": chunk}, answer, "What?", 5), text, 5_000)


@settings(max_examples=1500, deadline=None)
@given(small_text)
@example("a  ... b")
@example("a [...]  ... b")
@example("( \u2026 ) b")
def test_the_same_elision_split_as_before(text: str) -> None:
    assert split_elision(text) == old_split_elision(text)


@settings(max_examples=300, deadline=None)
@given(st.one_of(small_text, st.tuples(unit, st.integers(1, 400)).map(lambda u: u[0] * u[1])))
def test_offsets_index_the_chunk(text: str) -> None:
    previous_end = 0
    for number, sentence in enumerate(split_sentences(text), 1):
        assert sentence.index == number
        assert sentence.text == text[sentence.start : sentence.end]
        assert previous_end <= sentence.start < sentence.end <= len(text)
        assert sentence.text == sentence.text.strip()
        assert any(ch.isalnum() for ch in sentence.text)
        previous_end = sentence.end


@pytest.mark.slow
def test_an_abbreviation_is_looked_for_in_linear_time() -> None:
    # Each "and" may be skipped or read as an N: tried way by way, 40 of them took a second.
    assert_linear(lambda text: spells("ANNNNNX", "apple " + text), "and ", 5_000, " y")
