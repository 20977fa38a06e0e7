"""Format sniffing: the bytes decide, the name and declared type only pick Markdown over text."""

from __future__ import annotations

import io
import struct
import uuid
import zipfile

import pytest

from app.core.errors import BadRequest, UnsupportedMediaType
from app.core.formats import SourceFormat, family, sniff
from tests.fixtures import hostile_ole
from tests.fixtures.hostile_ole import current_user
from tests.fixtures.ole import Tree, compound_file


def _zip(entries: dict[str, bytes], stored_first: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        if stored_first:
            archive.writestr(stored_first, entries.pop(stored_first), zipfile.ZIP_STORED)
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _ooxml(part: str) -> bytes:
    return _zip({"[Content_Types].xml": b"<Types/>", "_rels/.rels": b"<r/>", part: b"<x/>"})


def _odf(mimetype: str) -> bytes:
    return _zip({"mimetype": mimetype.encode(), "content.xml": b"<x/>"}, stored_first="mimetype")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"%PDF-1.7\n%\xe2\xe3\n1 0 obj", SourceFormat.pdf),
        (_ooxml("word/document.xml"), SourceFormat.docx),
        (_ooxml("ppt/presentation.xml"), SourceFormat.pptx),
        (_ooxml("xl/workbook.xml"), SourceFormat.xlsx),
        (_odf("application/vnd.oasis.opendocument.text"), SourceFormat.odt),
        (_odf("application/vnd.oasis.opendocument.presentation"), SourceFormat.odp),
        (_odf("application/vnd.oasis.opendocument.spreadsheet"), SourceFormat.ods),
        (b"{\\rtf1\\ansi Hello.}", SourceFormat.rtf),
        (b"<!DOCTYPE html><html><body><p>Hi.</p></body></html>", SourceFormat.html),
        (b"<!-- saved --> <html lang=en><p>Hi.</p></html>", SourceFormat.html),
        (b"<p>One.</p>\n<p>Two.</p>", SourceFormat.html),
        (b"Plain text. Two sentences.", SourceFormat.text),
        (b"\xef\xbb\xbf# Title\n\nText.", SourceFormat.text),
    ],
)
def test_the_bytes_decide(data: bytes, expected: SourceFormat) -> None:
    # A misleading name changes nothing but Markdown against text.
    assert sniff(data, "upload.docx", "application/pdf") == expected


def test_markdown_is_told_from_text_by_name_or_declared_type() -> None:
    data = b"# Budget\n\nThe *budget* grew.\n"
    assert sniff(data) == SourceFormat.text
    assert sniff(data, "notes.MD") == SourceFormat.markdown
    assert sniff(data, None, "text/markdown; charset=utf-8") == SourceFormat.markdown
    assert sniff(data, "notes.txt", "text/plain") == SourceFormat.text


README = b'<p align="center"><img alt="Logo" src="logo.png"></p>\n<div>x</div>\n\n# Tool\n'


@pytest.mark.parametrize(
    ("name", "declared"),
    [
        ("README.md", None),
        ("notes.markdown", "application/octet-stream"),
        ("a.mdown", None),
        ("a.MKD", None),
        (None, "text/markdown"),
        ("upload", "text/x-markdown; charset=utf-8"),
    ],
)
def test_declared_markdown_that_opens_with_html_is_markdown(
    name: str | None, declared: str | None
) -> None:
    # CommonMark reads HTML blocks: the bytes allow Markdown, and the sender said so.
    assert sniff(README, name, declared) == SourceFormat.markdown
    assert sniff(b"<!doctype html><html><p>x</p></html>", name, declared) == SourceFormat.markdown


