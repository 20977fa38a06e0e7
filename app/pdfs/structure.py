"""Is this the whole PDF? An upload or a copy cut short must be refused, not stored: MuPDF
repairs what it is given, and a file cut at a fifth of its length still opened with every page
"loadable" (blank), so opening it proves nothing.

The rule: a whole PDF ends with ``%%EOF`` (PDF 32000-1:2008, 7.5.5), and readers look for it
within the last 1024 bytes (PDF Reference 1.7, Appendix H, note 18: some producers append
other bytes after it). A cut anywhere before that marker removes it; a cut that keeps it leaves
a whole revision. Every PDF of the shared corpus (34 files from 12 producers) ends so, and none
needed repair. Then, for a file MuPDF had to repair (a damaged cross-reference table is common
and harmless), every page the page tree names must still be an object in the file: a repair
that kept pages whose objects are not there (MuPDF shows them blank) is refused too. MuPDF
repairs when a page is first loaded, so this runs after every page was loaded.

Pure functions on bytes and on an open document; ``inspect_pdf`` calls them in the PDF workers.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # PyMuPDF is imported by the PDF workers, where a PDF is opened
    import pymupdf

EOF_MARKER = b"%%EOF"
EOF_WITHIN = 1024


def tail(data: bytes | Path) -> tuple[bytes, int]:
    """The last EOF_WITHIN bytes and the whole size, reading no more than that of a file."""
    if isinstance(data, bytes):
        return data[-EOF_WITHIN:], len(data)
    with data.open("rb") as handle:
        size = handle.seek(0, 2)
        handle.seek(max(0, size - EOF_WITHIN))
        return handle.read(), size


def cut_short(data: bytes | Path, name: str) -> str | None:
    """Why ``data`` is not a whole PDF (it was cut short), or None."""
    end, size = tail(data)
    if EOF_MARKER in end:
        return None
    return (
        f"{name} is incomplete: it ends after {size} bytes without the end-of-file marker "
        "(%%EOF) that closes every whole PDF, so the upload or copy was cut short; send the "
        "whole file"
    )


def lost_pages(doc: pymupdf.Document, page_count: int) -> list[int]:
    """The 1-based numbers of the pages of a repaired document whose objects are not in the
    file. A page object that is there but unreadable (nested too deep, say) is not lost: what
    cannot be read of it is answered when it is indexed."""
    if not doc.is_repaired:
        return []
    import pymupdf

    lost = []
    for number in range(page_count):
        try:
            kind = doc.xref_get_key(doc.page_xref(number), "Type")
        except (ValueError, RuntimeError, pymupdf.mupdf.FzErrorBase):
            continue
        if kind[0] == "null":
            lost.append(number + 1)
    return lost
