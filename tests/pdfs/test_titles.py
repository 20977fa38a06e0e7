"""Which PDF metadata titles name the document (app/pdfs/titles.py)."""

from __future__ import annotations

import pytest

from app.pdfs.titles import name_title, shown_title, title_from_name, usable_title

PLACEHOLDERS = [
    # What converters write into /Title, seen in real PDFs.
    "Microsoft Word - budget_2024.doc",
    "Microsoft Word - Document1",
    "Microsoft Word - Annual Report FINAL v3.docx",
    "Microsoft PowerPoint - deck.pptx",
    "Microsoft PowerPoint - Presentation1",
    "Microsoft Excel - Book1.xlsx",
    "Microsoft Excel - Q3 figures.xls",
    "PowerPoint Presentation",
    "PowerPoint-Präsentation",
    "Présentation PowerPoint",
    "Document1",
    "Document 2",
    "Presentation1",
    "Book1",
    "Sheet1",
    "Slide 1",
    "untitled",
    "Untitled",
    "Untitled 1",  # LibreOffice Writer's new document
    "Untitled-2",
    "Untitled document",  # Google Docs
    "Unbenannt",
    "Sans titre",
    "无标题",
    "report_final.docx",
    "untitled.pdf",
    "scan0001.pdf",
    "deck.key",
    "C:\\Users\\jsmith\\Documents\\x.doc",
    "/home/jsmith/draft.odt",
    "file:///tmp/out.pdf",
    "",
    "   ",
    "---",
]

GOOD = [
    "Annual Report 2023",
    "Form 10-K",
    "10-K",
    "Apple Inc. Form 10-K for the fiscal year ended September 30, 2023",
    "2023年度報告",
    "勞工退休金條例",
    "Budget Statement",
    "Untitled Goose Game: a review",  # starts like a placeholder, is not one
    "Document Management Policy",
    "Microsoft Corporation Annual Report",  # a company, not Word's prefix
    "The Book of Kells",
    "1984",  # digits only, and still a title
    "Presentation - Q3",
    "Microsoft Excel - the missing manual",  # a book, after the prefix
]


@pytest.mark.parametrize("title", PLACEHOLDERS)
def test_placeholders_are_not_titles(title: str) -> None:
    assert usable_title(title) is None


@pytest.mark.parametrize("title", GOOD)
def test_real_titles_are_kept(title: str) -> None:
    assert usable_title(title) == title


def test_a_kept_title_has_its_white_space_collapsed() -> None:
    assert usable_title("  Annual\n Report  2023 ") == "Annual Report 2023"
    assert usable_title(None) is None


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("budget_2024.pdf", "budget 2024"),
        ("reports/Annual_Report__2023.pdf", "Annual Report 2023"),
        ("apple-10-k-2023.pdf", "apple-10-k-2023"),  # hyphens stay: they may be the name's own
        ("C:\\scans\\minutes_may.pdf", "minutes may"),
        ("_.pdf", "_.pdf"),  # nothing readable left: the name as it is
    ],
)
def test_title_from_name(name: str, title: str) -> None:
    assert title_from_name(name) == title


def test_a_stored_placeholder_is_shown_as_the_file_name_or_the_id() -> None:
    assert shown_title("Form 10-K", "filings/apple_2023.pdf", "apple") == "Form 10-K"
    assert shown_title("Microsoft Word - x.doc", "filings/apple_2023.pdf", "apple") == "apple 2023"
    # An upload is stored by its hash, which names nothing: the document's id.
    stored = "ingested/" + "ab" * 32 + ".pdf"
    assert shown_title("Microsoft Word - Document1", stored, "apple-10k") == "apple-10k"
    assert name_title(stored, "apple-10k") == "apple-10k"


@pytest.mark.parametrize("title", ["1984", "Title", "untitled", "Book 2", "Document1", "x.pdf"])
def test_a_title_a_caller_gave_is_shown_as_given(title: str) -> None:
    """Read back, only the Office converter's own form is replaced: any other stored title may be
    what the caller chose (PUT's title, ingest --title), even one metadata could not give."""
    assert shown_title(title, "filings/apple_2023.pdf", "apple") == title
