"""Split chunk text into sentences with character offsets, where a reader cuts them. Pure; lazy
and linear.

Latin-script text ends a sentence at "." "!" "?" "…" followed by white space, as pySBD's golden
rules decide (``app.selection.sentence_ends``: abbreviations, initials, initialisms, quotes and
brackets closing after the terminator, ellipses, a lower-case word after it); Chinese and
Japanese at the full-width terminators, which need no space, unless the terminator stands inside
brackets that close later on the line ("《摔跤吧！爸爸》") or a quotation's end runs on into its
particle (「…。」と). A list's items start sentences (``app.selection.enumerations``), and so does
a bullet after white space: PDF text joins a list's items on one line ("... of 77%; • Same-store
net revenues ..."), and an item is what a reader, or a model, picks.

Blank lines end a sentence, except between the lines of one: chunkers that keep every printed
line a paragraph (pdfminer, PyMuPDF4LLM) write a sentence's lines with blank lines between them,
so a blank line after a line that stops mid-sentence (on a word, a comma or a hyphen) before a
line that goes on in lower case is a printed line's end, as is one inside CJK text that stops
mid-sentence (unless the line before is a title or a row of column headings: ``_cjk_heading``);
a single line break inside CJK text after such a title or heading row is a cut too: a table's
title and headings are not its first row's sentence. A table's rows are sentences of their own
(``app.selection.rows``), and very long runs without punctuation that read as lists (lines that
start in capitals or in CJK text, as pulled out of a PDF) are cut at line breaks, so a model can
pick a row; a long sentence wrapped over many lines (a 10-K's, a statute's) is not.
"""

from __future__ import annotations

import heapq
import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from app.core.scripts import CJK_RANGES, CJK_TEXT
from app.selection.enumerations import BULLETS, items
from app.selection.rows import split_rows
from app.selection.sentence_ends import CLOSERS, latin_ends

_CJK_TERMINATORS = "。！？"
_CJK_END = re.compile(r"[" + _CJK_TERMINATORS + r"]+[" + re.escape(CLOSERS) + r"]*+")
# CJK brackets: a terminator inside a pair that closes later on its line ends no sentence.
_CJK_OPEN, _CJK_CLOSE = "《「『（【〈〔", "》」』）】〉〕"
_CJK_BRACKET_REACH = 120
# A quotation that ends with its sentence and runs on into the particle that quotes it:
# 「行きます。」と言った ("...," he said).
_QUOTE_PARTICLES = "とっ"
_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*+\n\s*")
# A line break inside CJK text: one at an ideograph on both sides is a candidate cut (only after
# a title or a heading row, ``_cjk_heading``). Blank lines are _BLANK_LINE's.
_CJK_LINE_BREAK = re.compile(f"(?<=[{CJK_RANGES}])[ \t\r\f\v]*+\n(?=[ \t]*+[{CJK_RANGES}])")
# Bullets as PDFs carry them; not "-" or "*", which are as often a minus, a dash or a footnote
# mark.
_BULLET = re.compile(f"(?<=\\s)[{BULLETS}]")
# A CJK line that ends on these has not ended its sentence; one that starts on these goes on.
_CJK_WRAP_END = re.compile(f"[{CJK_RANGES}\uff0c\u3001]")
# A printed line that wraps is about as wide as the next one (or wider: a paragraph's last line);
# a line this much narrower than the next is a title or a heading above a wider block.
HEADING_WIDTH = 0.8
# Column headings set letter-spaced ("修 正 條 文 現 行 條 文 說 明") or as short words ("項目
# 金額 說明"): at least three cells of one or two ideographs or kana, and nothing else on the
# line. Not hangul: Korean puts spaces between words, and short words make such a line.
_HEADING_CELL = "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{1,2}"
_HEADING_ROW = re.compile(
    f"[ \t\u3000]*+(?:{_HEADING_CELL}[ \t\u3000]++){{2,}}{_HEADING_CELL}[ \t\u3000]*+"
)
LONG_SEGMENT = 400
# A piece where this share of the line breaks or more go on mid-sentence (``_goes_on``) is a
# sentence wrapped over lines, not a list.
WRAPPED_SHARE = 1 / 3
# A blank line between the lines of one sentence (pdfminer, PyMuPDF4LLM): the line before stops
# mid-sentence, the line after goes on in lower case (or the one before stops on a hyphen or a
# comma, which nothing ends on).
_MID_SENTENCE_END = re.compile(r"[\w,\-\u00ad)%]")
_ENUMERATOR = re.compile(r"\(?(?:\d{1,3}|[A-Za-z]|[ivxlcIVXLC]{1,5})[.)]")


