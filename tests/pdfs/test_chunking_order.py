"""Chunks follow reading order (issue: multi-column pages drawn row by row, CJK lines), built
from the locator's index, so every chunk sentence can be found again."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from app.alignment.locate import locate
from app.pdfs.chunking import chunk_index, chunk_pdf
from app.pdfs.extract import build_index
from app.selection.sentences import split_sentences

WORDS = (
    "amount basis benefit business child claim credit deduction dependent election employer "
    "estimate exclusion expense filing foreign income interest payment penalty pension property "
    "refund rental report resident return schedule section spouse statement taxable wages"
).split()


def _sentences(seed: int, count: int) -> list[str]:
    out = []
    for n in range(count):
        words = [WORDS[(seed * 7 + n * 5 + i * 3) % len(WORDS)] for i in range(14)]
        out.append(" ".join([f"Rule{seed}x{n}", *words]) + ".")
    return out


def _wrap(text: str, width: float, size: float) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        trial = f"{line} {word}".strip()
        if line and pymupdf.get_text_length(trial, fontsize=size) > width:
            lines.append(line)
            line = word
        else:
            line = trial
    return [*lines, line]


def _two_columns_by_rows(path: Path) -> list[str]:
    """Two columns of two paragraphs each, drawn row by row across the page (as many forms
    are); returns the sentences in reading order."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    columns = [(54.0, _sentences(1, 3) + ["\n"] + _sentences(2, 3)), (318.0, _sentences(3, 6))]
    placed: list[tuple[float, float, str]] = []
    for x, sentences in columns:
        y = 80.0
        for paragraph in " ".join(sentences).split("\n"):
            for line in _wrap(paragraph, 240, 10):
                placed.append((y, x, line))
                y += 12
            y += 10
    for y, x, line in sorted(placed):  # row by row
        page.insert_text((x, y), line, fontsize=10)
    doc.save(path)
    return [s for _, sentences in columns for s in sentences if s != "\n"]


def test_columns_drawn_row_by_row_are_chunked_column_by_column(tmp_path: Path) -> None:
    pdf = tmp_path / "rows.pdf"
    expected = _two_columns_by_rows(pdf)
    chunks, pages = chunk_pdf(pdf, target_chars=5000, max_chars=8000)
    assert pages == 1
    text = "\n\n".join(chunk.text for chunk in chunks)
    positions = [text.find(sentence) for sentence in expected]
    assert all(at >= 0 for at in positions), positions
    assert positions == sorted(positions)
    # The gap between the left column's paragraphs and the column change are paragraph breaks.
    assert "\n\n" + _sentences(2, 1)[0] in text
    assert "\n\n" + _sentences(3, 1)[0] in text


def test_every_chunk_sentence_is_found_by_the_locator(tmp_path: Path) -> None:
    pdf = tmp_path / "rows.pdf"
    _two_columns_by_rows(pdf)
    index = build_index(pdf)
    for chunk in chunk_index(index, target_chars=400, max_chars=700):
        for sentence in split_sentences(chunk.text):
            result = locate(index, sentence.text, (chunk.page_start, chunk.page_end))
            assert result.status == "found", sentence.text


def test_cjk_lines_join_without_break_or_space(tmp_path: Path) -> None:
    pdf = tmp_path / "cjk.pdf"
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=400)
    lines = ["勞工無法取得應有的工資、資遣", "費以及退休金等，生活陷入困難。", "鑒於工資債權。"]
    for n, line in enumerate(lines):
        page.insert_text((50, 60 + 24 * n), line, fontname="china-t", fontsize=14)
    page.insert_text((50, 180), "第二段落開始。", fontname="china-t", fontsize=14)
    doc.save(pdf)
    (chunk,) = chunk_pdf(pdf)[0]
    assert chunk.text == "".join(lines) + "\n\n第二段落開始。"


def test_a_table_row_keeps_its_label_and_figures_together(tmp_path: Path) -> None:
    pdf = tmp_path / "table.pdf"
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    rows = [("Net revenues", "1,234", "1,100"), ("Operating income", "456", "398")]
    for n, row in enumerate(rows):
        for x, cell in zip((54, 400, 480), row, strict=True):
            page.insert_text((x, 100 + 14 * n), cell, fontsize=10)
    doc.save(pdf)
    (chunk,) = chunk_pdf(pdf)[0]
    assert chunk.text == "Net revenues 1,234 1,100\nOperating income 456 398"


@pytest.mark.parametrize("size", [1000, 300])
def test_chunks_keep_their_pages_and_sizes(tmp_path: Path, size: int) -> None:
    pdf = tmp_path / "pages.pdf"
    doc = pymupdf.open()
    for n in range(3):
        page = doc.new_page(width=612, height=792)
        for i, line in enumerate(_wrap(" ".join(_sentences(n, 8)), 480, 10)):
            page.insert_text((54, 80 + 12 * i), line, fontsize=10)
    doc.save(pdf)
    chunks, pages = chunk_pdf(pdf, target_chars=size, max_chars=size + size // 2)
    assert pages == 3
    assert [chunk.ordinal for chunk in chunks] == list(range(len(chunks)))
    assert all(len(chunk.text) <= size + size // 2 for chunk in chunks)
    assert chunks[0].page_start == 1
    assert chunks[-1].page_end == 3
    joined = " ".join(chunk.text for chunk in chunks)
    for n in range(3):
        for sentence in _sentences(n, 8):
            assert sentence in joined


def test_headings_stand_alone_and_no_chunk_ends_mid_sentence(tmp_path: Path) -> None:
    """The sample report: its title and headings, a blank line below each, are paragraphs of
    their own; a paragraph whose last lines reach past the chunk size is not cut mid-sentence
    (the old blocks kept it whole, and so must the new paragraphs)."""
    from app.pdfs.sample import write_sample_pdf

    chunks, _ = chunk_pdf(write_sample_pdf(tmp_path / "sample.pdf"))
    main = chunks[0].text
    assert main.startswith("Sample Assembly - Official Report, Thursday 20 November 2025\n\n")
    assert "\n\nWATER SUPPLY (AMENDMENT) BILL\n\nThe Minister" in main
    assert main.endswith("according to the National Transport Authority.")
    for chunk in chunks:
        assert chunk.text.rstrip()[-1] in ".!?", chunk.text[-80:]
