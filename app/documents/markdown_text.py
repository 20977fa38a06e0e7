"""Markdown to the text a reader sees, as blocks (``text_extract.py``'s model, ``assemble``):
parsed by markdown-it-py, a CommonMark parser (the spec's 0.31.2; with GitHub's tables and
strikethrough), its tokens read into blocks. Pure, deterministic from the text.

Blocks: a heading (its level; the first level-1 heading is the title), a paragraph, a list item's
paragraphs (``item``) and a block quote's (``quote``; the innermost container decides), fenced
and indented code as written (``code``), a table's rows (``row``, cells separated by a tab, as
HTML tables are). An HTML block is the text a browser shows of it (``text_extract``'s HTML
reader; its images as their alt text). A thematic break and link reference definitions show
nothing.

Inline, the words a browser shows: a soft line break is a space and a hard one a line break,
white space runs one space, entities and escapes decoded, code spans as written, a link its text,
an autolink its URL, an image its alt text (the service's choice: alt text is part of the words),
emphasis and strikethrough their text; inline HTML tags are dropped and their text kept, except
``<br>`` (a line break), ``<img>`` (its alt text), and what a browser never shows (``<script>``,
``<style>``, ...: left out to their end tag or the paragraph's end). No Markdown syntax remains.

Cost: linear in the text's length on every input tried, pathological ones included
(``tests/documents/test_markdown_growth.py``, ``bench/markdown_bench.py``). The parser is pure
Python, so a long parse in a thread (``asyncio.to_thread``) lets the event loop run between its
steps. markdown-it-py's guards against unbounded recursion, which only files built to defeat
them reach: containers nested deeper than ``MAX_NESTING`` levels (a block quote, a list and its
item are one level each) are not read (what is inside them is left out), and a link or image
whose text nests brackets, links or images more than ``MAX_INLINE_NESTING`` deep is read as
text, its syntax with it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from app.documents.text_extract import (
    NEVER_SHOWN,
    Block,
    BlockKind,
    SourceDocument,
    assemble,
    html_blocks,
    without_controls,
)

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.rules_core import StateCore
    from markdown_it.rules_inline import StateInline
    from markdown_it.token import Token

    InlineRule = Callable[[StateInline, bool], bool]
    CoreRule = Callable[[StateCore], None]

# markdown-it-py's nesting guard (its commonmark preset's is 20, which a list nested ten deep
# reaches): 100 levels, 50 nested lists; its cost is linear in the text at any depth. Inline
# constructs (links, images in them) have their own, smaller guard (``_shallow``).
MAX_NESTING = 100
MAX_INLINE_NESTING = 8
# Per inline text (markdown-it's environment of one parse), where its last "]" is.
_LAST_CLOSE = "highlight_last_close"
_SPACE = re.compile(r"[ \t\n\r\f]+")
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)")
_ALT = re.compile(r"""\salt\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+))""", re.IGNORECASE)
# Inline elements whose content a browser never shows as text: a form field's and a title's
# too (the HTML reader leaves out a textarea as page furniture, and reads <title> apart).
_NEVER_SHOWN = NEVER_SHOWN | {"textarea", "title"}


def _parser() -> MarkdownIt:
    """A parser for one parse (0.5 ms to make): its options change during the parse."""
    # Imported on the first Markdown file: markdown-it-py costs 60 ms to import, which a
    # worker process would otherwise pay before its first health check.
    from markdown_it import MarkdownIt
    from markdown_it.rules_core import inline
    from markdown_it.rules_inline import image, link

    parser = MarkdownIt("commonmark", {"maxNesting": MAX_NESTING})
    parser.enable(["table", "strikethrough"])
    parser.inline.ruler.at("link", _closed(link))
    parser.inline.ruler.at("image", _closed(image))
    parser.core.ruler.at("inline", _shallow(inline))
    return parser


def _shallow(rule: CoreRule) -> CoreRule:
    """The inline phase (``rule``) with its own nesting guard, ``MAX_INLINE_NESTING``: inline,
    markdown-it-py reads each "[" (a possible link's label) through every nested "[" up to the
    guard, so its cost is the text's length times the guard (250 KB of ``![`` then "]" took
    7 s at 20); real links nest two or three deep (an image in a link)."""

    def shallow(state: StateCore) -> None:
        blocks = state.md.options.maxNesting
        state.md.options.maxNesting = MAX_INLINE_NESTING
        try:
            rule(state)
        finally:
            state.md.options.maxNesting = blocks

    return shallow


def _closed(rule: InlineRule) -> InlineRule:
    """``rule`` (a link's, an image's) tried only where a "]" follows in the inline text.
    markdown-it-py reads each "[" as a possible label up to its "]", through every nested "["
    up to ``MAX_NESTING`` deep: 250 KB of ``[a `` (no "]") took 12 s, ``![`` 25 s. Without a
    "]" after it no "[" starts a link, so the answer is the same, found at once."""

    def guarded(state: StateInline, silent: bool) -> bool:
        closes: dict[str, int] = state.env.setdefault(_LAST_CLOSE, {})
        last = closes.get(state.src)
        if last is None:
            last = closes[state.src] = state.src.rfind("]")
        return last > state.pos and rule(state, silent)

    return guarded


def markdown_to_text(source: str) -> SourceDocument:
    tokens = _parser().parse(without_controls(source))
    blocks = list(_blocks(tokens))
    title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), "")
    return assemble(blocks, " ".join(title.split()))


def _blocks(tokens: Sequence[Token]) -> Iterator[Block]:
    containers: list[BlockKind] = []  # the open list items and block quotes
    heading = 0  # the open heading's level
    row: list[str] | None = None  # the open table row's cells
    for token in tokens:
        kind = token.type
        if kind == "inline":
            text = inline_text(token.children or [])
            if row is not None:
                row.append(text)
            elif heading:
                yield Block("heading", text, heading)
            else:
                yield Block(containers[-1] if containers else "paragraph", text)
        elif kind in ("list_item_open", "blockquote_open"):
            containers.append("item" if kind == "list_item_open" else "quote")
        elif kind in ("list_item_close", "blockquote_close"):
            containers.pop()
        elif kind == "heading_open":
            heading = int(token.tag[1:])
        elif kind == "heading_close":
            heading = 0
        elif kind == "tr_open":
            row = []
        elif kind == "tr_close" and row is not None:
            yield Block("row", "\t".join(row))
            row = None
        elif kind in ("fence", "code_block"):
            yield Block("code", token.content.removesuffix("\n"))
        elif kind == "html_block":
            shown, _ = html_blocks(token.content, images_as_alt=True)
            for block in shown:
                if block.kind == "paragraph" and containers:
                    yield Block(containers[-1], block.text)
                else:
                    yield block


class _Line:
    """Inline text as a browser lays it out: white space in words one space, none at a line's
    ends; code spans as written."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.space = False  # a space is due before the next words
        self.fresh = True  # at a line's start

    def words(self, text: str) -> None:
        text = _SPACE.sub(" ", text)
        if text.startswith(" "):
            self.space, text = True, text[1:]
        if text:
            self.verbatim(text.removesuffix(" "))
            self.space = text.endswith(" ")

    def verbatim(self, text: str) -> None:
        if not text:
            return
        if self.space and not self.fresh:
            self.parts.append(" ")
        self.parts.append(text)
        self.space = self.fresh = False

    def newline(self) -> None:
        self.parts.append("\n")
        self.space, self.fresh = False, True


def inline_text(children: Sequence[Token]) -> str:
    """The words of an inline token's children (an image's alt text read in place)."""
    line = _Line()
    hidden = 0  # inside inline HTML that is never shown
    pending: list[Iterator[Token]] = [iter(children)]
    while pending:
        token = next(pending[-1], None)
        if token is None:
            pending.pop()
            continue
        kind = token.type
        if kind == "html_inline":
            hidden = _inline_html(token.content, line, hidden)
        elif hidden:
            continue
        elif kind == "text":
            line.words(token.content)
        elif kind == "softbreak":
            line.words(" ")
        elif kind == "hardbreak":
            line.newline()
        elif kind == "code_inline":
            line.verbatim(token.content)
        elif kind == "image":
            pending.append(iter(token.children or []))
    return "".join(line.parts)


def _inline_html(markup: str, line: _Line, hidden: int) -> int:
    """One inline HTML tag (or comment, declaration): what it shows; the new ``hidden``."""
    tag = _TAG.match(markup)
    if tag is None:
        # A comment shows nothing. A processing instruction, a declaration or CDATA is to a
        # browser a comment that ends at its first ">": what follows is text.
        end = markup.find(">")
        if not hidden and not markup.startswith("<!--") and 0 <= end < len(markup) - 1:
            line.words(html.unescape(markup[end + 1 :]))
        return hidden
    closing, name = tag.group(1) == "/", tag.group(2).lower()
    if name in _NEVER_SHOWN:
        if closing:
            return max(hidden - 1, 0)
        return hidden + (not markup.endswith("/>"))
    if hidden or closing:
        return hidden
    if name == "br":
        line.newline()
    elif name == "img":
        alt = _ALT.search(markup)
        if alt is not None:
            line.words(html.unescape(next(g for g in alt.groups() if g is not None)))
    return hidden
