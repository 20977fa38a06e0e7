"""What an OLE compound file is (``ole.py`` reads it): a legacy Office document (Word, PowerPoint
or Excel 97-2003, and their 95 predecessors), whether it is password-protected, or which other
kind of compound file it is, so that a refusal can name it.

The root storage's streams tell the type, never the file's name: ``WordDocument`` is Word
([MS-DOC] 2.1.1), ``PowerPoint Document`` PowerPoint ([MS-PPT] 2.1.2), ``Workbook`` (BIFF8) or
``Book`` (BIFF5, Excel 5 and 95) Excel ([MS-XLS] 2.1.2). A storage inside (an embedded object)
does not count: an Excel file holding a Word object is an Excel file.

A password to open is told from a few bytes, before anything is converted (LibreOffice would
stop on it and say only that it failed):

- Word: ``fEncrypted``, bit 8 of FibBase's flags at offset 10 of WordDocument ([MS-DOC]
  2.5.2), set for RC4 and CryptoAPI encryption and for XOR obfuscation;
- Excel: a FilePass record (0x002F) among the globals substream's first records ([MS-XLS]
  2.4.117: after BOF, and WriteProtect when there is one), unless Excel's default password
  opens it (``default_passwords.py``: a password to modify only, which LibreOffice opens);
- PowerPoint: the current UserEditAtom carries ``encryptSessionPersistIdRef`` (its length is
  0x20, not 0x1C: [MS-PPT] 2.3.3, which an encrypted file MUST have, 2.3.7), the
  CurrentUserAtom's ``headerToken`` is 0xF3D1C4DF (2.3.2), or the ``EncryptedSummary`` stream is
  there (2.1.6);
- a password-protected DOCX, PPTX or XLSX is no ZIP but a compound file holding
  ``EncryptionInfo`` and ``EncryptedPackage`` ([MS-OFFCRYPTO] 2.3.4).

A password to modify encrypts nothing and is no refusal. Each check reads at most a few hundred
bytes of one stream (``CompoundFile.read``), so the cost is the container's, linear in the file.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Literal

from app.core import default_passwords
from app.core.ole import STREAM, CompoundFile, Entry, OleError

LegacyFormat = Literal["doc", "ppt", "xls"]

_FIB_FLAGS = 10
_F_ENCRYPTED = 0x0100
_BIFF_BOF, _BIFF_EOF, _BIFF_FILEPASS = 0x0809, 0x000A, 0x002F
# FilePass follows BOF and an optional WriteProtect: a few records are enough to look at.
_BIFF_HEAD_RECORDS = 8
_PPT_CURRENT_USER, _PPT_USER_EDIT = 0x0FF6, 0x0FF5
_PPT_ENCRYPTED_TOKEN = 0xF3D1C4DF
_PPT_ENCRYPTED_EDIT_LENGTH = 0x20
# Other compound files people send, by a stream or storage of their root (upper case).
_OTHERS = (
    ("__PROPERTIES_VERSION1.0", "an Outlook message (.msg)"),
    ("__NAMEID_VERSION1.0", "an Outlook message (.msg)"),
    ("VISIODOCUMENT", "a Visio drawing (.vsd)"),
    ("CATALOG", "a Windows thumbnail cache (Thumbs.db)"),
    ("QUILL", "a Publisher document (.pub)"),
)
# Windows Installer files say what they are by their root's class id: an MSI, a patch, a
# transform (as stored: little-endian).
_INSTALLER_CLSIDS = {
    uuid.UUID(f"000C108{last}-0000-0000-C000-000000000046").bytes_le for last in "462"
}
_OTHER_OLE = "an OLE compound file that is not a Word, PowerPoint or Excel document"


@dataclass(frozen=True)
class LegacyFile:
    """What a compound file is: ``format`` (None when it is no legacy Office document),
    ``encrypted`` (a password to open), ``what`` (its name in a message)."""

    format: LegacyFormat | None
    encrypted: bool
    what: str


def inspect(data: bytes) -> LegacyFile:
    """What the compound file ``data`` is. Raises OleError when the container or the part of
    a stream that tells the type cannot be read (cut short, damaged)."""
    ole = CompoundFile(data)
    streams = {name: e for name, e in ole.entries.items() if e.kind == STREAM}
    if "ENCRYPTIONINFO" in streams and "ENCRYPTEDPACKAGE" in streams:
        return LegacyFile(None, True, "a password-protected Office Open XML file")
    if (word := streams.get("WORDDOCUMENT")) is not None:
        return LegacyFile("doc", _word_encrypted(ole, word), "a Word 97-2003 document (.doc)")
    if (slides := streams.get("POWERPOINT DOCUMENT")) is not None:
        encrypted = "ENCRYPTEDSUMMARY" in streams or _slides_encrypted(ole, slides, streams)
        return LegacyFile("ppt", encrypted, "a PowerPoint 97-2003 presentation (.ppt)")
    if (book := streams.get("WORKBOOK", streams.get("BOOK"))) is not None:
        return LegacyFile("xls", _book_encrypted(ole, book), "an Excel 97-2003 workbook (.xls)")
    if ole.root.clsid in _INSTALLER_CLSIDS:
        return LegacyFile(None, False, "a Windows Installer package (.msi)")
    for name, what in _OTHERS:
        if name in ole.entries:
            return LegacyFile(None, False, what)
    return LegacyFile(None, False, _OTHER_OLE)


def _word_encrypted(ole: CompoundFile, word: Entry) -> bool:
    fib = ole.read(word, 0, _FIB_FLAGS + 2)
    if len(fib) < _FIB_FLAGS + 2:
        raise OleError("the WordDocument stream is too short to hold a FIB")
    (flags,) = struct.unpack_from("<H", fib, _FIB_FLAGS)
    return bool(flags & _F_ENCRYPTED)


def _book_encrypted(ole: CompoundFile, book: Entry) -> bool:
    offset = 0
    for _ in range(_BIFF_HEAD_RECORDS):
        head = ole.read(book, offset, 4)
        if len(head) < 4:
            break
        kind, length = struct.unpack("<HH", head)
        if offset == 0 and kind != _BIFF_BOF:
            raise OleError("the workbook stream does not begin with a BOF record")
        if kind == _BIFF_FILEPASS:
            # Excel's default password opens it: no password to ask for (default_passwords.py).
            return not default_passwords.opens_with(ole.read(book, offset + 4, length))
        if kind == _BIFF_EOF:
            break
        offset += 4 + length
    return False


def _slides_encrypted(ole: CompoundFile, slides: Entry, streams: dict[str, Entry]) -> bool:
    """The CurrentUserAtom's token, then the UserEditAtom it points to. A file without a
    readable Current User stream is left to LibreOffice (it can find the last edit itself)."""
    current = streams.get("CURRENT USER")
    atom = ole.read(current, 0, 20) if current is not None else b""
    if len(atom) < 20 or struct.unpack_from("<H", atom, 2)[0] != _PPT_CURRENT_USER:
        return False
    token, edit_offset = struct.unpack_from("<II", atom, 12)
    if token == _PPT_ENCRYPTED_TOKEN:
        return True
    edit = ole.read(slides, edit_offset, 8)
    if len(edit) < 8:
        return False
    kind, length = struct.unpack_from("<HI", edit, 2)
    return bool(kind == _PPT_USER_EDIT and length >= _PPT_ENCRYPTED_EDIT_LENGTH)