def test_only_text_takes_the_declared_markdown() -> None:
    # The bytes still decide every container: a PDF, RTF or PNG named .md is not Markdown.
    assert sniff(b"%PDF-1.7\n", "notes.md", "text/markdown") == SourceFormat.pdf
    assert sniff(b"{\\rtf1 Hi.}", "notes.md", "text/markdown") == SourceFormat.rtf
    assert sniff(README, "README.txt") == SourceFormat.html
    assert sniff(README) == SourceFormat.html
    with pytest.raises(UnsupportedMediaType, match="PNG"):
        sniff(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "logo.md", "text/markdown")
    with pytest.raises(UnsupportedMediaType, match="ZIP archive"):
        sniff(_zip({"a.md": b"# x"}), "notes.md", "text/markdown")


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "a PNG image"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "a JPEG image"),
        (b"\x1f\x8b\x08\x00", "a gzip archive"),
        (_zip({"a.txt": b"x"}), "a ZIP archive that is not an Office document"),
        (_odf("application/vnd.oasis.opendocument.graphics"), "an OpenDocument file"),
        (b"\x00\x01\x02\x03binary\x00\x00", "a binary file"),
    ],
)
def test_what_is_not_a_document_is_415_naming_what_it_is(data: bytes, named: str) -> None:
    with pytest.raises(UnsupportedMediaType) as caught:
        sniff(data, "report.docx")
    assert named in caught.value.message
    assert "upload PDF, DOCX" in caught.value.message


# Legacy Office files (OLE compound files): the root's streams decide, never the name. Their
# first bytes as Word, PowerPoint and Excel write them (FIB, CurrentUserAtom, BIFF BOF).
_BOF = struct.pack("<HH", 0x0809, 16) + bytes(16)
_FILEPASS = struct.pack("<HHH", 0x002F, 2, 1)
_WRITE_PROTECT = struct.pack("<HH", 0x0086, 0)
_EOF = struct.pack("<HH", 0x000A, 0)
_PLAIN_TOKEN, _ENCRYPTED_TOKEN = 0xE391C05F, 0xF3D1C4DF


def _fib(flags: int = 0x1200) -> bytes:
    return struct.pack("<HHHHHH", 0xA5EC, 0x00C1, 0, 0x0409, 0, flags) + bytes(600)


def _slides(token: int = _PLAIN_TOKEN, edit_length: int = 0x1C, **extra: bytes) -> bytes:
    """A PowerPoint file whose Current User points at a UserEditAtom of ``edit_length``."""
    edit = struct.pack("<HHI", 0, 0x0FF5, edit_length) + bytes(edit_length)
    document = bytes(5000) + edit
    return compound_file(
        {"Current User": current_user(token, 5000), "PowerPoint Document": document, **extra}
    )


@pytest.mark.parametrize(
    ("tree", "expected"),
    [
        ({"WordDocument": _fib(), "1Table": bytes(100)}, SourceFormat.doc),
        ({"PowerPoint Document": bytes(100), "Current User": current_user(_PLAIN_TOKEN, 0)},
         SourceFormat.ppt),
        ({"Workbook": _BOF + _EOF}, SourceFormat.xls),
        ({"Book": _BOF + _EOF}, SourceFormat.xls),  # Excel 5 and 95
        # An Excel file holding a Word object: the object's streams are in its own storage.
        ({"Workbook": _BOF + _EOF, "MBD0001": {"WordDocument": _fib()}}, SourceFormat.xls),
    ],
    ids=["doc", "ppt", "xls", "xls biff5", "xls with a word object"],
)  # fmt: skip
def test_a_legacy_office_file_is_told_by_its_streams_whatever_its_name(
    tree: Tree, expected: SourceFormat
) -> None:
    # Legacy Office files used to be refused (415, "save it as .docx"): LibreOffice converts
    # them, and archives of old files are what users cite (issue 41).
    data = compound_file(tree)
    for name in ("old.doc", "old.xls", "old.ppt", "old.docx", None):
        assert sniff(data, name, "application/vnd.ms-excel") == expected
    assert family(expected) == "office"


