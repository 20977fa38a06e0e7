"""What kind of document a file is, from its bytes: the one place uploads and `ingest` decide.

A file's name and declared type are hints, never the decision: a PDF named ``report.docx`` is a
PDF, and a PNG named ``report.docx`` is refused (415) naming what it is. The bytes decide the
container (PDF, ZIP, RTF, OLE, text); inside a ZIP, the Office Open XML parts or the
OpenDocument ``mimetype`` entry decide which Office format; for text, Markdown is told only by
the name or the declared type (no byte pattern separates it reliably from plain text, nor from
HTML: CommonMark reads HTML blocks, so a README that opens with ``<p align="center">`` is
Markdown when it says so), then HTML by its markup, else plain text.

An OLE compound file is a legacy Office document (DOC, PPT, XLS) told by its root's streams,
or refused naming what else it is (``legacy_office.py``, over ``ole.py``'s bounded reader).

Three families, handled differently: ``pdf`` (the PDF path), ``office`` (converted to PDF by
LibreOffice, then the PDF path), ``text`` (HTML, Markdown, plain text: stored and located as
text). Pure: standard library only.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from enum import StrEnum
from typing import Literal

from app.core import legacy_office, ole
from app.core.errors import BadRequest, UnsupportedMediaType

Family = Literal["pdf", "office", "text"]


class SourceFormat(StrEnum):
    pdf = "pdf"
    docx = "docx"
    pptx = "pptx"
    xlsx = "xlsx"
    odt = "odt"
    odp = "odp"
    ods = "ods"
    rtf = "rtf"
    doc = "doc"
    ppt = "ppt"
    xls = "xls"
    html = "html"
    markdown = "markdown"
    text = "text"


OFFICE = frozenset(
    {
        SourceFormat.docx,
        SourceFormat.pptx,
        SourceFormat.xlsx,
        SourceFormat.odt,
        SourceFormat.odp,
        SourceFormat.ods,
        SourceFormat.rtf,
        SourceFormat.doc,
        SourceFormat.ppt,
        SourceFormat.xls,
    }
)
TEXT = frozenset({SourceFormat.html, SourceFormat.markdown, SourceFormat.text})

MEDIA_TYPES: dict[SourceFormat, str] = {
    SourceFormat.pdf: "application/pdf",
    SourceFormat.docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    SourceFormat.pptx: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    SourceFormat.xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    SourceFormat.odt: "application/vnd.oasis.opendocument.text",
    SourceFormat.odp: "application/vnd.oasis.opendocument.presentation",
    SourceFormat.ods: "application/vnd.oasis.opendocument.spreadsheet",
    SourceFormat.rtf: "application/rtf",
    SourceFormat.doc: "application/msword",
    SourceFormat.ppt: "application/vnd.ms-powerpoint",
    SourceFormat.xls: "application/vnd.ms-excel",
    SourceFormat.html: "text/html",
    SourceFormat.markdown: "text/markdown",
    SourceFormat.text: "text/plain",
}
# What an upload may declare: every format's own type, and the generic ones clients send.
ACCEPTED_MEDIA_TYPES = (
    *MEDIA_TYPES.values(),
    "text/rtf",
    "text/x-markdown",
    "application/octet-stream",
)
_MARKDOWN_NAMES = (".md", ".markdown", ".mdown", ".mkd")
_MARKDOWN_TYPES = ("text/markdown", "text/x-markdown")
_OOXML = {"word/": SourceFormat.docx, "ppt/": SourceFormat.pptx, "xl/": SourceFormat.xlsx}
_ODF = {
    "application/vnd.oasis.opendocument.text": SourceFormat.odt,
    "application/vnd.oasis.opendocument.presentation": SourceFormat.odp,
    "application/vnd.oasis.opendocument.spreadsheet": SourceFormat.ods,
}
# Magic numbers of what people upload by mistake, named so the refusal says what was sent.
_KNOWN_OTHERS: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!", "a RAR archive"),
    (b"MZ", "a Windows program"),
    (b"\x7fELF", "a program (ELF)"),
)
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_HTML = re.compile(
    rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)[\s>]", re.IGNORECASE | re.DOTALL
)
# Text whose share of control characters (other than whitespace) is above this is binary.
_CONTROL_SHARE = 0.01
# How much of an ODF "mimetype" entry is read: the longest ODF type is 47 bytes.
_MIMETYPE_BYTES = 100
_MANIFEST = "META-INF/manifest.xml"
_MANIFEST_BYTES = 1 << 20
# Bit 0 of a ZIP entry's flags: the entry is encrypted.
_ENCRYPTED = 0x1
# How much of a text body over the caller's limit is looked at to call it text or binary.
_TEXT_HEAD = 65536
_SUPPORTED = (
    "PDF, DOCX, PPTX, XLSX, ODT, ODP, ODS, RTF, DOC, PPT, XLS, HTML, Markdown or plain text (UTF-8)"
)


def family(fmt: SourceFormat) -> Family:
    if fmt is SourceFormat.pdf:
        return "pdf"
    return "office" if fmt in OFFICE else "text"


def sniff(
    data: bytes,
    filename: str | None = None,
    declared: str | None = None,
    max_text_bytes: int | None = None,
) -> SourceFormat:
    """The format of ``data``. ``filename`` and ``declared`` (a media type) only choose Markdown
    over HTML or text. Raises UnsupportedMediaType (415) for what is not a supported format, and
    BadRequest (422) for a supported container that is broken (a ZIP that cannot be read, an
    encrypted one). ``max_text_bytes``: text longer than this is judged by its head only and
    not decoded whole (the caller refuses it by size; decoding 100 MB first is wasted work)."""
    if not data:
        raise BadRequest("the file is empty: send the document's bytes as the request body")
    head = data[:1024]
    if b"%PDF-" in head:
        return SourceFormat.pdf
    if data.startswith(b"PK\x03\x04"):
        return _zip_format(data)
    if data.lstrip()[:5] == b"{\\rtf":
        return SourceFormat.rtf
    if data.startswith(_OLE):
        return _ole_format(data)
    for magic, name in _KNOWN_OTHERS:
        if data.startswith(magic):
            raise _unsupported(name)
    if max_text_bytes is not None and len(data) > max_text_bytes:
        text = _decoded(_utf8_head(data[:_TEXT_HEAD]))
    else:
        text = _decoded(data)
    name = (filename or "").lower()
    media = (declared or "").split(";", 1)[0].strip().lower()
    # Declared Markdown is Markdown even when it opens with HTML (a README's centred logo):
    # CommonMark reads HTML blocks, so the bytes allow both, and the sender said which.
    if name.endswith(_MARKDOWN_NAMES) or media in _MARKDOWN_TYPES:
        return SourceFormat.markdown
    if _HTML.match(data[:4096]) or _looks_like_html(text):
        return SourceFormat.html
    return SourceFormat.text


def _zip_format(data: bytes) -> SourceFormat:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
            if "mimetype" in names:
                # Read a few bytes only: an entry's declared size is the sender's word, and a
                # small file can inflate to gigabytes (a ZIP bomb in the mimetype entry).
                if archive.getinfo("mimetype").flag_bits & _ENCRYPTED:
                    raise _encrypted()
                with archive.open("mimetype") as entry:
                    raw = entry.read(_MIMETYPE_BYTES)
                mimetype = raw.decode("ascii", "replace").strip()
                if mimetype in _ODF:
                    # A password-protected ODF file keeps its mimetype plain and encrypts its
                    # content, which its manifest declares (read a bounded head of it).
                    if _MANIFEST in names:
                        with archive.open(_MANIFEST) as entry:
                            if b"encryption-data" in entry.read(_MANIFEST_BYTES):
                                raise _encrypted()
                    return _ODF[mimetype]
                raise _unsupported(f"an OpenDocument file of type {mimetype[:80]!r}")
    # RuntimeError: what zipfile raises for what it cannot read (NotImplementedError for a
    # compression method it lacks is one).
    except (zipfile.BadZipFile, zlib.error, RuntimeError, EOFError, ValueError) as exc:
        raise BadRequest(
            f"the file is a ZIP container that cannot be read ({str(exc)[:200]}): it was cut "
            "short, damaged or uses a compression this service does not read; upload the "
            "document again",
            details={"detected": "broken zip"},
        ) from exc
    if "[Content_Types].xml" in names:
        for prefix, fmt in _OOXML.items():
            if any(n.startswith(prefix) for n in names):
                return fmt
    raise _unsupported("a ZIP archive that is not an Office document")


def _ole_format(data: bytes) -> SourceFormat:
    """A compound file: a legacy Office document (DOC, PPT, XLS), told by its streams; a
    password-protected Office file of any kind (422); or another kind, named (415)."""
    try:
        found = legacy_office.inspect(data)
    except ole.OleError as exc:
        raise BadRequest(
            "the file is a legacy Office file (an OLE compound file) that cannot be read "
            f"({str(exc)[:200]}): it is damaged or was cut short; upload the document again, "
            "or open it and save it again",
            details={"detected": "broken ole"},
        ) from exc
    if found.encrypted:
        raise _encrypted()
    if found.format is None:
        raise _unsupported(found.what)
    return SourceFormat(found.format)


def _encrypted() -> BadRequest:
    return BadRequest(
        "the file is password-protected and cannot be converted: remove the password, save "
        "it and upload it again",
        details={"detected": "encrypted"},
    )


def _decoded(data: bytes) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if b"\x00" in data[:4096]:
            raise _unsupported("a binary file") from exc
        raise BadRequest(
            f"the text is not UTF-8 (byte {exc.start} cannot be read): save it as UTF-8 and "
            "upload it again",
            details={"offset": exc.start},
        ) from exc
    controls = sum(1 for c in text[:65536] if ord(c) < 32 and c not in "\t\n\r\f")
    if controls > _CONTROL_SHARE * min(len(text), 65536):
        raise _unsupported("a binary file")
    return text


def _utf8_head(head: bytes) -> bytes:
    """``head`` without a UTF-8 sequence cut at its end (so a cut is not taken for bad text)."""
    for back in range(1, min(4, len(head)) + 1):
        byte = head[-back]
        if byte < 0x80:
            return head
        if byte >= 0xC0:  # a lead byte: keep its sequence only if it is complete
            needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return head if back >= needed else head[:-back]
    return head


def _looks_like_html(text: str) -> bool:
    """A fragment without <html>: several block tags near the start make it HTML."""
    start = text[:4096].lower()
    return start.lstrip().startswith("<") and (
        len(re.findall(r"<(?:p|div|h[1-6]|ul|ol|li|table|article|section)[\s>]", start)) >= 2
    )


def _unsupported(what: str) -> UnsupportedMediaType:
    return UnsupportedMediaType(
        f"this file is {what}; upload {_SUPPORTED}", details={"detected": what}
    )
