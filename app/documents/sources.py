"""What a document was made from, and the limits each kind of file is taken within.

Every file that becomes a document (``PUT /v2/documents/{id}/file``, ``ingest``) is sniffed
first (``core/formats.py``: the bytes decide, the name and the declared type only tell Markdown
from plain text), then taken by its family: a PDF as it is, an Office file converted to PDF by
LibreOffice (``pdfs/convert.py``, ``pdfs/originals.py``), HTML, Markdown and text as text
(``text_sources.py``). Each family has its own size limit, checked once the type is known (the
route's body limit is the largest of them).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.core.config import Settings
from app.core.errors import PayloadTooLarge
from app.core.formats import SourceFormat, family


@dataclass(frozen=True)
class Origin:
    """The file a document was made from, as the document records it: its format, the name it
    was sent with (None when it had none), and for a converted file the original's hash and
    where it is stored."""

    source_format: SourceFormat = SourceFormat.pdf
    original_name: str | None = None
    original_sha256: str | None = None
    original_path: str | None = None


@dataclass(frozen=True)
class SourceLimits:
    max_pdf_bytes: int = 100 * 1024 * 1024
    max_office_bytes: int = 50 * 1024 * 1024
    max_text_bytes: int = 10 * 1024 * 1024

    @classmethod
    def from_settings(cls, settings: Settings) -> SourceLimits:
        return cls(settings.max_pdf_bytes, settings.max_office_bytes, settings.max_text_bytes)

    @property
    def largest(self) -> int:
        return max(self.max_pdf_bytes, self.max_office_bytes, self.max_text_bytes)

    def check(self, fmt: SourceFormat, size: int, name: str) -> None:
        """413 when a file of this format is larger than its family takes."""
        limit, setting = {
            "pdf": (self.max_pdf_bytes, "HIGHLIGHT_MAX_PDF_BYTES"),
            "office": (self.max_office_bytes, "HIGHLIGHT_MAX_OFFICE_BYTES"),
            "text": (self.max_text_bytes, "HIGHLIGHT_MAX_TEXT_BYTES"),
        }[family(fmt)]
        if size > limit:
            raise PayloadTooLarge(
                f"{name} is {_kind(fmt)} of {size} bytes, larger than this service accepts "
                f"({limit} bytes, {setting}); split it or ask the operator to raise {setting}",
                details={"max_bytes": limit, "detected": fmt.value},
            )


def default_name(document_id: str, fmt: SourceFormat) -> str:
    """What messages call a file sent without a name."""
    extension = {SourceFormat.markdown: "md", SourceFormat.text: "txt"}.get(fmt, fmt.value)
    return f"{document_id}.{extension}"


def _kind(fmt: SourceFormat) -> str:
    if fmt in (SourceFormat.html, SourceFormat.markdown):
        return f"an {fmt.value.upper()} file" if fmt is SourceFormat.html else "a Markdown file"
    if fmt is SourceFormat.text:
        return "a text file"
    return f"{'an' if fmt.value[0] in 'aeiou' else 'a'} {fmt.value.upper()} file"
