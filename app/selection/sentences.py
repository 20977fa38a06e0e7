"""Split chunk text into sentences with character offsets. Pure; no I/O.

English and French use "." "!" "?" "…" followed by white space; Chinese and Japanese use the
full-width terminators, which need no space. Abbreviations ("Mr.", "M.", "No.") and numbers
("10.5") do not end a sentence. Blank lines do (but one inside CJK text that stops mid-sentence
is a printed line's end, not a paragraph's, unless the line before is a title or a row of column
headings: ``_cjk_heading``), and so does a single line break inside CJK text after such a title
or heading row: a table's title and headings are not its first row's sentence. A bullet glyph
after white space ends one too: PDF text joins a list's items on one line ("... of 77%; •
Same-store net revenues ..."), and an item is what a reader, or a model, picks. A table's rows
are sentences of their own (``app.selection.rows``), and very long runs without punctuation that
are not tables (lists pulled out of a PDF) are cut at line breaks, so a model can pick a row.
"""

from __future__ import annotations

import heapq
import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from app.core.scripts import CJK_RANGES, CJK_TEXT
from app.selection.rows import split_rows

# Lower-cased, without the dot. Parliamentary and legal text is full of these.
ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr prof st sr jr hon rt sen rep gov gen col capt lt sgt messrs mme mlle mm me
    no nos art arts sec secs ss para paras cl fig figs p pp vol vols ch chap ed eds
    e.g i.e etc vs v cf al approx dept est inc ltd co corp bros jan feb mar apr jun jul aug
    sep sept oct nov dec cap ord reg s.a n.b op cit ibid id u.s u.k u.n
    """.split()
)

_CJK_TERMINATORS = "。！？"
_CLOSERS = "\"'”’»)]}」』）】"
# French sets a (narrow) space before the closing guillemet: « oui. »
# Linear on any input: a match never starts inside a run of terminators (the run's first
# character was tried already, with the same outcome), and the possessive "++" and "*+" never give
# back what they took, which could not help (a terminator is not white space, », or a closer).
# Without both, 20k dots followed by a letter took 15 s.
_LATIN_END = re.compile(
    r"(?<![.!?…])[.!?…]++(?:[ \u00a0\u202f]*+»)?[" + re.escape(_CLOSERS) + r"]*+(?=\s|$)"
)
_CJK_END = re.compile(r"[" + _CJK_TERMINATORS + r"]+[" + re.escape(_CLOSERS) + r"]*")
_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*+\n\s*")
# A line break inside CJK text: one at an ideograph on both sides is a candidate cut (only after
# a title or a heading row, ``_cjk_heading``). Blank lines are _BLANK_LINE's.
_CJK_LINE_BREAK = re.compile(f"(?<=[{CJK_RANGES}])[ \t\r\f\v]*+\n(?=[ \t]*+[{CJK_RANGES}])")
# Bullets as PDFs carry them, Word's private-use Symbol-font glyphs (U+F0B7, U+F0A7) included;
# not "-" or "*", which are as often a minus, a dash or a footnote mark.
_BULLET = re.compile(r"(?<=\s)[\u2022\u25cf\u25e6\u25aa\u2023\u2043\u2219\u25a0\uf0b7\uf0a7]")
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
_WORD_CHAR = re.compile(r"[\w.]")
LONG_SEGMENT = 400
_ENUMERATOR = re.compile(r"\(?(?:\d{1,3}|[A-Za-z]|[ivxlcIVXLC]{1,5})[.)]")


@dataclass(frozen=True)
class Sentence:
    index: int  # 1-based, the id the model sees
    start: int  # offsets into the chunk text; text == chunk[start:end]
    end: int
    text: str


def _word_before(text: str, dot: int) -> str:
    """The run of word characters and dots that ends at ``dot`` (or at a newline just before it,
    as ``re.search(r"[\\w.]+$", text[:dot])`` would find it), read backwards from ``dot``: a
    regex searched from the chunk's start cost the whole chunk at every period."""
    end = dot - 1 if dot and text[dot - 1] == "\n" else dot
    start = end
    while start and _WORD_CHAR.match(text, start - 1):
        start -= 1
    return text[start:end]


def _is_abbreviation(text: str, dot: int) -> bool:
    # Costs the length of the word before the dot: the words of two sentence ends never overlap
    # (white space follows each end), so a chunk's checks read each character at most once.
    word = _word_before(text, dot).lower().strip(".")
    if not word:
        return False
    if word in ABBREVIATIONS:
        return True
    # A single capital letter is an initial ("J. Smith", "M. Dupont"), not an ending.
    return len(word) == 1 and text[dot - 1].isupper()


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


def _latin_ends(text: str) -> Iterator[int]:
    for match in _LATIN_END.finditer(text):
        first = match.start()
        if (
            text[first] == "."
            and match.group().rstrip(_CLOSERS + " \u00a0\u202f") == "."
            and _is_abbreviation(text, first)
        ):
            continue
        yield match.end()


def _boundaries(text: str) -> Iterator[int]:
    """The cuts in increasing order, each once. Lazy: each kind's matches are found left to right
    and merged, so a caller that stops after the first sentences reads the text only up to each
    kind's next match (a kind with none left scans to the end once: one regex pass)."""
    kinds = (
        _latin_ends(text),
        (m.end() for m in _CJK_END.finditer(text)),
        (m.start() for m in _BLANK_LINE.finditer(text) if not _cjk_wrap(text, m)),
        _cjk_line_cuts(text),
        (m.start() for m in _BULLET.finditer(text)),
    )
    previous = 0
    for cut in heapq.merge(*kinds):
        if cut >= len(text):
            return
        if cut > previous:
            yield cut
            previous = cut


def _split_long(text: str, start: int, end: int) -> list[tuple[int, int]]:
    if end - start <= LONG_SEGMENT or "\n" not in text[start:end]:
        return [(start, end)]
    pieces: list[tuple[int, int]] = []
    piece_start = start
    for pos in range(start, end):
        if text[pos] == "\n" and pos - piece_start >= 40:
            pieces.append((piece_start, pos))
            piece_start = pos + 1
    pieces.append((piece_start, end))
    return pieces


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
