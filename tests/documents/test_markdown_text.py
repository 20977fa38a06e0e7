"""Markdown to text through a CommonMark parser: what becomes a block and of which kind, what of
the inline markup is shown, and the invariants the selectors rely on (blocks tile the text,
offsets exact, the same text every time), by property where it helps. The whole CommonMark spec
against a browser: ``tests/browser/test_commonmark_spec.py``; growth on hostile input:
``test_markdown_growth.py``."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from app.documents.markdown_text import markdown_to_text
from tests.documents.test_text_extract import tiles
from tests.fixtures.text_sources import CITED, MARKDOWN


def test_markdown_markers_are_out_of_the_text() -> None:
    doc = markdown_to_text(MARKDOWN)
    assert doc.title == "Water bill: second reading"
    assert doc.text.split("\n\n")[:2] == [
        "Water bill: second reading",
        "The minister opened the debate. "
        + CITED
        + " Each county pays one third of the running costs, and the rest comes from the "
        "national budget.",
    ]
    assert "On roads, members asked about the Kisumu-Busia highway." in doc.text
    assert "Reading\tMonth\n\nFirst\tMarch" in doc.text
    assert "Summary: " + CITED in doc.text
    for marker in ("**", "](", "# ", "- On", "|", "> "):
        assert marker not in doc.text
    assert [b.kind for b in doc.blocks][:4] == ["heading", "paragraph", "heading", "item"]
    tiles(doc)


def test_markdown_inline_rules() -> None:
    doc = markdown_to_text(
        "Setext\n===\n\nA *b* _c_ **d** __e__ ~~f~~ `g*h*` ![alt](x.png) <https://x.y> "
        "snake_case 2 * 3 * 4 \\*lit\\* <b>tag</b>  \nnext\n\n```\ncode *raw*\n```\n\n---\n\n"
        "[ref]: https://example.com"
    )
    assert doc.text == (
        "Setext\n\nA b c d e f g*h* alt https://x.y snake_case 2 * 3 * 4 *lit* tag\nnext"
        "\n\ncode *raw*"
    )


MARKDOWNISH = st.lists(
    st.sampled_from(
        [
            "# ",
            "## ",
            "- ",
            "1. ",
            "> ",
            "```",
            "|",
            "---",
            "*",
            "_",
            "`",
            "[a](b)",
            "word",
            "two words",
            " ",
            "\n",
            "\n\n",
            "  \n",
            "\\",
            "===",
        ]
    ),
    max_size=60,
).map("".join)


@settings(max_examples=300)
@given(MARKDOWNISH)
def test_any_markdown_gives_blocks_and_chunks_that_tile_its_text(source: str) -> None:
    tiles(markdown_to_text(source))


def test_markdown_inline_markup_across_a_line_end() -> None:
    doc = markdown_to_text("This is a [long link\ntext](http://x.y) and **bold\nwords**")
    assert doc.text == "This is a long link text and bold words"


def test_markdown_hard_breaks_stay_line_ends() -> None:
    doc = markdown_to_text("line *one  \nstill* emphasised\\\nline three")
    assert doc.text == "line one\nstill emphasised\nline three"


def test_markdown_code_spans_and_escapes_keep_entities_literal() -> None:
    doc = markdown_to_text("Code `&amp;`, escaped \\&amp; and read &amp; here")
    assert doc.text == "Code &amp;, escaped &amp; and read & here"


def test_markdown_escaped_bar_is_inside_its_cell() -> None:
    doc = markdown_to_text("| a \\| b | c |\n|---|---|\n| 1 | 2 |")
    assert doc.text == "a | b\tc\n\n1\t2"


def kinds(source: str) -> list[tuple[str, int]]:
    return [(b.kind, b.level) for b in markdown_to_text(source).blocks]


def test_a_wrapped_line_that_starts_with_a_number_and_a_full_stop_keeps_it() -> None:
    # The case: "2023." is no list item (a list interrupts a paragraph only from 1).
    doc = markdown_to_text("Revenue grew in fiscal\n2023. Margins fell.\n")
    assert doc.text == "Revenue grew in fiscal 2023. Margins fell."


def test_block_kinds_follow_the_innermost_container() -> None:
    source = (
        "Title\n=====\n\n### Three\n\n- item\n  > quoted in an item\n\n"
        "> quote\n> - item in a quote\n\n    indented code\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    )
    assert kinds(source) == [
        ("heading", 1),
        ("heading", 3),
        ("item", 0),
        ("quote", 0),
        ("quote", 0),
        ("item", 0),
        ("code", 0),
        ("row", 0),
        ("row", 0),
    ]
    assert markdown_to_text(source).title == "Title"


def test_the_title_is_the_first_level_one_heading() -> None:
    assert markdown_to_text("## Sub\n\n# Main *title*\n\n# Later").title == "Main title"
    assert markdown_to_text('<h1 align="center">Tool</h1>\n\ntext').title == "Tool"
    assert markdown_to_text("## Only a second level").title == ""


def test_code_is_kept_as_written() -> None:
    doc = markdown_to_text("```python\nif a  <  b:\n    print(`x`)\n```\n\nA `` `code`  span ``.")
    assert doc.text == "if a  <  b:\n    print(`x`)\n\nA `code`  span."
    assert [b.kind for b in doc.blocks] == ["code", "paragraph"]


def test_links_images_autolinks_entities_and_escapes() -> None:
    doc = markdown_to_text(
        '[text *em*](http://x.y "title") [ref][r] ![alt *text*](i.png) <mailto:a@b.c> '
        "&copy; &#35; \\[not a link\\] ~~gone~~\n\n[r]: http://r.s"
    )
    assert doc.text == "text em ref alt text mailto:a@b.c © # [not a link] gone"


def test_inline_html_tags_are_dropped_and_what_they_show_is_kept() -> None:
    doc = markdown_to_text(
        'a <b>bold</b> <span class="x">span</span><br>next <img src=x alt="the &amp; alt"> '
        "<script>alert(1)</script>end <!-- note --> <?php x ?>b"
    )
    assert doc.text == "a bold span\nnext the & alt end b"


def test_an_html_block_is_what_a_browser_shows_of_it() -> None:
    doc = markdown_to_text(
        '<div align="center">\n  <img alt="Logo" src="l.png">\n  <h3>Sub</h3>\n</div>\n\n'
        "<table><tr><td>a</td><td>b</td></tr></table>\n\n<script>\nhidden()\n</script>\n\n"
        "- <p>in an item</p>\n"
    )
    assert doc.text == "Logo\n\nSub\n\na\tb\n\nin an item"
    assert [(b.kind, b.level) for b in doc.blocks] == [
        ("paragraph", 0),
        ("heading", 3),
        ("row", 0),
        ("item", 0),
    ]


def test_white_space_is_what_a_browser_shows() -> None:
    doc = markdown_to_text("a   b\tc \nd  \ne\\\nf")
    assert doc.text == "a b c d\ne\nf"


def test_nothing_deeper_than_the_nesting_guard_is_read() -> None:
    # markdown-it-py's guard against unbounded recursion: a quote 200 deep shows nothing.
    assert markdown_to_text("> " * 200 + "deep\n\nafter").text == "after"
    assert markdown_to_text("> " * 40 + "deep").text == "deep"
    # Inline, a link whose text nests brackets deeper than 8 is read as text, syntax and all.
    assert (
        markdown_to_text("[a " * 8 + "x" + "]" * 8 + "(u)").text == "a " + "[a " * 7 + "x" + "]" * 7
    )
    assert markdown_to_text("[a " * 9 + "x" + "]" * 9 + "(u)").text.endswith("](u)")


WORDS = st.lists(
    st.from_regex(r"[A-Za-z0-9]{1,8}[.,;:)]?", fullmatch=True).filter(
        lambda w: not re.fullmatch(r"0*1[.)]", w)  # "1." or "1)" starts a list
    ),
    min_size=1,
    max_size=40,
)


@given(WORDS, st.lists(st.integers(min_value=1, max_value=6), max_size=10))
def test_hard_wrapped_words_are_all_kept(words: list[str], widths: list[int]) -> None:
    """Words wrapped at any line end are read in full: only "1." (or "1)") can start a list
    inside a paragraph; a number and a full stop at a line's start is a word."""
    lines, at = [], 0
    for width in [*widths, len(words)]:
        if at < len(words):
            lines.append(" ".join(words[at : at + width]))
            at += width
    source = "Lead " + "\n".join(lines)
    assert markdown_to_text(source).text == "Lead " + " ".join(words)


@settings(max_examples=200)
@given(st.text(alphabet="ab#*_`[]()!<>-|~&;\\ \n>123.", max_size=80))
def test_any_markdown_is_read_the_same_twice_and_tiles(source: str) -> None:
    first, second = markdown_to_text(source), markdown_to_text(source)
    assert first == second
    tiles(first)
