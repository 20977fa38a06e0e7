"""The text of a web or text source, as blocks: what the service stores, chunks, highlights and
shows. Pure (no I/O), deterministic from the bytes.

A document's text is its blocks' texts joined by a blank line ("\\n\\n"); a block (a paragraph, a
heading, a list item, a table row, a preformatted run) holds no blank line itself, so the text's
blank lines are exactly its block boundaries and its chunks (consecutive blocks) tile it.

- HTML: the text a browser shows (stdlib ``html.parser``): white space collapsed, ``<br>`` a line
  break, block elements block boundaries, table cells separated by a tab. Left out: what is never
  shown (script, style, template, head, ``hidden`` and ``display:none`` elements; aria-hidden
  ones are shown, only not read aloud) and page furniture
  (nav, aside, form, menus, buttons, and a header or footer outside the article or main part).
  Linear in the markup's length, however deep its nesting or broken its tags (a tag, comment or
  declaration that never ends shows nothing, to the end of the file, as in a browser).
- Markdown: ``markdown_text.py`` (a CommonMark parser; its HTML read by this module's reader).
- Plain text: its paragraphs (split at blank lines), each line as written without trailing blanks.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Literal

BlockKind = Literal["heading", "paragraph", "item", "quote", "code", "row"]
SEPARATOR = "\n\n"
# A longer paragraph is cut at a space into blocks of about this size, so that a chunk (one or
# more blocks) stays within what the chunk model accepts and a sentence splitter's memo holds.
MAX_BLOCK_CHARS = 8_000


@dataclass(frozen=True)
class Block:
    kind: BlockKind
    text: str
    level: int = 0  # a heading's 1-6


@dataclass(frozen=True)
class PlacedBlock:
    kind: BlockKind
    level: int
    start: int  # offsets into the document's text
    end: int


@dataclass(frozen=True)
class SourceDocument:
    text: str
    blocks: tuple[PlacedBlock, ...]
    title: str = ""


def assemble(blocks: list[Block], title: str = "") -> SourceDocument:
    """Blocks into the document's text and their offsets in it; empty blocks dropped, long ones
    cut, blank lines inside one made block boundaries."""
    placed: list[PlacedBlock] = []
    parts: list[str] = []
    offset = 0
    for block in blocks:
        for piece in _pieces(block.text):
            if parts:
                offset += len(SEPARATOR)
            parts.append(piece)
            placed.append(PlacedBlock(block.kind, block.level, offset, offset + len(piece)))
            offset += len(piece)
    return SourceDocument(SEPARATOR.join(parts), tuple(placed), title)


def _pieces(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.split("\n")]
    out: list[str] = []
    for para in re.split(r"\n(?:[ \t]*\n)+", "\n".join(lines).strip("\n")):
        if not para.strip():
            continue
        while len(para) > MAX_BLOCK_CHARS:
            cut = para.rfind(" ", 0, MAX_BLOCK_CHARS)
            cut = cut if cut > 0 else MAX_BLOCK_CHARS
            out.append(para[:cut].rstrip())
            para = para[cut:].lstrip()
        if para:
            out.append(para)
    return out


# --- HTML ---------------------------------------------------------------------------------

# Elements whose content a browser never shows (markdown_text.py reads inline HTML by it too).
NEVER_SHOWN = frozenset(
    "script style template noscript svg math iframe object embed canvas audio video "
    "map datalist".split()
)
_FURNITURE = frozenset("nav aside form menu button select textarea dialog".split())
_FURNITURE_ROLES = frozenset("navigation banner contentinfo search complementary menu".split())
_MAIN = frozenset({"article", "main"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCKS = frozenset(
    "p div section article main header footer li dt dd blockquote pre table tr td th caption "
    "figure figcaption ul ol dl address details summary fieldset legend hr body html center "
    "h1 h2 h3 h4 h5 h6".split()
)
_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
_SPACE = re.compile(r"[ \t\n\r\f]+")
_BREAK, _CELL = "\x1e", "\x1f"  # stand-ins while white space is collapsed
# Control characters a file may carry (a browser shows none of them), out before anything is
# read: the stand-ins above are control characters too.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


# The kind of block an element makes of the text inside it (the innermost such element decides).
_KINDS: dict[str, tuple[BlockKind, int]] = {
    **{tag: ("heading", level) for tag, level in _HEADINGS.items()},
    "pre": ("code", 0),
    "tr": ("row", 0),
    "table": ("row", 0),
    "li": ("item", 0),
    "dt": ("item", 0),
    "dd": ("item", 0),
    "blockquote": ("quote", 0),
}
_PARAGRAPH: tuple[BlockKind, int] = ("paragraph", 0)


class _Reader(HTMLParser):
    """The open elements are a stack with, per element, the block kind in force and a count
    per tag name, so each tag is read in constant time however deep the nesting: a file of
    100,000 unclosed ``<div>`` took minutes when the kind was looked up the stack each time."""

    def __init__(self, *, images_as_alt: bool = False) -> None:
        super().__init__(convert_charrefs=True)
        self.images_as_alt = images_as_alt
        self.blocks: list[Block] = []
        self.stack: list[str] = []
        self.kinds: list[tuple[BlockKind, int]] = []  # per open element, the kind in force
        self.open: Counter[str] = Counter()  # open elements per tag name
        self.skip_depth = 0  # > 0: inside something not shown
        self.pre_depth = 0
        self.buffer: list[str] = []
        self.has_text = False  # the buffer holds more than white space
        self.kind, self.level = _PARAGRAPH
        self.title: list[str] = []
        self.in_title = False

    def _skipped(self, tag: str, attrs: dict[str, str | None]) -> bool:
        if tag in NEVER_SHOWN or tag in _FURNITURE or "hidden" in attrs:
            return True
        if (attrs.get("role") or "").lower() in _FURNITURE_ROLES:
            return True
        style = (attrs.get("style") or "").replace(" ", "").lower()
        if "display:none" in style or "visibility:hidden" in style:
            return True
        return tag in {"header", "footer"} and not any(self.open[t] for t in _MAIN)

    def _current(self) -> tuple[BlockKind, int]:
        return self.kinds[-1] if self.kinds else _PARAGRAPH

    def _push(self, tag: str) -> None:
        self.stack.append(tag)
        self.kinds.append(_KINDS.get(tag) or self._current())
        self.open[tag] += 1

    def _pop(self) -> str:
        tag = self.stack.pop()
        self.kinds.pop()
        self.open[tag] -= 1
        return tag

    def close(self) -> None:
        # What the parser still holds once the whole markup is fed starts with a tag, comment or
        # declaration that never ends: a browser reads it to the end of the file and shows
        # nothing of it. The stdlib (3.11) would re-scan the rest from each later "<" (a file of
        # "<div " repeated: quadratic, minutes for 100 KB); dropping it shows the same text.
        held = self.rawdata
        if held.startswith("<") and held not in ("<", "</") and not self.cdata_elem:
            self.rawdata = ""
        super().close()

    def parse_marked_section(self, i: int, report: bool = True) -> int:
        # ``<![foo[ ... ]]>`` (not CDATA, not a conditional comment): the stdlib raises
        # AssertionError on it; a browser reads it as a comment up to the next ``>`` (to the
        # end without one) and shows nothing of it. The whole markup is fed at once.
        try:
            return super().parse_marked_section(i, report)
        except AssertionError:
            end = self.rawdata.find(">", i + 3)
            return end + 1 if end >= 0 else len(self.rawdata)

    def parse_html_declaration(self, i: int) -> int:
        # A DOCTYPE with an internal subset (``[ <!ENTITY ...> ]``) ends at the ``>`` after its
        # ``]``, not at its first ``>`` (the stdlib's end, which left ``]>`` as text).
        raw = self.rawdata
        if raw[i : i + 9].lower() == "<!doctype":
            first = raw.find(">", i)
            bracket = raw.find("[", i, first if first >= 0 else len(raw))
            if bracket >= 0:
                close = raw.find("]", bracket)
                end = raw.find(">", close) if close >= 0 else -1
                return end + 1 if end >= 0 else -1
        return super().parse_html_declaration(i)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            if not self.skip_depth:
                self._void(tag, attrs)
            return
        self._push(tag)
        if self.skip_depth or self._skipped(tag, dict(attrs)):
            self.skip_depth += 1
            return
        if tag == "title":
            self.in_title = True
        elif tag in ("td", "th"):
            if self.has_text:
                self.buffer.append(_CELL)
        elif tag in _BLOCKS:
            self.flush()
            self.pre_depth += tag == "pre"

    def _void(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "br":
            self.buffer.append(_BREAK)
        elif tag == "hr":
            self.flush()
        elif tag == "img" and self.images_as_alt:
            # A web page's image shows its alt text only when it fails to load; Markdown's
            # images are read as their alt text (``markdown_text.py``), <img> in it too.
            self.handle_data(dict(attrs).get("alt") or "")

    def handle_endtag(self, tag: str) -> None:
        if not self.open[tag]:
            return  # a stray end tag
        while self.stack:
            open_tag = self._pop()
            if self.skip_depth:
                self.skip_depth -= 1
            elif open_tag == "title":
                self.in_title = False
            elif open_tag in _BLOCKS and open_tag not in ("td", "th"):
                self.flush()
                self.pre_depth -= open_tag == "pre"
            if open_tag == tag:
                break
        if not self.skip_depth:
            self.kind, self.level = self._current()

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
            return
        if not self.skip_depth:
            self.buffer.append(data.replace(_BREAK, " ").replace(_CELL, " "))
            self.has_text = self.has_text or not data.isspace()

    def flush(self) -> None:
        raw = "".join(self.buffer)
        self.buffer = []
        self.has_text = False
        if self.pre_depth:
            text = raw.replace(_BREAK, "\n").replace(_CELL, "\t").strip("\n")
        else:
            # The source's line ends are white space; <br> is a line end, a cell a tab.
            lines = [_SPACE.sub(" ", line).strip() for line in raw.split(_BREAK)]
            text = "\n".join(re.sub(f" ?{_CELL} ?", "\t", line) for line in lines if line)
            text = text.strip("\t")
        if text.strip():
            self.blocks.append(Block(self.kind, text, self.level))
        self.kind, self.level = self._current()


def html_blocks(markup: str, *, images_as_alt: bool = False) -> tuple[list[Block], str]:
    """The blocks of text a browser shows of ``markup``, and its ``<title>``'s text.
    ``images_as_alt``: an image is its alt text (for Markdown's HTML)."""
    reader = _Reader(images_as_alt=images_as_alt)
    reader.feed(without_controls(markup))
    reader.close()
    reader.flush()
    return reader.blocks, _SPACE.sub(" ", "".join(reader.title)).strip()


def html_to_text(markup: str) -> SourceDocument:
    blocks, title = html_blocks(markup)
    return assemble(blocks, title)


def without_controls(text: str) -> str:
    """``text`` without the control characters a browser never shows (read before anything
    else: the reader's stand-ins are control characters too)."""
    return _CONTROLS.sub("", text)


# --- plain text ---------------------------------------------------------------------------


def plain_to_text(source: str) -> SourceDocument:
    source = without_controls(source)
    text = source.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    return assemble([Block("paragraph", text)])