@dataclass(frozen=True)
class Sentence:
    index: int  # 1-based, the id the model sees
    start: int  # offsets into the chunk text; text == chunk[start:end]
    end: int
    text: str


def _line_around(text: str, start: int, end: int) -> tuple[str, str]:
    """The line that ends at ``start`` and the one that starts at ``end``. Each costs its own
    length, and a line is read at most as the one after one break and before the next."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    return text[line_start:start], text[end : len(text) if line_end < 0 else line_end]


def _cjk_heading(before: str, after: str) -> bool:
    """Is the break between CJK lines ``before`` and ``after`` the end of a title or a row of
    column headings, not a printed line's wrap? A heading row, on either side, is a row of
    cells; a line much narrower than the one after it stopped early (a wrapped line runs to the
    column's edge), so it is a title over a wider block: a table's first row, a paragraph."""
    if _HEADING_ROW.fullmatch(before) or _HEADING_ROW.fullmatch(after):
        return True
    return _width(before) < HEADING_WIDTH * _width(after)


def _width(line: str) -> int:
    """A line's printed width in half-width cells: CJK characters and full-width forms take
    two, so a full line holding figures or Latin words is not taken for a wider one."""
    line = line.strip()
    return len(line) + len(CJK_TEXT.findall(line))


def _cjk_wrap(text: str, blank: re.Match[str]) -> bool:
    """A blank line between CJK text that stops mid-sentence (on a character or a comma) and
    goes on: a printed line's end, as chunkers that keep every line a paragraph store it, not
    a paragraph's. Cut there, a sentence loses its words' halves ("資遣" | "費"). A comma is
    mid-clause whatever the lines' widths; an ideograph ends a title or a heading row when
    ``_cjk_heading`` says so."""
    before = text[blank.start() - 1] if blank.start() else ""
    after = text[blank.end()] if blank.end() < len(text) else ""
    if not (before and after and _CJK_WRAP_END.match(before) and CJK_TEXT.match(after)):
        return False
    if before in "\uff0c\u3001":
        return True
    return not _cjk_heading(*_line_around(text, blank.start(), blank.end()))


def _cjk_line_cuts(text: str) -> Iterator[int]:
    """Single line breaks inside CJK text before or after a heading row. Chunkers join a CJK
    paragraph's printed lines with nothing or with a line break, and a table's rows with a
    line break: a heading row is a block of its own. A narrow line before a single break is
    not enough (unlike before a blank line): hard-wrapped text and lines that wrap around a
    figure break early mid-sentence ("今日は天気が良いので" / "公園に行って…")."""
    for match in _CJK_LINE_BREAK.finditer(text):
        before, after = _line_around(text, match.start(), match.end())
        if _HEADING_ROW.fullmatch(before) or _HEADING_ROW.fullmatch(after):
            yield match.start()


def _latin_wrap(text: str, blank: re.Match[str]) -> bool:
    """A blank line between the Latin lines of one sentence: the line before stops on a word,
    a comma or a hyphen, and the line after goes on in lower case (a word, not a list's item);
    or the line before stops on a comma or a hyphen, which no sentence ends on."""
    at = blank.start()
    while at and text[at - 1] in " \t\r\f\v":
        at -= 1
    before = text[at - 1] if at else ""
    after = text[blank.end()] if blank.end() < len(text) else ""
    if not (before and after and _MID_SENTENCE_END.match(before)):
        return False
    return after.islower() or (before in ",-\u00ad" and after.isalpha())


def _cjk_ends(text: str) -> Iterator[int]:
    """CJK terminators that end a sentence: not inside brackets that close later on the line
    ("《摔跤吧！爸爸》好吗？"), nor a quotation's end before its particle (「…。」と)."""
    for match in _CJK_END.finditer(text):
        end = match.end()
        closed = match.group()[-1] in CLOSERS
        if closed and end < len(text) and text[end] in _QUOTE_PARTICLES:
            continue
        if not closed and _inside_cjk_brackets(text, match.start(), end):
            continue
        yield end


def _inside_cjk_brackets(text: str, start: int, end: int) -> bool:
    """Is ``text[start:end]`` inside a CJK bracket pair on its line, both within reach? Reads
    at most ``_CJK_BRACKET_REACH`` characters each way: linear whatever the text."""
    depth = 0
    for at in range(start - 1, max(-1, start - 1 - _CJK_BRACKET_REACH), -1):
        char = text[at]
        if char == "\n":
            return False
        if char in _CJK_CLOSE:
            depth += 1
        elif char in _CJK_OPEN:
            if depth == 0:
                closer = _CJK_CLOSE[_CJK_OPEN.index(char)]
                found = text.find(closer, end, end + _CJK_BRACKET_REACH)
                return found >= 0 and "\n" not in text[end:found]
            depth -= 1
    return False


def _boundaries(text: str) -> Iterator[int]:
    """The cuts in increasing order, each once. Lazy: each kind's matches are found left to right
    and merged, so a caller that stops after the first sentences reads the text only up to each
    kind's next match (a kind with none left scans to the end once: one regex pass)."""
    # One scan of the list items for two readers: the cuts before items, and the full stops
    # that are an item's number (tee buffers only what one has read and the other not yet).
    item_cuts, item_numbers = itertools.tee(items(text))
    kinds = (
        latin_ends(text, item_numbers),
        _cjk_ends(text),
        (
            m.start()
            for m in _BLANK_LINE.finditer(text)
            if not _cjk_wrap(text, m) and not _latin_wrap(text, m)
        ),
        _cjk_line_cuts(text),
        (m.start() for m in _BULLET.finditer(text)),
        (item.cut for item in item_cuts),
    )
    previous = 0
    for cut in heapq.merge(*kinds):
        if cut >= len(text):
            return
        if cut > previous:
            yield cut
            previous = cut


def _split_long(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """A long piece that reads as a list cut at its line breaks (each piece at least 40
    characters); one that reads as a sentence wrapped over lines (a third of its breaks or more
    go on in lower case, or after a hyphen or a comma) left whole."""
    if end - start <= LONG_SEGMENT:
        return [(start, end)]
    breaks = wrapped = 0
    at = text.find("\n", start, end)
    while at >= 0:
        breaks += 1
        wrapped += _goes_on(text, at, end)
        at = text.find("\n", at + 1, end)
    if not breaks or wrapped >= WRAPPED_SHARE * breaks:
        return [(start, end)]
    pieces: list[tuple[int, int]] = []
    piece_start = start
    at = text.find("\n", start, end)
    while at >= 0:
        if at - piece_start >= 40:
            pieces.append((piece_start, at))
            piece_start = at + 1
        at = text.find("\n", at + 1, end)
    pieces.append((piece_start, end))
    return pieces


def _goes_on(text: str, at: int, end: int) -> bool:
    """Does the line after the break at ``at`` go on with the line before's sentence: it starts
    in lower case, or the line before stops on a hyphen or a comma?"""
    if at and text[at - 1] in ",-\u00ad":
        return True
    after = at + 1
    while after < end and text[after] in " \t":
        after += 1
    return after < end and text[after].islower()


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def split_sentences(text: str, limit: int | None = None) -> list[Sentence]:
    """Sentences in order; each one's offsets index the original ``text`` exactly. With
    ``limit`` (>= 0), the first ``limit`` of them, the same as the full split's, found without
    reading the text past them (a 100k-character chunk capped at 200 sentences costs its first
    pages)."""
    sentences: list[Sentence] = []
    if limit is not None and limit <= 0:
        return sentences
    for raw_start, raw_end in join_enumerators(text, _pieces(text)):
        start, end = _trim(text, raw_start, raw_end)
        if any(ch.isalnum() for ch in text[start:end]):
            sentences.append(Sentence(len(sentences) + 1, start, end, text[start:end]))
            if len(sentences) == limit:
                break
    return sentences


def _pieces(text: str) -> Iterator[tuple[int, int]]:
    """The pieces between cuts, each cut into its table rows and long runs' lines, in order."""
    previous = 0
    for cut in itertools.chain(_boundaries(text), (len(text),)):
        for row_start, row_end in split_rows(text, previous, cut):
            yield from _split_long(text, row_start, row_end)
        previous = cut


def join_enumerators(text: str, spans: Iterable[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """A piece that is only a list item's number or letter ("5.", "(b)", "iv.") belongs to the
    item after it: the dot after it looks like a sentence's end, and on its own it is nothing a
    reader would pick, or the locator could place. Lazy, as ``spans`` may be."""
    carry: int | None = None
    for start, end in spans:
        if carry is not None:
            start, carry = carry, None
        if _ENUMERATOR.fullmatch(text, *_trim(text, start, end)):
            carry = start
            continue
        yield start, end
    if carry is not None:
        yield carry, len(text)