@pytest.mark.parametrize(
    "data",
    [
        compound_file({"WordDocument": _fib(0x1300), "1Table": bytes(100)}),  # fEncrypted
        compound_file({"Workbook": _BOF + _FILEPASS + _EOF}),
        compound_file({"Workbook": _BOF + _WRITE_PROTECT + _FILEPASS + _EOF}),
        _slides(token=_ENCRYPTED_TOKEN),
        _slides(edit_length=0x20),  # the UserEditAtom with encryptSessionPersistIdRef
        _slides(EncryptedSummary=bytes(100)),
    ],
    ids=["doc", "xls", "xls after write protect", "ppt token", "ppt user edit", "ppt summary"],
)
def test_a_password_protected_legacy_file_is_422_saying_so(data: bytes) -> None:
    with pytest.raises(BadRequest, match="password-protected") as caught:
        sniff(data, "secret.doc")
    assert caught.value.details == {"detected": "encrypted"}


def test_a_legacy_file_with_a_password_to_modify_only_is_taken() -> None:
    # Excel's WriteProtect encrypts nothing, nor does Word's fReadOnlyRecommended (bit 10).
    assert sniff(compound_file({"Workbook": _BOF + _WRITE_PROTECT + _EOF})) == SourceFormat.xls
    word = compound_file({"WordDocument": _fib(0x1600), "1Table": bytes(100)})
    assert sniff(word) == SourceFormat.doc
    assert sniff(_slides()) == SourceFormat.ppt


@pytest.mark.parametrize(
    ("tree", "clsid", "named"),
    [
        ({"__properties_version1.0": bytes(64), "__nameid_version1.0": {}}, bytes(16),
         "an Outlook message (.msg)"),
        ({"VisioDocument": bytes(64)}, bytes(16), "a Visio drawing (.vsd)"),
        ({"\x05SummaryInformation": bytes(64)},
         uuid.UUID("000C1084-0000-0000-C000-000000000046").bytes_le,
         "a Windows Installer package (.msi)"),
        ({"Catalog": bytes(64), "1": bytes(64)}, bytes(16), "a Windows thumbnail cache"),
        ({"Contents": bytes(64)}, bytes(16), "an OLE compound file that is not a Word"),
    ],
    ids=["msg", "vsd", "msi", "thumbs.db", "other"],
)  # fmt: skip
def test_another_ole_file_is_415_naming_what_it_is(tree: Tree, clsid: bytes, named: str) -> None:
    with pytest.raises(UnsupportedMediaType) as caught:
        sniff(compound_file(tree, clsid), "report.doc")
    assert named in caught.value.message
    assert "upload PDF, DOCX" in caught.value.message


