"""A caller's chunks placed in their PDF when they are stored (``PUT /v2/documents/{id}``).

The chat system's chunks carry its own extractor's text and, maybe, its own idea of pages
(1-based, 0-based, none). Each is found in the PDF's own text (``pdfs/reading.py``) by
``alignment/chunk_place.py``; the text decides its pages and its span, and its sentences are
later cut from that span of the PDF's own text, not from the caller's. The given pages are a
hint: a constant offset between them and the pages found (0-based pages) is found once for the
document and corrects the chunks that could not be placed too.

Blocking: the index is opened (built in the PDF workers when it is not cached) and read here.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from app.alignment.chunk_place import Placement, place
from app.alignment.grams import GramTable
from app.alignment.text import Normalized, normalize, normalize_text
from app.core.errors import AppError
from app.pdfs.index_cache import IndexCache
from app.pdfs.indexing import open_index
from app.pdfs.reading import ReadingText, reading_text
from app.pdfs.storage import PdfStorage
from app.selection.sentences import split_sentences

log = logging.getLogger(__name__)

# An HTML line break in a Markdown table cell: "<br>", "<br/>", "<br />".
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)

# What joins the own text's blocks (pdfs/chunking.joiner): at most this many characters.
JOINERS = "\n\n"
# A chunk this long found verbatim just after the previous one is placed there without a search.
VERBATIM_MIN = 200
VERBATIM_AHEAD = 4096
# Chunks with pages whose first placements decide the document's page offset.
OFFSET_SAMPLE = 64
# The offset holds when this share of them agree on it.
OFFSET_AGREE = 0.6
# A chunk not found and sent without pages takes its neighbours' pages when they are at most
# this many pages apart.
NEIGHBOUR_PAGES = 2


class PlacementStatus(StrEnum):
    placed = "placed"  # found whole (FOUND of its text, in order)
    partial = "partial"  # part of it found; its span is that part
    not_found = "not_found"  # not in its PDF's text: its citations say so
    unchecked = "unchecked"  # the PDF's text could not be read when it was stored


@dataclass(frozen=True)
class GivenChunk:
    text: str
    page_start: int | None
    page_end: int | None


@dataclass(frozen=True)
class ChunkPlace:
    status: PlacementStatus
    share: float | None
    start: int | None  # span in the document's text
    end: int | None
    page_start: int
    page_end: int
    # What a batch cuts the chunk's sentences from: the PDF's own text of its span, then the
    # caller's sentences it does not hold (None: the caller's text).
    offered: str | None = None


@dataclass(frozen=True)
class Placed:
    """The chunks' places, the document's text they are placed in (None: unchecked), the
    offset found between the given pages and the text's (-1: the pages were 0-based), and why
    nothing was checked."""

    text: str | None
    chunks: list[ChunkPlace]
    page_offset: int | None = None
    unchecked: str | None = None


def place_in_pdf(
    storage: PdfStorage,
    cache: IndexCache,
    source_path: str,
    sha256: str,
    page_count: int,
    chunks: Sequence[GivenChunk],
) -> Placed:
    """Blocking: the index is waited for (built in the PDF workers, scanned pages read by OCR).
    A PDF whose index cannot be had (too complex, no text) leaves its chunks unchecked, with
    their given pages: they are stored, and answered from their own text as before."""
    try:
        # Waited for, as ingest waits (a scan's OCR too): a placement that depended on how
        # busy the machine was would store a chunk unchecked for good.
        index = open_index(storage, cache, source_path, sha256)
    except AppError as exc:
        if exc.status_code < 500:
            return _unchecked(chunks, page_count, exc.message)
        raise
    reading = reading_text(index)
    if not reading.text.strip():
        return _unchecked(chunks, page_count, "its pages have no text layer")
    return place_in_text(reading, chunks, page_count)


def place_in_text(reading: ReadingText, chunks: Sequence[GivenChunk], page_count: int) -> Placed:
    chunks = [_without_breaks(chunk) for chunk in chunks]
    skeleton = normalize(reading.text)
    table = GramTable(skeleton.text)
    offset = _page_offset(reading, skeleton, table, chunks)
    out: list[ChunkPlace] = []
    cursor, end = 0, 0
    for chunk in chunks:
        found = _verbatim_after(reading.text, chunk.text, cursor, end)
        if found is None:
            near = _near(reading, skeleton, chunk, offset or 0)
            if near is None and end:
                # No pages: a splitter's chunks come in reading order, so among stretches
                # that explain about as much of it (a table's figures repeated on later
                # pages), the one from where the chunk before starts on wins.
                lo = bisect_left(skeleton.origin, cursor - 1)
                near = (lo, bisect_left(skeleton.origin, end) + len(chunk.text))
            found = place(skeleton, table, chunk.text, reading.text, near)
        if found is not None:
            cursor, end = found.start + 1, found.end
        out.append(_place_of(reading, found, chunk, offset, page_count))
    return Placed(reading.text, _between_neighbours(out, chunks), offset)


def _between_neighbours(places: list[ChunkPlace], chunks: Sequence[GivenChunk]) -> list[ChunkPlace]:
    """A chunk not found and sent without pages lies between its neighbours in the caller's
    order (a splitter's chunks come in reading order): from the page the chunk before ends on
    to the page the next begins on, when those are placed in order and close (a few pages).
    Its sentences are then looked for there, not in the whole PDF, where a row of figures
    ("(11.8) (4.1) (9.7)") is found nowhere for sure."""
    # The nearest placed chunk after each position, found in one pass from the end.
    after: list[ChunkPlace | None] = [None] * len(places)
    nearest: ChunkPlace | None = None
    for k in range(len(places) - 1, -1, -1):
        after[k] = nearest
        if places[k].start is not None:
            nearest = places[k]
    out = list(places)
    before: ChunkPlace | None = None
    for k, (here, chunk) in enumerate(zip(places, chunks, strict=True)):
        following = after[k]
        if (
            here.status is PlacementStatus.not_found
            and chunk.page_start is None
            and before is not None
            and following is not None
            and before.page_end <= following.page_start <= before.page_end + NEIGHBOUR_PAGES
        ):
            out[k] = replace(here, page_start=before.page_end, page_end=following.page_start)
        if here.start is not None:
            before = here
    return out


def _without_breaks(chunk: GivenChunk) -> GivenChunk:
    """HTML line breaks as spaces: PyMuPDF4LLM writes a table cell's wrapped lines with "<br>"
    between them, whose letters are no words of the page ("清<br>算"), so its sentences were
    offered beside the PDF's own and, chosen, could not be found on the page."""
    if "<" not in chunk.text:
        return chunk
    return replace(chunk, text=_BREAK.sub(" ", chunk.text))


def _verbatim_after(text: str, chunk: str, cursor: int, end: int) -> Placement | None:
    """The service's own chunks are stretches of the text, in order, each right after the one
    before (past its joiner: a blank line, a space or nothing): found there verbatim, they need
    no search, whatever their length (a short table row printed on every page is placed on its
    own page). A long chunk found verbatim a little further on is taken too."""
    for at in range(end, min(end + len(JOINERS), len(text)) + 1):
        if text.startswith(chunk, at):
            return Placement(at, at + len(chunk), 1.0)
    if len(chunk) < VERBATIM_MIN:
        return None
    at = text.find(chunk, cursor, cursor + len(chunk) + VERBATIM_AHEAD)
    return Placement(at, at + len(chunk), 1.0) if at >= 0 else None


def _page_offset(
    reading: ReadingText, skeleton: Normalized, table: GramTable, chunks: Sequence[GivenChunk]
) -> int | None:
    """The given pages minus the pages the text is on, when most placed chunks agree on it."""
    differences: Counter[int] = Counter()
    sampled = 0
    for chunk in chunks:
        if chunk.page_start is None or sampled >= OFFSET_SAMPLE:
            continue
        sampled += 1
        found = place(skeleton, table, chunk.text, reading.text)
        if found is not None and found.found:
            differences[chunk.page_start - reading.page_at(found.start)] += 1
    if not differences:
        return None
    offset, count = differences.most_common(1)[0]
    return offset if count >= OFFSET_AGREE * sum(differences.values()) else None


def _near(
    reading: ReadingText, skeleton: Normalized, chunk: GivenChunk, offset: int
) -> tuple[int, int] | None:
    """The skeleton range of the chunk's given pages (corrected by ``offset``)."""
    if chunk.page_start is None or chunk.page_end is None:
        return None
    lo = reading.offset_of_page(chunk.page_start - offset)
    hi = reading.offset_of_page(chunk.page_end - offset + 1)
    return bisect_left(skeleton.origin, lo), bisect_left(skeleton.origin, hi)


def _place_of(
    reading: ReadingText,
    found: Placement | None,
    chunk: GivenChunk,
    offset: int | None,
    page_count: int,
) -> ChunkPlace:
    if found is None:
        start, end = _given_pages(chunk, offset, page_count)
        # Nothing to look for (no letters or digits), or pages without text where the caller
        # says it is (a scan not read by OCR): unchecked, answered from its own text and pages.
        if not normalize_text(chunk.text) or (
            chunk.page_start is not None
            and reading.offset_of_page(start) == reading.offset_of_page(end + 1)
        ):
            return ChunkPlace(PlacementStatus.unchecked, None, None, None, start, end)
        return ChunkPlace(PlacementStatus.not_found, 0.0, None, None, start, end)
    first, last = reading.pages_of(found.start, found.end)
    status = PlacementStatus.placed if found.found else PlacementStatus.partial
    offered, rest = _offered(reading.text[found.start : found.end], chunk.text)
    if rest and chunk.page_start is not None:
        # Its sentences the span does not hold may be on the pages given (corrected).
        given = _given_pages(chunk, offset, page_count)
        first, last = min(first, given[0]), max(last, given[1])
    return ChunkPlace(status, found.share, found.start, found.end, first, last, offered)


def _offered(span: str, text: str) -> tuple[str, bool]:
    """The span's text, then the caller's sentences that it does not hold (text its own
    reading leaves out or reads otherwise: a table cell, a caption, a line with a running
    header inside it), each after a blank line; and whether there were any."""
    held = normalize_text(span)
    rest = [
        sentence.text
        for sentence in split_sentences(text)
        if (skeleton := normalize_text(sentence.text)) and skeleton not in held
    ]
    return ("\n\n".join([span, *rest]), True) if rest else (span, False)


def _given_pages(chunk: GivenChunk, offset: int | None, page_count: int) -> tuple[int, int]:
    """The pages the caller gave, corrected by the document's offset, within the PDF; the
    whole PDF when it gave none."""
    if chunk.page_start is None or chunk.page_end is None:
        return 1, page_count
    shift = offset or 0

    def clamp(page: int) -> int:
        return min(max(1, page - shift), page_count)

    return clamp(chunk.page_start), clamp(chunk.page_end)


def _unchecked(chunks: Sequence[GivenChunk], page_count: int, why: str) -> Placed:
    log.info("chunks stored without placing them: %s", why)
    # 0-based pages cannot be told apart without the text: page 0 is read as page 1.
    places = [
        ChunkPlace(PlacementStatus.unchecked, None, None, None, *_given_pages(c, 0, page_count))
        for c in chunks
    ]
    return Placed(None, places, None, why)
