"""Real legacy Office files, as LibreOffice saves them (``legacy_files``, made once per session),
told apart by ``sniff`` whatever their names; their password-protected copies refused; a copy
cut short refused as damaged."""

from __future__ import annotations

import struct

import pytest

from app.core.default_passwords import DEFAULT, opens_with
from app.core.errors import BadRequest
from app.core.formats import SourceFormat, sniff
from app.core.legacy_office import inspect
from app.core.ole import CompoundFile
from tests.fixtures.hostile_ole import cut
from tests.fixtures.legacy_office import PASSWORD

LEGACY = ["doc", "ppt", "xls"]


@pytest.mark.parametrize("fmt", LEGACY)
def test_a_real_legacy_file_is_its_format_whatever_it_is_called(
    fmt: str, legacy_files: dict[str, bytes]
) -> None:
    for name in ("ferry.doc", "ferry.ppt", "ferry.xls", "ferry.docx", "ferry.txt", None):
        assert sniff(legacy_files[fmt], name, "application/octet-stream") == SourceFormat(fmt)
    found = inspect(legacy_files[fmt])
    assert (found.format, found.encrypted) == (fmt, False)


@pytest.mark.parametrize("fmt", LEGACY)
def test_a_real_password_protected_legacy_file_is_refused(
    fmt: str, protected_legacy_files: dict[str, bytes]
) -> None:
    data = protected_legacy_files[fmt]
    assert inspect(data).format == fmt
    with pytest.raises(BadRequest, match="password-protected"):
        sniff(data, f"ferry.{fmt}")


def test_what_libreoffice_writes_is_what_the_checks_read(
    legacy_files: dict[str, bytes], protected_legacy_files: dict[str, bytes]
) -> None:
    # The bytes each check reads, in the real files: the FIB's flags and the Workbook's first
    # records, with and without the password.
    def stream(data: bytes, name: str, size: int) -> bytes:
        ole = CompoundFile(data)
        return ole.read(ole.entries[name], 0, size)

    assert stream(legacy_files["doc"], "WORDDOCUMENT", 12)[11] & 0x01 == 0
    assert stream(protected_legacy_files["doc"], "WORDDOCUMENT", 12)[11] & 0x01 == 1
    plain, protected = (
        stream(f["xls"], "WORKBOOK", 64) for f in (legacy_files, protected_legacy_files)
    )
    assert plain[:2] == protected[:2] == b"\x09\x08"  # BOF
    assert b"\x2f\x00" not in plain[: 4 + plain[2]]
    after_bof = 4 + protected[2]
    assert protected[after_bof : after_bof + 2] == b"\x2f\x00"  # FilePass, right after BOF


@pytest.mark.parametrize("fmt", LEGACY)
def test_a_real_file_cut_short_is_refused_as_damaged(
    fmt: str, legacy_files: dict[str, bytes]
) -> None:
    data = legacy_files[fmt]
    for fraction in (0.1, 0.25, 0.5, 0.75, 0.9):
        with pytest.raises(BadRequest, match="it is damaged or was cut short"):
            sniff(cut(data, fraction), f"ferry.{fmt}")


def test_a_real_workbook_encrypted_with_excels_default_password_is_taken(
    protected_legacy_files: dict[str, bytes],
) -> None:
    # LibreOffice encrypts an XLS with RC4 (version 1.1): the key from a password opens its own
    # workbook, and only that one.
    default = protected_legacy_files["xls with the default password"]
    protected = protected_legacy_files["xls"]
    assert opens_with(_filepass(default), DEFAULT)
    assert opens_with(_filepass(protected), PASSWORD)
    assert not opens_with(_filepass(protected), DEFAULT)
    assert sniff(default, "budget.xls") == SourceFormat.xls
    assert inspect(default).encrypted is False


def _filepass(data: bytes) -> bytes:
    """The FilePass record's data in a workbook (it follows BOF in LibreOffice's)."""
    ole = CompoundFile(data)
    book = ole.entries["WORKBOOK"]
    offset = 4 + ole.read(book, 2, 1)[0]  # past BOF
    kind, length = struct.unpack("<HH", ole.read(book, offset, 4))
    assert kind == 0x002F
    return ole.read(book, offset + 4, length)
