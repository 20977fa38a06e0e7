"""Excel's default password: a workbook it opens is no password-protected workbook. Checked on
what Excel wrote (the verifiers below, known answers) and, in tests/core/test_legacy_office.py
and the API tests, on workbooks LibreOffice stores with that password and with another."""

from __future__ import annotations

import struct

import pytest

from app.core.default_passwords import DEFAULT, opens_with, xor_verifier
from app.core.errors import BadRequest
from app.core.formats import SourceFormat, sniff
from tests.fixtures.ole import compound_file

# From workbooks Excel saved with a password to open (msoffcrypto-tool's test files): XOR
# obfuscation with "123456789012345", and RC4 CryptoAPI (128-bit, SHA-1) with "Password1234_".
EXCEL_XOR = ("123456789012345", 0x9EB1)
EXCEL_CRYPTO_API = (
    "Password1234_",
    128,  # key bits
    "ff6b27f7b025eb08a8aca2c4477cc064",  # salt
    "b948eea818830e56ce56a60c822e7cb3",  # encrypted verifier
    "55bb40447d2bae6b938d9ff54366053628abc435",  # its encrypted SHA-1
)


def _xor_filepass(verifier: int) -> bytes:
    return struct.pack("<HHH", 0x0000, 0x8265, verifier)


def _crypto_api_filepass(key_bits: int, salt: str, verifier: str, verifier_hash: str) -> bytes:
    """A FilePass record's data for RC4 CryptoAPI 4.2 ([MS-OFFCRYPTO] 2.3.5.1, 2.3.3)."""
    provider = "Microsoft Enhanced Cryptographic Provider v1.0\0".encode("utf-16-le")
    header = struct.pack("<8I", 0x0C, 0, 0x6801, 0x8004, key_bits, 1, 0, 0) + provider
    check = struct.pack("<I", 16) + bytes.fromhex(salt) + bytes.fromhex(verifier)
    check += struct.pack("<I", 20) + bytes.fromhex(verifier_hash)
    return struct.pack("<HHHII", 0x0001, 4, 2, 0x0C, len(header)) + header + check


def test_the_xor_verifier_is_excels() -> None:
    password, verifier = EXCEL_XOR
    assert xor_verifier(password) == verifier
    assert opens_with(_xor_filepass(verifier), password)
    assert not opens_with(_xor_filepass(verifier))  # not with the default password
    assert opens_with(_xor_filepass(xor_verifier(DEFAULT)))


def test_the_crypto_api_key_opens_what_excel_encrypted_with_it() -> None:
    password, key_bits, salt, verifier, verifier_hash = EXCEL_CRYPTO_API
    filepass = _crypto_api_filepass(key_bits, salt, verifier, verifier_hash)
    assert opens_with(filepass, password)
    assert not opens_with(filepass)
    assert not opens_with(filepass, password + "x")


@pytest.mark.parametrize(
    "filepass",
    [b"", b"\x01\x00", struct.pack("<HHH", 1, 1, 1) + bytes(10), struct.pack("<HHH", 1, 9, 9)],
    ids=["empty", "cut", "rc4 cut", "unknown version"],
)
def test_what_cannot_be_checked_is_taken_as_a_password_to_open(filepass: bytes) -> None:
    assert not opens_with(filepass)


def test_a_workbook_excels_default_password_opens_is_taken() -> None:
    bof = struct.pack("<HH", 0x0809, 16) + bytes(16)
    for verifier, taken in ((xor_verifier(DEFAULT), True), (EXCEL_XOR[1], False)):
        filepass = _xor_filepass(verifier)
        record = struct.pack("<HH", 0x002F, len(filepass)) + filepass
        data = compound_file({"Workbook": bof + record + struct.pack("<HH", 0x000A, 0)})
        if taken:
            assert sniff(data, "budget.xls") == SourceFormat.xls
        else:
            with pytest.raises(BadRequest, match="password-protected"):
                sniff(data, "budget.xls")
