"""Placing a caller's chunk in the document's own text (``alignment/chunk_place.py``), by
property: any stretch of a document, re-cut and marked up as the ecosystem's chunkers do, is
placed on exactly that stretch; text that is not there is not placed; the work is bounded."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from app.alignment.chunk_place import FOUND, place
from app.alignment.grams import GramTable
from app.alignment.text import normalize, normalize_text

WORDS = (
    "harbour quay board budget repair piles berth survey seagrass slipway members chair "
    "finance officer mooring fees loan years April meeting minutes consultation responses "
    "fleet fishing storm divers timber fuel tanker vessels metres income spending"
).split()


def document(seed: int, words: int = 900) -> str:
    """Sentences of random words (distinct enough that 6-grams of a stretch are rare elsewhere:
    every tenth word carries a number)."""
    rng = random.Random(seed)
    out: list[str] = []
    for k in range(words):
        word = rng.choice(WORDS) + (str(k) if k % 10 == 0 else "")
        out.append(word.capitalize() if not out or out[-1].endswith(".") else word)
        if rng.random() < 0.08:
            out[-1] += "."
    text = " ".join(out)
    # Paragraphs, as the own text has them.
    return text.replace(". ", ".\n\n", 3)


def recut(stretch: str, style: int, rng: random.Random) -> str:
    """The stretch as a chunker writes it."""
    words = stretch.split()
    if style == 0:  # pdfminer: a blank line between lines of ~8 words
        return "\n\n".join(" ".join(words[k : k + 8]) for k in range(0, len(words), 8))
    if style == 1:  # Markdown: bold runs and a link
        at = rng.randrange(len(words))
        words[at] = f"[{words[at]}](https://example.org/{at})"
        return " ".join(f"**{w}**" if k % 7 == 0 else w for k, w in enumerate(words))
    if style == 2:  # line-end hyphenation: "har- bour"
        return " ".join(
            f"{w[:3]}-\n{w[3:]}" if len(w) > 6 and k % 5 == 0 else w for k, w in enumerate(words)
        )
    return "\n".join(words)  # one word a line


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    start=st.integers(0, 700),
    length=st.integers(30, 150),
    style=st.integers(0, 3),
)
def test_a_recut_stretch_is_placed_on_that_stretch(
    seed: int, start: int, length: int, style: int
) -> None:
    text = document(seed)
    words = text.split(" ")
    lo = len(" ".join(words[:start])) + (1 if start else 0)
    stretch = " ".join(words[start : start + length])
    hi = lo + len(stretch)
    assert text[lo:hi] == stretch
    skeleton = normalize(text)
    found = place(
        skeleton, GramTable(skeleton.text), recut(stretch, style, random.Random(seed)), text
    )
    assert found is not None
    assert found.share >= FOUND
    # The span holds the stretch's words exactly: nothing before or after but punctuation.
    assert normalize_text(text[found.start : found.end]) == normalize_text(stretch)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), size=st.integers(50, 3000))
def test_text_that_is_not_there_is_not_placed(seed: int, size: int) -> None:
    text = document(seed)
    skeleton = normalize(text)
    rng = random.Random(seed + 1)
    noise = "".join(rng.choice("bcdfgkmpqvwxz aeiou") for _ in range(size))
    assert place(skeleton, GramTable(skeleton.text), noise, text) is None


def test_a_line_repeated_a_thousand_times_is_not_taken_for_the_document() -> None:
    """One line of the document repeated: explained once, not a thousand times (its share is
    a thousandth), and looked up once per distinct gram."""
    text = document(7)
    line = " ".join(text.split(" ")[100:112])
    skeleton = normalize(text)
    assert place(skeleton, GramTable(skeleton.text), (line + "\n") * 1000, text) is None


def test_given_pages_decide_between_equal_places() -> None:
    """A passage printed twice is placed where the caller's pages say, when they do."""
    passage = "The board approved the harbour repair budget for the north quay in April."
    text = f"{passage}\n\nOther words fill the first page here.\n\n{passage}"
    skeleton = normalize(text)
    table = GramTable(skeleton.text)
    second = text.rindex(passage)
    near = (len(normalize_text(text[:second])), len(skeleton.text))
    assert place(skeleton, table, passage, text, near).start == second  # type: ignore[union-attr]
    first = place(skeleton, table, passage, text, (0, 10))
    assert first is not None
    assert first.start == 0


def test_a_span_that_stops_inside_the_chunk_keeps_the_marks_that_close_its_sentence() -> None:
    """A footnote and the footer the caller's extractor read after it ("Page 9 of 15"), which
    the own text leaves out: the span is the footnote with its full stop and closing quote (cut
    before them, the footnote read as a heading and the judge lit the footer under it)."""
    note = "3. REVPAR is \u201chotel revenue per available room.\u201d"
    text = f"{document(3)}\n\n{note}\n\nThe next section starts here."
    skeleton = normalize(text)
    chunk = f"{note}\n\n\nPage 9 of 15"
    found = place(skeleton, GramTable(skeleton.text), chunk, text)
    assert found is not None
    assert text[found.start : found.end] == note
    # A figure's sign is kept too: "2%." read as a bare "2" contradicted the claim's 2%.
    sales = "$2,777 million in net sales, offset by price and mix benefits of 2%."
    text = f"{document(5)}\n\n{sales}\n\nThe next section starts here."
    skeleton = normalize(text)
    found = place(skeleton, GramTable(skeleton.text), f"Page 3\n{sales}\n\n3\n", text)
    assert found is not None
    assert text[found.start : found.end] == sales


class CountingTable(GramTable):
    """The gram table, counting its lookups: placing's work, measured without a clock."""

    lookups = 0

    def positions(self, gram: str) -> list[int]:
        CountingTable.lookups += 1
        return super().positions(gram)


def test_placing_costs_grow_linearly_with_the_chunk() -> None:
    """Lookups grow with the chunk's distinct grams, never with the document or the
    repetitions: four times the text (new words) is about four times the lookups, and a line
    repeated 4,000 times costs what it costs once."""
    text = document(11, words=3000)
    skeleton = normalize(text)
    table = CountingTable(skeleton.text)
    words = text.split(" ")

    def lookups(chunk: str) -> int:
        CountingTable.lookups = 0
        place(skeleton, table, chunk, text)
        return CountingTable.lookups

    small, large = " ".join(words[:150]), " ".join(words[:600])
    ratio = lookups(large) / lookups(small)
    assert 3.0 <= ratio <= 5.0, ratio
    line = " ".join(words[200:215])
    assert lookups((line + "\n") * 4000) <= lookups(line) + len(normalize_text(line))
