"""Web and text sources to text: what is left out, what becomes a block, and the invariants the
selectors rely on (blocks and chunks tile the text), by property where it helps."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.errors import BadRequest
from app.core.formats import SourceFormat
from app.documents.markdown_text import markdown_to_text
from app.documents.text_extract import (
    SEPARATOR,
    SourceDocument,
    html_to_text,
    plain_to_text,
)
from app.documents.text_sources import (
    CHUNK_CHARS,
    chunk_source,
    extract,
    joined,
)
from tests.fixtures.text_sources import CITED, HTML, TEXT


def tiles(doc: SourceDocument) -> None:
    assert SEPARATOR.join(doc.text[b.start : b.end] for b in doc.blocks) == doc.text
    for block in doc.blocks:
        piece = doc.text[block.start : block.end]
        assert piece.strip()
        assert "\n\n" not in piece
    chunks = chunk_source(doc, "d")
    assert joined(chunks) == doc.text
    for chunk in chunks:
        assert doc.text[chunk.start : chunk.end] == chunk.text
        assert len(chunk.text) <= CHUNK_CHARS or "\n\n" not in chunk.text


def test_html_is_the_text_a_browser_shows() -> None:
    doc = html_to_text(HTML)
    assert doc.title == "Water & roads debate"
    assert doc.text.startswith("Water bill — second reading\n\nThe minister opened the debate.")
    assert "Kisumu–Busia highway" in doc.text
    assert "First reading: March\n\nSecond reading: June, with amendments" in doc.text
    for furniture in ("Home", "Bills", "Copyright", "injected", "color", "pixel", "track"):
        assert furniture not in doc.text
    assert doc.text.count(CITED) == 2
    tiles(doc)


def test_html_line_breaks_cells_preformatted_and_hidden_parts() -> None:
    doc = html_to_text(
        "<p>one<br>two  \n three</p><table><tr><th>A</th><td> 1 </td></tr></table>"
        "<pre>x  = 1\n\n\ny = 2</pre><div hidden>secret</div><p style='display: none'>gone</p>"
        "<span aria-hidden=true>icon</span><div role=navigation>menu</div><p>end &amp; more</p>"
    )
    # aria-hidden hides from a screen reader only: a browser shows it.
    assert doc.text == "one\ntwo three\n\nA\t1\n\nx  = 1\n\ny = 2\n\nicon\n\nend & more"
    kinds = ["paragraph", "row", "code", "code", "paragraph", "paragraph"]
    assert [b.kind for b in doc.blocks] == kinds


def test_a_header_inside_the_article_is_kept() -> None:
    doc = html_to_text("<header>Site</header><article><header><h1>Title</h1></header>x</article>")
    assert doc.text == "Title\n\nx"


def test_plain_text_keeps_its_lines_and_paragraphs() -> None:
    doc = plain_to_text("\ufeffa line\r\nnext line   \r\n\r\n\r\n\nsecond para\n")
    assert doc.text == "a line\nnext line\n\nsecond para"
    tiles(plain_to_text(TEXT))


def test_a_long_paragraph_is_cut_into_blocks_at_spaces() -> None:
    doc = plain_to_text(" ".join(["word"] * 5000))
    assert len(doc.blocks) > 1
    assert all(doc.text[b.start : b.end].startswith("word") for b in doc.blocks)
    tiles(doc)


def test_headings_start_chunks_and_keep_their_paragraph() -> None:
    doc = markdown_to_text("# A\n\n## B\n\npara one\n\npara two\n\n# C\n\npara three")
    texts = [c.text for c in chunk_source(doc, "d")]
    assert texts == ["A\n\nB\n\npara one\n\npara two", "C\n\npara three"]


HTMLISH = st.lists(
    st.sampled_from(
        [
            "<p>",
            "</p>",
            "<br>",
            "<li>",
            "<h2>",
            "</h2>",
            "<pre>",
            "</pre>",
            "<td>",
            "<tr>",
            "<script>",
            "</script>",
            "word",
            "two words",
            " ",
            "\n",
            "\n\n",
            "&amp;",
            "<b>",
            "</b>",
            "<nav>",
            "</nav>",
            "x.",
            "<div>",
            "</div>",
        ]
    ),
    max_size=60,
).map("".join)


@settings(max_examples=300)
@given(HTMLISH)
def test_any_html_gives_blocks_and_chunks_that_tile_its_text(markup: str) -> None:
    tiles(html_to_text(markup))


@given(st.text(max_size=300))
def test_any_text_gives_blocks_and_chunks_that_tile_it(source: str) -> None:
    tiles(plain_to_text(source))


def test_text_that_is_not_utf8_is_refused_with_advice() -> None:
    with pytest.raises(BadRequest, match="save it as UTF-8"):
        extract("café".encode("latin-1"), SourceFormat.text)


def test_html_unknown_marked_section_is_skipped() -> None:
    # The stdlib parser raises AssertionError on it (a 500 before).
    assert html_to_text("<![foo[ x ]]><p>a</p>").text == "a"
    assert html_to_text("<p>b</p><![foo[ unclosed").text == "b"


def test_html_doctype_internal_subset_is_not_text() -> None:
    doc = html_to_text('<!DOCTYPE html [ <!ENTITY x "y"> ]><p>a</p>')
    assert doc.text == "a"


@pytest.mark.parametrize("convert", [markdown_to_text, html_to_text, plain_to_text])
def test_control_characters_in_a_file_are_left_out_not_read_as_placeholders(
    convert: Callable[[str], SourceDocument],
) -> None:
    # The Markdown reader's placeholders are control characters: one in the file ("\x0299\x02")
    # was read as the 99th escape and raised IndexError (a 500 for an upload).
    source = "The dues rose \x0299\x02 in May, *by far* \\& more.\x00\n\nThe fleet \x01grew."
    text = convert(source).text
    assert not any(ord(c) < 32 and c not in "\t\n\r\f" for c in text)
    assert "99" in text
    assert "fleet" in text
