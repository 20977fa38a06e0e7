"""Extraction stays linear on input built to make it slow: for every bomb of
``tests/fixtures/markdown_bombs.py`` (and the HTML reader's own), the CPU time of four times the
input against once the input stays near 4, never near 16 (a quadratic step). A ratio, never a
clock deadline: each time is this thread's CPU time, the best of up to three, so a busy
machine slows both sides alike. ``bench/markdown_bench.py`` prints the times of 1 MB."""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Callable

import pytest

from app.documents.markdown_text import markdown_to_text
from app.documents.text_extract import SourceDocument, html_to_text
from tests.fixtures.markdown_bombs import BOMBS, repeated

pytestmark = pytest.mark.slow  # timing-growth properties (ARCHITECTURE.md, Tests and tasks)

SIZE = 10_000  # characters at 1x; 4x is 40,000
# Linear is 4; a quadratic step is 16. Above 8 is not linear; up to 6, no need to measure again.
MAX_RATIO = 8.0
CLEARLY = 6.0
HTML_BOMBS = {
    "div deep": lambda size: "<div>" * (size // 9) + "</b>" * (size // 9),
    "div unclosed": repeated("<div "),
    "attribute unclosed": repeated("<a x='"),
    "comment unclosed": repeated("<!--"),
    "cells": repeated("<td>x"),
    "cdata": repeated("<![CDATA["),
    "headers in an article": repeated("<header>", "<article>"),
}


def cpu_seconds(convert: Callable[[str], SourceDocument], source: str) -> float:
    """This thread's CPU time for one extraction, without the cyclic garbage collector (its
    passes fall where they fall: noise, as for timeit)."""
    gc.collect()
    gc.disable()
    try:
        start = time.thread_time()
        convert(source)
        return time.thread_time() - start
    finally:
        gc.enable()


def growth(convert: Callable[[str], SourceDocument], bomb: Callable[[int], str]) -> float:
    """CPU time of 4x the input over 1x, each the best of up to three runs: measuring stops
    once the ratio is clearly linear (at most ``CLEARLY``), and takes all three otherwise."""
    convert("warm *up*")  # imports, compiled rules
    small, large = bomb(SIZE), bomb(4 * SIZE)
    once = four = float("inf")
    for _ in range(3):
        once = min(once, cpu_seconds(convert, small))
        four = min(four, cpu_seconds(convert, large))
        # thread_time's resolution is far below these (milliseconds at least).
        if four / max(once, 1e-4) <= CLEARLY:
            break
    return four / max(once, 1e-4)


def _id(name: str) -> str:
    return re.sub(r"\W+", "-", name).strip("-") or "bomb"


@pytest.mark.parametrize(
    "name", list(BOMBS), ids=[f"{i:02d}-{_id(n)}" for i, n in enumerate(BOMBS)]
)
def test_markdown_extraction_grows_linearly(name: str) -> None:
    ratio = growth(markdown_to_text, BOMBS[name])
    assert ratio <= MAX_RATIO, f"{name!r}: 4x the input took {ratio:.1f}x the CPU time"


@pytest.mark.parametrize("name", list(HTML_BOMBS))
def test_html_extraction_grows_linearly(name: str) -> None:
    ratio = growth(html_to_text, HTML_BOMBS[name])
    assert ratio <= MAX_RATIO, f"{name!r}: 4x the input took {ratio:.1f}x the CPU time"


def test_the_measure_sees_a_quadratic_step() -> None:
    """The ratio catches what it is for: a step that is quadratic (each character compared with
    all before it) gives about 16."""

    def quadratic(source: str) -> SourceDocument:
        # Every character of the source against all before it, in C: the quadratic part
        # outweighs the loop's own (linear) cost tens of times, so that a busy machine's noise
        # on the small run cannot pull the ratio under the limit (half the source, it measured
        # 7.5 once, beside the whole suite).
        seen = ""
        for char in source:
            seen.count(char)
            seen.count(char + char)
            seen += char
        return html_to_text("")

    assert growth(quadratic, repeated("ab")) > MAX_RATIO
