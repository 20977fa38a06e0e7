"""Split a PDF into page-aware chunks, the way an upstream RAG ingestion would. Blocking (PyMuPDF).

The chunks are built from the locator's own index (``build_index``), so what a chunk says is
what the locator can find. Each page's line pieces (``layout.segments``: lines cut at column
gutters and between table cells) are read in the PDF's drawing order, unless that order
interleaves columns, as forms and instructions drawn row by row across the page do; such a page
is read column by column (``chains.column_order``), as the locator's second reading does.
Repeated page furniture is left out, and what stands clear of the body in the page's top or
bottom band is read first or last (``page_text``); parts of one printed line that PyMuPDF made
two lines of (a run-in heading in another font) are read as one line.

Pieces make paragraphs by geometry: a new paragraph where the vertical gap is more than about a
line, the column or the type size changes, the indent changes after a paragraph's first line, or
a row holds several pieces (a table row stays one row). Lines of a paragraph are joined with a
space, CJK lines with nothing; paragraphs with a blank line, unless one stops mid-sentence and
the next goes on in lower case (a sentence broken by a column or page end), or, at a page break,
a page's last line runs to the column's edge within a CJK sentence and the next page goes on in
CJK text (joined with nothing). Paragraphs are
packed into chunks of roughly ``target_chars``; a chunk may run across a page break and records
both pages.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from app.alignment.chains import chains, column_order
from app.alignment.index import DocumentIndex
from app.alignment.layout import Segment, segments
from app.alignment.text import clean_extracted
from app.core.scripts import CJK_PUNCTUATION, CJK_RANGES, is_cjk
from app.pdfs.ocr import OcrPage
from app.pdfs.page_text import (
    PROSE_WIDTH,
    bands,
    full_line,
    furniture_ranges,
    joined_lines,
    rows,
    side_furniture,
    without_furniture,
)
from app.selection.sentences import split_sentences

_SPACES = re.compile(r"\s+")
# A gap (bottom to top) between a paragraph's first two lines wider than this share of a line
# height ends it: body text leads by 0.1-0.7 of a line (CJK text is often set double-spaced),
# and a blank line between a heading or a one-line paragraph and the next makes 0.8-1.0 of the
# (ascent-to-descent) line boxes ...
PARAGRAPH_GAP = 0.75
# ... but CJK text is often set double-spaced: a printed line wrapping between two ideographs
# leads by up to a whole line box (the Traditional Chinese bill).
PARAGRAPH_GAP_CJK = 1.0
# ... and after them, a line pitch (top to top) this much wider than the paragraph's own.
PITCH_GROWTH = 1.25
# Type size (line height) changing by more than this share starts a paragraph (a heading).
SIZE_CHANGE = 0.2
# A left edge moving by more than this many line heights is an indent or another column.
INDENT = 0.8
# A page whose pieces follow their column successor this rarely in drawing order is drawn row
# by row across its columns (a column page drawn in order follows it nearly always).
MIN_IN_ORDER = 0.6
# Table rows further apart than this many line heights (top to top) are separate paragraphs.
TABLE_PITCH = 2.5
# A cell's wrapped line lies less than this many line heights under it (top to top; the next
# row lies further), and its first word would need more room than this many line heights of
# padding leave before the next cell.
CELL_PITCH = 1.3
CELL_PADDING = 1.5
# A sentence mark run into the next word's capital, and the gap (share of the line's height)
# between them that a space would have left: glyphs of one word touch or overlap.
_UNSPACED = re.compile(r"[a-z)\]][.!?;:][A-Z]")
UNSPACED_GAP = 0.08
# A footnote mark set right after a sentence's full stop ("copy- righted.4 That means"): the
# text gets a space before it when its glyphs are this much smaller than the full stop's line.
_MARK_AFTER_STOP = re.compile(r"[a-z)\]\u201d\u2019\"'][.!?]\d{1,3}(?=\s+[A-Z\u201c\"])")
MARK_SIZE = 0.8
_SENTENCE_END = ".!?:;\u3002\uff01\uff1f\"'\u201d)"
_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")
# A CJK paragraph ending on these has not ended its sentence (as selection.sentences reads it).
_CJK_GOES_ON = re.compile(f"[{CJK_RANGES}\uff0c\u3001]")


@dataclass(frozen=True)
class ChunkDraft:
    ordinal: int
    text: str
    page_start: int
    page_end: int


@dataclass(frozen=True)
class _Paragraph:
    pitch: float | None  # top to top of its last two lines (None while it has one line)
    right: float  # its right edge so far


@dataclass(frozen=True)
class Block:
    page: int
    text: str
    full: bool = False  # its last line runs to its column's right edge (a page's last only)


def _cjk_edge(char: str) -> bool:
    # Not Hangul: Korean puts spaces between words and wraps lines at them.
    return (is_cjk(char) and not _HANGUL.match(char)) or bool(CJK_PUNCTUATION.match(char))


def _line_joiner(previous: str, following: str) -> str:
    # Chinese and Japanese wrap lines anywhere without a space: "資遣" + "費" is one word.
    return "" if _cjk_edge(previous[-1]) and _cjk_edge(following[0]) else " "


def _in_drawing_order(pieces: list[Segment]) -> bool:
    """Whether the drawing order reads each column down (not row by row across columns).

    Only lines of prose count: a table drawn row by row puts its figures between the lines of
    its label column too, and is read right that way."""
    prose = [piece for piece in pieces if piece.width >= PROSE_WIDTH * piece.height]
    position = {id(piece): at for at, piece in enumerate(prose)}
    steps = [
        position[id(below)] - position[id(above)]
        for chain in chains(prose)
        for above, below in zip(chain, chain[1:], strict=False)
    ]
    if len(steps) < 4:
        return True
    return sum(step == 1 for step in steps) >= MIN_IN_ORDER * len(steps)


def _wrapped_cells(index: DocumentIndex, rows: list[list[Segment]]) -> list[list[list[Segment]]]:
    """Rows as lists of cells (each cell its lines). A table drawn line by line across its rows
    puts a cell's wrapped second line after the other cells of the first: a row whose pieces
    each sit right under a cell of the table row before, with a first word that would not have
    fitted before that cell's neighbour, holds those cells' next lines."""
    found: list[list[list[Segment]]] = []
    for row in rows:
        table = found[-1] if found and len(found[-1]) > 1 else None
        targets = [_wrapped_in(index, table, piece) for piece in row] if table else []
        if table and all(at is not None for at in targets) and len(set(targets)) == len(row):
            for at, piece in zip(targets, row, strict=True):
                table[at or 0].append(piece)
        else:
            found.append([[piece] for piece in row])
    return found


def _wrapped_in(index: DocumentIndex, table: list[list[Segment]], piece: Segment) -> int | None:
    """The cell of ``table`` whose next line ``piece`` is, if any."""
    for at, cell in enumerate(table):
        last = cell[-1]
        height = last.height
        room = table[at + 1][0].x0 - last.x1 if at + 1 < len(table) else 0.0
        if (
            0 < piece.y0 - last.y0 < CELL_PITCH * height
            and abs(piece.x0 - cell[0].x0) < INDENT * height
            and 0 < room < _first_word_width(index, piece) + CELL_PADDING * height
            # A line running on under the next cell is no line of this one: a run-in heading
            # ("Categories and Subject Descriptors" D.3.4 [Programming Lan-) and its text's
            # next line ("guages]: Processors ...") read in that order.
            and piece.x1 <= table[at + 1][0].x0
        ):
            return at
    return None


def _first_word_width(index: DocumentIndex, piece: Segment) -> float:
    """Width of the piece's first word (its first character, in CJK text, which wraps
    anywhere)."""
    end = piece.start
    while end < piece.end and not index.chars[end].isspace() and not is_cjk(index.chars[end]):
        end += 1
    end = max(end, piece.start + 1)
    return index.boxes[4 * (end - 1) + 2] - piece.x0


def _starts_paragraph(
    index: DocumentIndex, previous: list[Segment], row: list[Segment], state: _Paragraph
) -> bool:
    """Whether ``row`` starts a paragraph after ``previous``, the last row of ``state``."""
    if len(previous) > 1 or len(row) > 1:
        return True  # a table row, or several pieces side by side
    above, piece = previous[0], row[0]
    height = max(above.height, piece.height)
    pitch = state.pitch
    right = max(state.right, piece.x1)
    if right - above.x1 > _first_word_width(index, piece) + 0.5 * height:
        return True  # the next word would have fit: the line was ended on purpose
    if piece.y0 < above.y0:
        return True  # back up: another column
    cjk = _cjk_edge(index.chars[above.end - 1]) and _cjk_edge(index.chars[piece.start])
    if (
        pitch is None
        and piece.y0 - above.y1 > (PARAGRAPH_GAP_CJK if cjk else PARAGRAPH_GAP) * height
    ):
        return True
    if pitch is not None and piece.y0 - above.y0 > PITCH_GROWTH * pitch:
        return True
    if abs(piece.height - above.height) > SIZE_CHANGE * height:
        return True
    if min(above.x1, piece.x1) <= max(above.x0, piece.x0):
        return True  # no horizontal overlap: another column or region
    # A paragraph's first line may be indented or hang (a bullet); after it the edge holds.
    return pitch is not None and abs(piece.x0 - above.x0) > INDENT * height


def _text(index: DocumentIndex, piece: Segment) -> str:
    chars = index.chars[piece.start : piece.end]
    # Where a reader sees a space the PDF has no glyph for. Found on the index's own characters
    # (offsets into ``chars`` are offsets into the index), then inserted at once.
    cuts: list[int] = []
    # A raised footnote mark after a full stop belongs to neither sentence; read as "righted.4
    # That", the two were one sentence and a citation of the second lit both.
    for match in _MARK_AFTER_STOP.finditer(chars):
        stop = piece.start + match.start() + 1
        if 0 < _glyph_height(index, stop + 1) < MARK_SIZE * _glyph_height(index, stop - 1):
            cuts.append(match.start() + 2)
    # Justified text set without a space glyph after a full stop ("(AM) radio.The theorists"):
    # the gap is there on the page, so a reader sees two sentences; the text gets its space.
    for match in _UNSPACED.finditer(chars):
        at = piece.start + match.start() + 2  # the capital after the mark
        gap = index.boxes[4 * at] - index.boxes[4 * (at - 1) + 2]
        if gap > UNSPACED_GAP * _glyph_height(index, at):
            cuts.append(match.start() + 2)
    for cut in sorted(cuts, reverse=True):
        chars = f"{chars[:cut]} {chars[cut:]}"
    return _SPACES.sub(" ", clean_extracted(chars)).strip()


def _glyph_height(index: DocumentIndex, at: int) -> float:
    return index.boxes[4 * at + 3] - index.boxes[4 * at + 1]


def _next_table_row(previous: list[Segment], row: list[Segment]) -> bool:
    """Whether ``row`` is the next row of the table ``previous`` is a row of. A table stays one
    paragraph, a row a line of it: the sentence splitter cuts a long run of rows at lines, so a
    highlight can take a few rows, as evidence quoted from a table does."""
    if len(previous) == 1 and len(row) == 1:
        return False
    height = max(piece.height for piece in (*previous, *row))
    return 0 < row[0].y0 - max(piece.y0 for piece in previous) < TABLE_PITCH * height


def _cell_text(index: DocumentIndex, lines: list[Segment]) -> str:
    text = ""
    for line in lines:
        part = _text(index, line)
        if part:
            text = f"{text}{_line_joiner(text, part)}{part}" if text else part
    return text


def _page_paragraphs(
    index: DocumentIndex,
    page: int,
    pieces: list[Segment],
    furniture: list[tuple[int, int]],
    side: list[tuple[int, int]],
) -> tuple[list[str], bool]:
    """The page's paragraphs from its line ``pieces``, and whether its last line runs to its
    column's right edge. ``furniture``: ranges left out where they stand clear of the body in
    the top or bottom band; ``side``: those left out wherever they are."""
    pieces = without_furniture(pieces, side)
    if not _in_drawing_order(pieces):
        pieces = column_order(pieces)
    first, body, last = bands(pieces, index.text_frame_size(page)[1])
    pieces = [
        *without_furniture(first, furniture),
        *body,
        *without_furniture(last, furniture),
    ]
    pieces = joined_lines(index, pieces)
    paragraphs: list[str] = []
    previous: list[Segment] | None = None
    state = _Paragraph(None, 0.0)
    for cells in _wrapped_cells(index, list(rows(pieces))):
        text = " ".join(t for t in (_cell_text(index, cell) for cell in cells) if t)
        if not text:
            continue
        row = [cell[-1] for cell in cells]
        if previous is not None and _next_table_row(previous, row):
            paragraphs[-1] += "\n" + text
            state = _Paragraph(None, row[-1].x1)
        elif previous is None or _starts_paragraph(index, previous, row, state):
            paragraphs.append(text)
            state = _Paragraph(None, row[-1].x1)
        else:
            paragraphs[-1] += _line_joiner(paragraphs[-1], text) + text
            state = _Paragraph(row[0].y0 - previous[0].y0, max(state.right, row[-1].x1))
        previous = row
    return paragraphs, previous is not None and len(previous) == 1 and full_line(
        pieces, previous[0]
    )


def _pieces(block: Block, max_chars: int) -> list[Block]:
    """A paragraph longer than a chunk is cut between sentences."""
    if len(block.text) <= max_chars:
        return [block]
    pieces: list[Block] = []
    current = ""
    for sentence in split_sentences(block.text):
        if current and len(current) + len(sentence.text) + 1 > max_chars:
            pieces.append(Block(block.page, current))
            current = ""
        current = f"{current} {sentence.text}".strip()
    if current:
        pieces.append(Block(block.page, current, block.full))
    return pieces


def joiner(previous: Block, following: Block) -> str:
    # A paragraph that stops mid-sentence and one that goes on in lower case are one sentence
    # broken by a column or page end; anything else is a new paragraph.
    before, after = previous.text[-1], following.text[0]
    if before not in _SENTENCE_END and after.islower():
        return " "
    # Chinese and Japanese have no lower case: a page that ends within a sentence (on an
    # ideograph or a comma) and a next page that goes on in CJK text are one sentence, which
    # wraps without a space. Only at a page break: on a page, geometry has parted them.
    if (
        following.page > previous.page
        and previous.full
        and _CJK_GOES_ON.match(before)
        and _cjk_edge(after)
    ):
        return ""
    return "\n\n"


def reading_blocks(index: DocumentIndex, max_chars: int = 1600) -> list[Block]:
    """The document's paragraphs in reading order, each with its page (a paragraph longer than
    ``max_chars`` in pieces cut between sentences): what its own text and its chunks are made
    of. Pages without text give none."""
    pages = [
        segments(index.chars, index.boxes, index.lines, lo, hi)
        for lo, hi in zip(index.char_page_start, index.char_page_start[1:], strict=False)
    ]
    furniture, side = furniture_ranges(index), sorted(side_furniture(index, pages))
    blocks: list[Block] = []
    for page, pieces in enumerate(pages, start=1):
        paragraphs, runs_on = _page_paragraphs(index, page, pieces, furniture, side)
        for at, paragraph in enumerate(paragraphs, start=1):
            block = Block(page, paragraph, runs_on and at == len(paragraphs))
            blocks.extend(_pieces(block, max_chars))
    return blocks


def chunk_index(
    index: DocumentIndex, target_chars: int = 1000, max_chars: int = 1600
) -> list[ChunkDraft]:
    """The chunks of an indexed PDF, in reading order. Pages without text produce none. Each
    chunk's text is a stretch of the document's own text (``pdfs/reading.py``), which joins
    the same blocks the same way."""
    chunks: list[ChunkDraft] = []
    parts: list[Block] = []

    def flush() -> None:
        if parts:
            text = parts[0].text
            for previous, part in zip(parts, parts[1:], strict=False):
                text += joiner(previous, part) + part.text
            chunks.append(ChunkDraft(len(chunks), text, parts[0].page, parts[-1].page))
            parts.clear()

    full = False  # the parts reached target_chars: the next paragraph starts a chunk ...
    for piece in reading_blocks(index, max_chars):
        size = sum(len(p.text) + 2 for p in parts)
        # ... unless it goes on with the sentence the parts end in: a chunk never ends
        # mid-sentence where max_chars leaves room.
        goes_on = bool(parts) and joiner(parts[-1], piece) != "\n\n"
        if parts and (size + len(piece.text) > max_chars or (full and not goes_on)):
            flush()
            size = 0
        parts.append(piece)
        full = size + len(piece.text) >= target_chars
    flush()
    return chunks


def chunk_pdf(
    pdf: Path | bytes,
    target_chars: int = 1000,
    max_chars: int = 1600,
    ocr_pages: Mapping[int, OcrPage] | None = None,
) -> tuple[list[ChunkDraft], int]:
    """Return the chunks and the page count. ``ocr_pages``: scanned pages read by OCR, which
    replace those pages' text layers (``build_index``)."""
    from app.pdfs.extract import build_index  # PyMuPDF: preloaded in the PDF workers

    index = build_index(pdf, ocr_pages=ocr_pages)
    return chunk_index(index, target_chars, max_chars), index.page_count
