"""The batch's locating step passes each chunk's text, so repeated sentences are placed."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from app.highlights.locating import LocateJob, locate_chunks
from app.pdfs.index_cache import IndexCache
from app.pdfs.storage import PdfStorage, sha256_of_file
from app.selection.sentences import split_sentences

REPEATED = "All figures are unaudited and stated in millions of dollars."
FIRST = "Hotel revenue grew strongly in the spring quarter this year. " + REPEATED
SECOND = "Casino revenue in the autumn fell short of the forecast again. " + REPEATED


def repeated_pdf(root: Path) -> Path:
    """``root/report.pdf``: a sentence a line, 40 pt apart from y=100; REPEATED on lines 2, 4."""
    doc = pymupdf.open()
    page = doc.new_page()
    for number, line in enumerate([*split_sentences(FIRST), *split_sentences(SECOND)]):
        page.insert_text((72, 100 + 40 * number), line.text, fontsize=10)
    path = root / "report.pdf"
    doc.save(path)
    doc.close()
    return path


def _job(path: Path, chunk_text: str, with_text: bool) -> LocateJob:
    sentences = [s for s in split_sentences(chunk_text) if s.text == REPEATED]
    return LocateJob(
        chunk_id="c1",
        document_id="d1",
        source_path=path.name,
        sha256=sha256_of_file(path),
        pages=(1, 1),
        sentences=sentences,
        chunk_text=chunk_text if with_text else "",
    )


def test_repeated_sentence_placed_by_its_chunk(tmp_path: Path) -> None:
    path = repeated_pdf(tmp_path)
    storage, cache = PdfStorage(tmp_path), IndexCache()
    for chunk_text, baseline in ((FIRST, 140), (SECOND, 220)):
        location = locate_chunks(storage, cache, [_job(path, chunk_text, True)])["c1"]
        assert location.unlocated == 0
        (highlight,) = location.highlights
        assert highlight.text == REPEATED
        (rect,) = highlight.rects
        assert rect.y0 < baseline < rect.y1


def test_without_chunk_text_the_repeat_is_not_guessed(tmp_path: Path) -> None:
    path = repeated_pdf(tmp_path)
    location = locate_chunks(PdfStorage(tmp_path), IndexCache(), [_job(path, FIRST, False)])
    assert location["c1"].unlocated == 1
    assert location["c1"].highlights == []
