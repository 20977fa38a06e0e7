"""A caller's chunks placed in a PDF's own text (``documents/placing.py``), on a text made by
hand: a chunk not in its PDF, sent without pages, lies between its neighbours in the caller's
order (with pages, those are kept); HTML line breaks of a Markdown table cell are no words."""

from __future__ import annotations

from app.documents.placing import GivenChunk, PlacementStatus, place_in_text
from app.pdfs.reading import ReadingText

PAGES = [
    "The harbour board met on Tuesday and approved the survey of the north quay piles.",
    "Divers reported that the timber fenders of the east berth had rotted below the tide line.",
    "The finance officer said the mooring fees would rise by four per cent in April.",
    "Members asked for a consultation on the slipway before the storm season began.",
    "The chair closed the meeting after the fishing fleet's fuel tanker was discussed.",
]
FOREIGN = "(11.8) (4.1) (9.7) 15,541 13,070 4.97 2,630.7"


def reading(pages: list[str]) -> ReadingText:
    starts, at = [], 0
    for text in pages:
        starts.append(at)
        at += len(text) + 2
    return ReadingText("\n\n".join(pages), tuple(starts), tuple(range(1, len(pages) + 1)))


def test_a_chunk_not_found_without_pages_lies_between_its_neighbours() -> None:
    chunks = [GivenChunk(PAGES[1], None, None), GivenChunk(FOREIGN, None, None)]
    chunks.append(GivenChunk(PAGES[3], None, None))
    placed = place_in_text(reading(PAGES), chunks, len(PAGES)).chunks
    assert [p.status for p in placed] == [
        PlacementStatus.placed,
        PlacementStatus.not_found,
        PlacementStatus.placed,
    ]
    assert (placed[1].page_start, placed[1].page_end) == (2, 4)


def test_neighbours_far_apart_or_pages_given_leave_the_pages_as_they_were() -> None:
    far = [GivenChunk(PAGES[0], None, None), GivenChunk(FOREIGN, None, None)]
    far.append(GivenChunk(PAGES[4], None, None))
    placed = place_in_text(reading(PAGES), far, len(PAGES)).chunks
    assert (placed[1].page_start, placed[1].page_end) == (1, 5)  # the whole PDF
    given = [GivenChunk(PAGES[1], 2, 2), GivenChunk(FOREIGN, 5, 5), GivenChunk(PAGES[3], 4, 4)]
    placed = place_in_text(reading(PAGES), given, len(PAGES)).chunks
    assert (placed[1].page_start, placed[1].page_end) == (5, 5)
    # No neighbour placed before it: the whole PDF.
    alone = [GivenChunk(FOREIGN, None, None), GivenChunk(PAGES[3], None, None)]
    placed = place_in_text(reading(PAGES), alone, len(PAGES)).chunks
    assert (placed[0].page_start, placed[0].page_end) == (1, 5)


def test_html_line_breaks_of_a_table_cell_are_no_words_of_the_page() -> None:
    """PyMuPDF4LLM writes a cell's wrapped lines with "<br>" between them: its letters made the
    caller's sentences differ from the page's, so they were offered beside the PDF's own and,
    chosen, could not be found on the page."""
    cell = "|" + PAGES[2].replace(" the ", " the<br>").replace(" rise ", " rise<br/>") + "|"
    (placed,) = place_in_text(reading(PAGES), [GivenChunk(cell, 3, 3)], len(PAGES)).chunks
    assert placed.status is PlacementStatus.placed
    assert placed.offered == PAGES[2]


def test_without_pages_a_passage_printed_twice_is_placed_after_the_chunk_before() -> None:
    """A table's row printed on two pages, sent without pages in a window that overlaps the
    chunk before (pdfminer's sentence windows): placed where that chunk runs into it, not on
    the first page that prints it (a splitter's chunks come in order)."""
    row = "Segment sales 15,541 13,070 4.97 2,630.7 (11.8) (4.1) (9.7) operational growth."
    pages = [PAGES[0], PAGES[1], row, PAGES[2], PAGES[3], row, PAGES[4]]
    text = reading(pages)
    for before, page in ((1, 3), (4, 6)):
        window = f"{pages[before]}\n\n{row[:30]}"
        chunks = [GivenChunk(window, None, None), GivenChunk(row, None, None)]
        placed = place_in_text(text, chunks, len(pages)).chunks
        assert (placed[1].status, placed[1].page_start) == (PlacementStatus.placed, page)
