"""A PDF's own text: what a reader reads, in order, and where each stretch of it is printed.

Its paragraphs in reading order (``chunking.reading_blocks``: columns read down, line-end
hyphens joined, repeated page furniture left out), joined as the service's own chunks join them,
so each of its own chunks is a stretch of it. A caller's chunks are placed in it at ``PUT``
(``documents/placing.py``), their sentences are cut from it, and it is the text that selectors
index and ``GET /v2/documents/{id}/text`` serves.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from app.alignment.index import DocumentIndex
from app.pdfs.chunking import joiner, reading_blocks

# Paragraphs are separated by a blank line (as the service's own chunks separate them).
PARAGRAPH = "\n\n"


@dataclass(frozen=True)
class ReadingText:
    text: str
    # Each block's first offset in ``text`` and its page, in order.
    starts: tuple[int, ...]
    pages: tuple[int, ...]

    def page_at(self, offset: int) -> int:
        """The page the character at ``offset`` is printed on (1 when there is no text)."""
        if not self.starts:
            return 1
        return self.pages[max(0, bisect_right(self.starts, offset) - 1)]

    def pages_of(self, start: int, end: int) -> tuple[int, int]:
        return self.page_at(start), self.page_at(max(start, end - 1))

    def offset_of_page(self, page: int) -> int:
        """The first offset printed on ``page`` or after it (the text's length past the last)."""
        at = bisect_right(self.pages, page - 1)
        return self.starts[at] if at < len(self.starts) else len(self.text)


def reading_text(index: DocumentIndex) -> ReadingText:
    """Blocking (the index's layout is read again): a few hundred ms for a 300-page book."""
    blocks = reading_blocks(index)
    parts: list[str] = []
    starts: list[int] = []
    at = 0
    for k, block in enumerate(blocks):
        if k:
            gap = joiner(blocks[k - 1], block)
            parts.append(gap)
            at += len(gap)
        starts.append(at)
        parts.append(block.text)
        at += len(block.text)
    return ReadingText("".join(parts), tuple(starts), tuple(b.page for b in blocks))
