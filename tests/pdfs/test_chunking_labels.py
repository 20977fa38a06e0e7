"""Lines in a page's top or bottom band whose numbers change from page to page: page labels
("Page 3 of 9", "- 3 -", "第 3 頁") are furniture and left out of chunk text; the text's own
lines that only happen to recur there with a changing number ("Chapter 1" to "Chapter 4" atop
their pages, a deck's slide titles "Results (1/3)" to "(3/3)") are kept."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from app.pdfs.chunking import chunk_pdf

WIDTH, HEIGHT = 595.0, 842.0


def _prose(page: int, n: int) -> str:
    return (
        f"Section {page}.{n} records the tonnage landed at the quays, the berths let to the "
        "fishing fleet and the dues collected from visiting vessels in the quarter."
    )


def _deck(
    path: Path, pages: int, top: str | dict[int, str], bottom: str, top_size: float = 14
) -> None:
    """``pages`` pages, each with ``top`` and ``bottom`` (``{n}``: the page's number) in the
    top and bottom bands, drawn first, and a few lines of prose between; ``top`` as a dict
    names the pages that have one."""
    doc = pymupdf.open()
    for _ in range(pages):
        doc.new_page(width=WIDTH, height=HEIGHT)
    for number in range(1, pages + 1):
        page = doc[number - 1]
        head = top.get(number, "") if isinstance(top, dict) else top.format(n=number)
        if head:
            page.insert_text((72, 50), head, fontsize=top_size, fontname="china-t")
        page.insert_text((270, 815), bottom.format(n=number), fontsize=9, fontname="china-t")
        y = 130.0
        for n in range(1, 6):
            page.insert_text((72, y), _prose(number, n)[:80], fontsize=11)
            y += 40
    doc.save(path)


def _text(path: Path) -> str:
    chunks, _ = chunk_pdf(path, target_chars=600, max_chars=900)
    return "\n".join(chunk.text for chunk in chunks)


@pytest.mark.parametrize("footer", ["Page {n} of 4", "- {n} -", "委 {n}", "第 {n} 頁", "p. {n}"])
def test_chapter_headings_stay_and_page_labels_go(tmp_path: Path, footer: str) -> None:
    # Chapters start where their text does, not one to a page.
    chapters = {1: "Chapter 1", 2: "Chapter 2", 4: "Chapter 3", 5: "Chapter 4"}
    _deck(tmp_path / "book.pdf", 5, chapters, footer)
    text = _text(tmp_path / "book.pdf")
    assert [f"Chapter {n}" in text for n in range(1, 5)] == [True] * 4
    assert not any(footer.format(n=n) in text for n in range(1, 6)), text


@pytest.mark.parametrize("stride", [1, 8])
def test_a_short_running_header_with_its_page_number_goes(tmp_path: Path, stride: int) -> None:
    # A book's "PIRACY 27" on every page (stride 1), or on every eighth page of it (8): its one
    # number steps with the pages.
    heads = {n: f"PIRACY {20 + stride * n}" for n in range(1, 6)}
    _deck(tmp_path / "book.pdf", 5, heads, "", top_size=10)
    text = _text(tmp_path / "book.pdf")
    assert "PIRACY" not in text, text


def test_slide_titles_numbered_k_of_n_stay(tmp_path: Path) -> None:
    _deck(tmp_path / "deck.pdf", 3, "Results ({n}/3)", "Harbour Board {n}")
    text = _text(tmp_path / "deck.pdf")
    assert [f"Results ({n}/3)" in text for n in range(1, 4)] == [True] * 3


def test_a_running_header_with_its_own_digits_goes(tmp_path: Path) -> None:
    # Identical digits on every page ("2024"): a running header, whatever its numbers.
    _deck(tmp_path / "report.pdf", 4, "Annual Report 2024", "- {n} -")
    text = _text(tmp_path / "report.pdf")
    assert "Annual Report 2024" not in text


@pytest.mark.parametrize("heading", ["Week {n}", "Question {n}", "Chapter {n}"])
def test_headings_one_to_a_page_stay(tmp_path: Path, heading: str) -> None:
    # Numbered like a running header's page number, but set larger than the body: headings.
    _deck(tmp_path / "deck.pdf", 4, heading, "Harbour Board {n}")
    text = _text(tmp_path / "deck.pdf")
    assert [heading.format(n=n) in text for n in range(1, 5)] == [True] * 4, text
