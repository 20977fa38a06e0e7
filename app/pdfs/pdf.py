"""The one way the service opens a PDF with PyMuPDF: by path, or by the bytes whose hash was
checked (``PdfStorage.read_verified``), so what is read is what was verified."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # PyMuPDF is imported where a PDF is opened: in the PDF workers
    import pymupdf


def open_pdf(pdf: Path | bytes) -> pymupdf.Document:
    """Blocking. Raises what PyMuPDF raises for a file that is not a readable PDF
    (``pymupdf.FileDataError``, ``RuntimeError``, ``ValueError``); callers name the reason."""
    import pymupdf

    return pymupdf.open(pdf) if isinstance(pdf, Path) else pymupdf.open(stream=pdf)
