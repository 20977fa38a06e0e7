"""The PDF's own text (``pdfs/reading.py``): its own chunks are stretches of it, its pages are
known at every offset, and a sentence set without a space glyph after its full stop is cut
where the reader sees the gap."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from app.pdfs.chunking import chunk_index
from app.pdfs.extract import build_index
from app.pdfs.reading import reading_text
from app.pdfs.sample import write_sample_pdf
from app.selection.sentences import split_sentences
from tests.fixtures.caller_chunks import layout, write_minutes_pdf


def test_own_chunks_are_stretches_of_the_own_text_on_their_pages(tmp_path: Path) -> None:
    for pdf in (write_sample_pdf(tmp_path / "s.pdf"), write_minutes_pdf(tmp_path / "m.pdf")):
        index = build_index(pdf)
        own = reading_text(index)
        at = 0
        for chunk in chunk_index(index, target_chars=300, max_chars=500):
            at = own.text.index(chunk.text, at)
            assert own.pages_of(at, at + len(chunk.text)) == (chunk.page_start, chunk.page_end)
            at += 1


def test_a_page_offset_is_where_its_text_starts(tmp_path: Path) -> None:
    own = reading_text(build_index(write_minutes_pdf(tmp_path / "m.pdf")))
    pages = sorted({line.page for line in layout()})
    for page in pages:
        start = own.offset_of_page(page)
        assert own.page_at(start) == page
        assert start == 0 or own.page_at(start - 1) == page - 1
    assert own.offset_of_page(pages[-1] + 1) == len(own.text)


def test_a_full_stop_run_into_the_next_capital_is_cut_where_the_gap_is(tmp_path: Path) -> None:
    """Justified text set without a space glyph: "radio." and "The" drawn 1.5 pt apart. The
    index keeps the characters as printed; the own text has the space a reader sees."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    first = "Until then, consumer radio had been amplitude-modulated radio."
    font = pymupdf.Font("helv")
    page.insert_text((72, 100), first, fontname="helv", fontsize=11)
    x = 72 + font.text_length(first, fontsize=11) + 1.5
    page.insert_text(
        (x, 100), "The theorists said it could never work.", fontname="helv", fontsize=11
    )
    page.insert_text((72, 130), "Touching.Words stay one word.", fontname="helv", fontsize=11)
    doc.save(tmp_path / "unspaced.pdf")
    own = reading_text(build_index(tmp_path / "unspaced.pdf")).text
    assert "radio. The theorists" in own
    assert "Touching.Words" in own
    cut = [s.text for s in split_sentences(own)]
    assert first in cut


def test_a_footnote_mark_raised_in_a_line_is_read_with_it(tmp_path: Path) -> None:
    """A heading, then a line with a footnote mark raised inside it, drawn after the line (as
    the DMCA summary draws it: PyMuPDF reads it as a line of its own). Read as a row of two
    cells, the line made a table with the heading, and "TITLE II: ..." ran into the sentence
    under it."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    font = pymupdf.Font("helv")
    page.insert_text(
        (72, 100), "TITLE II: ONLINE LIABILITY LIMITATION", fontname="hebo", fontsize=13
    )
    before = "Title II of the Act adds a section 512 to the Copyright Act"
    x = 108 + font.text_length(before, fontsize=11)
    page.insert_text((108, 124), before, fontname="helv", fontsize=11)
    page.insert_text((x + 5, 124), "to create four new limits.", fontname="helv", fontsize=11)
    page.insert_text((x + 0.5, 119.5), "3", fontname="helv", fontsize=7)
    page.insert_text((108, 137.5), "They are based on four kinds of conduct.", fontsize=11)
    path = tmp_path / "mark.pdf"
    doc.save(path)
    own = reading_text(build_index(path)).text
    heading, paragraph = own.split("\n\n")
    assert heading == "TITLE II: ONLINE LIABILITY LIMITATION"
    assert "\n" not in paragraph, paragraph  # one paragraph, no table rows
    assert split_sentences(paragraph)[0].text.startswith("Title II of the Act adds a section")


def test_a_footnote_mark_after_a_full_stop_starts_no_sentence_of_its_own(tmp_path: Path) -> None:
    """ "... in fact copyrighted.⁴ That means ...": the raised mark set right after the full stop
    made one sentence of two, and a citation of the second lit both."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    font = pymupdf.Font("helv")
    first = "The average term of copyright was thirty years."
    page.insert_text((72, 100), first, fontname="helv", fontsize=11)
    x = 72 + font.text_length(first, fontsize=11)
    page.insert_text((x, 95.5), "4", fontname="helv", fontsize=7)
    x += font.text_length("4", fontsize=7)
    page.insert_text((x, 100), " That means the authors had a right.", fontname="helv", fontsize=11)
    path = tmp_path / "stop-mark.pdf"
    doc.save(path)
    own = reading_text(build_index(path)).text
    assert [s.text for s in split_sentences(own)] == [
        "The average term of copyright was thirty years.",
        "4 That means the authors had a right.",
    ], own


def test_a_footnote_mark_and_an_unspaced_stop_on_one_line_are_both_read(tmp_path: Path) -> None:
    """Both spaces a reader sees on one line: after a raised mark, and at a full stop set
    without a space glyph. The second is measured on the glyphs where it is printed."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    font = pymupdf.Font("helv")
    x = 72.0
    for text, size, y, gap in (
        ("Copyright lasted thirty years.", 11, 100, 0.0),
        ("4", 7, 95.5, 0.0),
        (" That was short.", 11, 100, 0.0),
        ("Then it grew longer.", 11, 100, 1.5),
    ):
        x += gap
        page.insert_text((x, y), text, fontname="helv", fontsize=size)
        x += font.text_length(text, fontsize=size)
    path = tmp_path / "both.pdf"
    doc.save(path)
    own = reading_text(build_index(path)).text
    assert [s.text for s in split_sentences(own)] == [
        "Copyright lasted thirty years.",
        "4 That was short.",
        "Then it grew longer.",
    ], own
