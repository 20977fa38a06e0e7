"""Split a PDF into page-aware chunks, the way an upstream RAG ingestion would. Blocking (PyMuPDF).

Text blocks are taken in the PDF's own order, lines of a block joined with spaces, and packed into
chunks of roughly ``target_chars``; a chunk may run across a page break and records both pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from app.alignment.index import PageTooDense
from app.alignment.pdf import open_pdf
from app.alignment.text import clean_extracted
from app.selection.sentences import split_sentences

_SPACES = re.compile(r"[ \t\r\f\v]+")


@dataclass(frozen=True)
class ChunkDraft:
    ordinal: int
    text: str
    page_start: int
    page_end: int


@dataclass(frozen=True)
class _Block:
    page: int
    text: str


def _blocks(pdf: Path | bytes) -> tuple[list[_Block], int]:
    blocks: list[_Block] = []
    with open_pdf(pdf) as doc:
        for page in doc:
            page_blocks = page.get_text("blocks")
            # The index would refuse such a page too.
            PageTooDense.check(page.number + 1, sum(len(block[4]) for block in page_blocks))
            for block in page_blocks:
                if block[6] != 0:  # image block
                    continue
                text = clean_extracted(str(block[4])).replace("\n", " ")
                text = _SPACES.sub(" ", text).strip()
                if text:
                    blocks.append(_Block(page.number + 1, text))
        return blocks, doc.page_count


def _pieces(block: _Block, max_chars: int) -> list[_Block]:
    """A block longer than a chunk is cut between sentences."""
    if len(block.text) <= max_chars:
        return [block]
    pieces: list[_Block] = []
    current = ""
    for sentence in split_sentences(block.text):
        if current and len(current) + len(sentence.text) + 1 > max_chars:
            pieces.append(_Block(block.page, current))
            current = ""
        current = f"{current} {sentence.text}".strip()
    if current:
        pieces.append(_Block(block.page, current))
    return pieces


def _joiner(previous: str, following: str) -> str:
    # A block that stops mid-sentence and a block that goes on in lower case are one sentence
    # broken by a column or page end; anything else is a new paragraph.
    if previous[-1] not in ".!?:;\u3002\uff01\uff1f\"'\u201d)" and following[0].islower():
        return " "
    return "\n\n"


def chunk_pdf(
    pdf: Path | bytes, target_chars: int = 1000, max_chars: int = 1600
) -> tuple[list[ChunkDraft], int]:
    """Return the chunks and the page count. Pages without a text layer produce no chunks."""
    blocks, page_count = _blocks(pdf)
    chunks: list[ChunkDraft] = []
    parts: list[_Block] = []

    def flush() -> None:
        if parts:
            text = parts[0].text
            for previous, part in zip(parts, parts[1:], strict=False):
                text += _joiner(previous.text, part.text) + part.text
            chunks.append(ChunkDraft(len(chunks), text, parts[0].page, parts[-1].page))
            parts.clear()

    for block in blocks:
        for piece in _pieces(block, max_chars):
            size = sum(len(p.text) + 2 for p in parts)
            if parts and size + len(piece.text) > max_chars:
                flush()
            parts.append(piece)
            if size + len(piece.text) >= target_chars:
                flush()
    flush()
    return chunks, page_count
