"""A small PDF drawn with PyMuPDF exercising the PDF quirks the locator must handle."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from app.alignment.index import DocumentIndex
from app.pdfs.extract import build_index

PAGE_1_LINES = [
    "Alignment engines must survive real documents with care-",
    "fully hyphenated words and sentences that cross lines.",
    "Quarterly revenue grew by seven percent while costs fell.",
]
LIGATURE_HTML = (
    "<p>The \ufb01nal \ufb02ight of the \ufb01eld trip left from the of\ufb01ce at noon.</p>"
)
PAGE_BREAK_BEFORE = "This sentence begins near the bottom of the first page and"
PAGE_BREAK_AFTER = "continues at the top of the second page without a pause."
REPEATED = "Meeting adjourned at nine in the evening by the chair."


def _write_lines(page: pymupdf.Page, top: float, lines: list[str]) -> None:
    for number, line in enumerate(lines):
        page.insert_text((72, top + 16 * number), line, fontsize=11)


def make_sample_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    page1 = doc.new_page()
    _write_lines(page1, 100, PAGE_1_LINES)
    page1.insert_htmlbox(pymupdf.Rect(72, 200, 400, 260), LIGATURE_HTML)
    _write_lines(page1, 760, [PAGE_BREAK_BEFORE])
    page2 = doc.new_page()
    _write_lines(page2, 60, [PAGE_BREAK_AFTER, REPEATED])
    page3 = doc.new_page()
    page3.draw_rect(pymupdf.Rect(100, 100, 300, 300), color=(0, 0, 0))  # graphics, no text
    page4 = doc.new_page()
    _write_lines(page4, 80, ["Unrelated words open the last page.", REPEATED])
    doc.save(path)
    doc.close()
    return path


@pytest.fixture(scope="session")
def sample_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sample_pdf(tmp_path_factory.mktemp("pdf") / "sample.pdf")


@pytest.fixture(scope="session")
def sample_index(sample_pdf: Path) -> DocumentIndex:
    return build_index(sample_pdf)
