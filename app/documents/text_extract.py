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
- Markdown: rendered to text by a rule set (CommonMark's common cases): headings, list items,
  block quotes, code fences and table rows become blocks without their markers; emphasis, code
  spans, links (their text), images (their alt text), HTML tags and escapes are taken out of the
  words.
- Plain text: its paragraphs (split at blank lines), each line as written without trailing blanks.
"""

from __future__ import annotations

import html
import re
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

_NEVER_SHOWN = frozenset(
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
# read: the stand-ins above and _inline's placeholders are control characters too.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[Block] = []
        self.stack: list[str] = []
        self.skip_depth = 0  # > 0: inside something not shown
        self.pre_depth = 0
        self.buffer: list[str] = []
        self.kind: BlockKind = "paragraph"
        self.level = 0
        self.title: list[str] = []
        self.in_title = False

    def _skipped(self, tag: str, attrs: dict[str, str | None]) -> bool:
        if tag in _NEVER_SHOWN or tag in _FURNITURE or "hidden" in attrs:
            return True
        if (attrs.get("role") or "").lower() in _FURNITURE_ROLES:
            return True
        style = (attrs.get("style") or "").replace(" ", "").lower()
        if "display:none" in style or "visibility:hidden" in style:
            return True
        return tag in {"header", "footer"} and not _MAIN & set(self.stack)

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
            if not self.skip_depth and tag == "br":
                self.buffer.append(_BREAK)
            elif not self.skip_depth and tag == "hr":
                self.flush()
            return  # an image's alt text is not shown unless the image fails to load
        self.stack.append(tag)
        if self.skip_depth or self._skipped(tag, dict(attrs)):
            self.skip_depth += 1
            return
        if tag == "title":
            self.in_title = True
        elif tag in ("td", "th"):
            if "".join(self.buffer).strip():
                self.buffer.append(_CELL)
        elif tag in _BLOCKS:
            self.flush()
            self.kind, self.level = _kind_of(self.stack)
            self.pre_depth += tag == "pre"

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.stack:
            return  # a stray end tag
        while self.stack:
            open_tag = self.stack.pop()
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
            self.kind, self.level = _kind_of(self.stack)

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
            return
        if not self.skip_depth:
            self.buffer.append(data.replace(_BREAK, " ").replace(_CELL, " "))

    def flush(self) -> None:
        raw = "".join(self.buffer)
        self.buffer = []
        if self.pre_depth:
            text = raw.replace(_BREAK, "\n").replace(_CELL, "\t").strip("\n")
        else:
            # The source's line ends are white space; <br> is a line end, a cell a tab.
            lines = [_SPACE.sub(" ", line).strip() for line in raw.split(_BREAK)]
            text = "\n".join(re.sub(f" ?{_CELL} ?", "\t", line) for line in lines if line)
            text = text.strip("\t")
        if text.strip():
            self.blocks.append(Block(self.kind, text, self.level))
        self.kind, self.level = _kind_of(self.stack)


def _kind_of(stack: list[str]) -> tuple[BlockKind, int]:
    """The kind of block the innermost block-deciding element makes."""
    for tag in reversed(stack):
        if tag in _HEADINGS:
            return "heading", _HEADINGS[tag]
        if tag == "pre":
            return "code", 0
        if tag in ("tr", "table"):
            return "row", 0
        if tag in ("li", "dt", "dd"):
            return "item", 0
        if tag == "blockquote":
            return "quote", 0
    return "paragraph", 0


def html_to_text(markup: str) -> SourceDocument:
    markup = _CONTROLS.sub("", markup)
    reader = _Reader()
    reader.feed(markup)
    reader.close()
    reader.flush()
    return assemble(reader.blocks, _SPACE.sub(" ", "".join(reader.title)).strip())


# --- Markdown -----------------------------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_ITEM = re.compile(r"^([ \t]*)(?:[-*+]|\d{1,9}[.)])(?:[ \t]+\[[ xX]\])?(?:[ \t]+|$)")
_QUOTE = re.compile(r"^ {0,3}> ?")
_REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*\S+")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")

_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\](?:\([^)]*\)|\[[^\]]*\])")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]+)>")
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_EMPHASIS = re.compile(r"(?<![\w*])([*_])(?=\S)(.+?)(?<=\S)\1(?![\w*])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_HARD_BREAK = re.compile(r"(?: {2,}|\\)$")


def _inline(text: str) -> str:
    """Markdown's inline markup out of a block's text: the words a reader sees."""
    codes: list[str] = []

    def keep_code(match: re.Match[str]) -> str:
        codes.append(match.group(2).strip() or match.group(2))
        return f"\x00{len(codes) - 1}\x00"

    text = _CODE_SPAN.sub(keep_code, text)
    text = text.replace("\\\\", "\x01")
    escaped: list[str] = []

    def keep_escape(match: re.Match[str]) -> str:
        escaped.append(match.group(1))
        return f"\x02{len(escaped) - 1}\x02"

    text = _ESCAPE.sub(keep_escape, text)
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _TAG.sub("", text)
    for _ in range(3):  # nested emphasis: ***a***, **a _b_ c**
        text = _STRONG.sub(r"\2", text)
        text = _STRIKE.sub(r"\1", text)
        text = _EMPHASIS.sub(r"\2", text)
    # Entities are read outside code spans and escapes only: `&amp;` and \&amp; stay literal.
    text = html.unescape(text)
    text = re.sub("\x02(\\d+)\x02", lambda m: escaped[int(m.group(1))], text)
    text = re.sub("\x00(\\d+)\x00", lambda m: codes[int(m.group(1))], text)
    return text.replace("\x01", "\\")


def _paragraph(lines: list[str]) -> str:
    """A paragraph's lines: soft breaks are spaces, a hard break (two spaces, a backslash) a
    line break. Its inline markup is read over the whole paragraph: a link or emphasis may
    span a line end."""
    pieces = [
        _HARD_BREAK.sub("", line).strip() + (_BREAK if _HARD_BREAK.search(line) else " ")
        for line in lines
    ]
    words = _SPACE.sub(" ", _inline("".join(pieces)))
    return "\n".join(line.strip() for line in words.split(_BREAK)).strip()


def _at(lines: list[str], i: int) -> str:
    return lines[i] if i < len(lines) else ""


def markdown_to_text(source: str) -> SourceDocument:
    source = _CONTROLS.sub("", source)
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    blocks: list[Block] = []
    para: list[str] = []
    para_kind: BlockKind = "paragraph"
    title = ""
    in_table = False

    def end_para() -> None:
        nonlocal para, para_kind
        if para:
            blocks.append(Block(para_kind, _paragraph(para)))
        para, para_kind = [], "paragraph"

    i = 0
    while i < len(lines):
        line = lines[i].expandtabs(4)
        fence = _FENCE.match(line)
        if fence:
            end_para()
            marker = fence.group(1)
            code: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith(marker):
                code.append(lines[i])
                i += 1
            blocks.append(Block("code", "\n".join(code)))
            i += 1
            continue
        if not line.strip() or _REF_DEF.match(line):
            end_para()
        elif _ATX.match(line):
            end_para()
            heading = _ATX.match(line)
            assert heading is not None
            level, text = len(heading.group(1)), _paragraph([heading.group(2) or ""])
            blocks.append(Block("heading", text, level))
            title = title or text
        elif para and para_kind == "paragraph" and _SETEXT.match(line):
            text, para = _paragraph(para), []
            level = 1 if line.strip().startswith("=") else 2
            blocks.append(Block("heading", text, level))
            title = title or (text if level == 1 else "")
        elif _RULE.match(line):
            end_para()
        elif _QUOTE.match(line):
            if para_kind != "quote":
                end_para()
            para_kind = "quote"
            para.append(_QUOTE.sub("", line))
        elif _ITEM.match(line):
            end_para()
            para_kind = "item"
            para.append(_ITEM.sub("", line, count=1))
        elif "|" in line and (in_table or _TABLE_RULE.match(_at(lines, i + 1))):
            end_para()
            # An escaped bar is the cell's text (its _inline drops the backslash).
            row = re.sub(r"^\|", "", re.sub(r"(?<!\\)\|$", "", line.strip()))
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)]
            blocks.append(Block("row", "\t".join(_inline(c) for c in cells)))
            in_table = True
            if _TABLE_RULE.match(_at(lines, i + 1)):
                i += 1
            i += 1
            continue
        else:
            para.append(line)
        in_table = False
        i += 1
    end_para()
    return assemble([b for b in blocks if b.text], title)


# --- plain text ---------------------------------------------------------------------------


def plain_to_text(source: str) -> SourceDocument:
    source = _CONTROLS.sub("", source)
    text = source.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    return assemble([Block("paragraph", text)])