@pytest.mark.parametrize(
    "data",
    [
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 504,
        hostile_ole.cut(compound_file({"WordDocument": _fib() * 20, "1Table": bytes(100)}), 0.3),
        compound_file({"WordDocument": b"\xec\xa5", "1Table": bytes(100)}),  # no FIB
        compound_file({"Workbook": b"not a BIFF record"}),
        hostile_ole.looping_tree(),
    ],
    ids=["header only", "cut", "no fib", "no bof", "tree loop"],
)
def test_a_damaged_legacy_file_is_422_saying_so(data: bytes) -> None:
    with pytest.raises(BadRequest, match="cannot be read .*: it is damaged or was cut short"):
        sniff(data, "old.doc")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"PK\x03\x04" + b"\x00" * 40, "cannot be read"),
        ("Café au lait.".encode("latin-1"), "not UTF-8"),
    ],
)
def test_broken_or_unreadable_is_422(data: bytes, message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        sniff(data, "x.txt")


def test_families() -> None:
    assert family(SourceFormat.pdf) == "pdf"
    assert {family(f) for f in (SourceFormat.docx, SourceFormat.rtf, SourceFormat.ods)} == {
        "office"
    }
    assert {family(f) for f in (SourceFormat.html, SourceFormat.markdown, SourceFormat.text)} == {
        "text"
    }


_ODT = b"application/vnd.oasis.opendocument.text"


def _odf_deflated(mimetype: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("mimetype", mimetype)
        archive.writestr("content.xml", b"<x/>")
    return buffer.getvalue()


def _patched(data: bytes, local: dict[int, int], central: dict[int, int]) -> bytes:
    """``data`` with bytes of the first local header and the first central header set."""
    out = bytearray(data)
    start = out.find(b"PK\x01\x02")
    for offset, value in local.items():
        out[offset] = value
    for offset, value in central.items():
        out[start + offset] = value
    return bytes(out)


def test_a_mimetype_bomb_is_not_unpacked() -> None:
    # 20 MB of "x" after the type deflates to ~20 KB; the refusal must not carry it.
    bomb = _odf_deflated(_ODT + b"x" * 20_000_000)
    assert len(bomb) < 100_000
    with pytest.raises(UnsupportedMediaType) as caught:
        sniff(bomb, "x.odt")
    assert len(caught.value.message) < 400


def test_corrupt_deflate_in_the_mimetype_is_422() -> None:
    data = bytearray(_odf_deflated(_ODT))
    body = 30 + len("mimetype")
    data[body : body + 8] = b"\xff" * 8  # not a valid deflate stream
    with pytest.raises(BadRequest, match="cannot be read"):
        sniff(bytes(data), "x.odt")


def test_an_encrypted_office_file_is_422_saying_remove_the_password() -> None:
    # Bit 0 of the general-purpose flags (local header +6, central header +8): encrypted.
    data = _patched(_odf_deflated(_ODT), {6: 1}, {8: 1})
    with pytest.raises(BadRequest, match="password"):
        sniff(data, "x.odt")


def test_an_unknown_compression_method_is_422() -> None:
    # Compression method 99 (AES) at local header +8 and central header +10.
    data = _patched(_odf_deflated(_ODT), {8: 99}, {10: 99})
    with pytest.raises(BadRequest, match="cannot be read"):
        sniff(data, "x.odt")


def test_text_over_the_limit_is_judged_by_its_head() -> None:
    # Invalid UTF-8 far past the head: over the limit it is not decoded (the caller answers
    # 413 by size); within the limit the whole body is decoded and refused.
    data = "é".encode() * 40_000 + b"\xff" + b"a" * 10
    assert sniff(data, "x.txt", max_text_bytes=1024) is SourceFormat.text
    with pytest.raises(BadRequest, match="not UTF-8"):
        sniff(data, "x.txt")
    with pytest.raises(UnsupportedMediaType):
        sniff(b"\x00\x01\x02" * 50_000, "x.txt", max_text_bytes=1024)


def test_a_password_protected_docx_is_422_not_legacy_office() -> None:
    # What Word saves with a password: an OLE file with EncryptionInfo and EncryptedPackage
    # streams (MS-OFFCRYPTO 2.3.4; once looked for as bytes, now as the container's streams).
    tree: Tree = {
        "\x06DataSpaces": {"Version": bytes(76)},
        "EncryptionInfo": struct.pack("<HHI", 4, 4, 0x40) + bytes(200),
        "EncryptedPackage": bytes(8000),
    }
    with pytest.raises(BadRequest, match="password-protected"):
        sniff(compound_file(tree), "secret.docx")


def test_a_password_protected_odt_is_422_before_any_conversion() -> None:
    # ODF encryption leaves the mimetype entry plain and declares the encrypted parts in the
    # manifest (ODF 1.2, 3.8: <manifest:encryption-data>).
    manifest = (
        b'<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
        b'<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml">'
        b'<manifest:encryption-data manifest:checksum-type="SHA1/1K"/></manifest:file-entry>'
        b"</manifest:manifest>"
    )

    def odt(manifest: bytes) -> bytes:
        entries = {
            "mimetype": b"application/vnd.oasis.opendocument.text",
            "META-INF/manifest.xml": manifest,
            "content.xml": b"\x8a\x13 encrypted bytes",
        }
        return _zip(entries, stored_first="mimetype")

    with pytest.raises(BadRequest, match="password-protected"):
        sniff(odt(manifest), "minutes.odt")
    plain = manifest.replace(b'<manifest:encryption-data manifest:checksum-type="SHA1/1K"/>', b"")
    assert sniff(odt(plain), "minutes.odt") == SourceFormat.odt
