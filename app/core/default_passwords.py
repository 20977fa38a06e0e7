"""Whether an encrypted Excel 97-2003 workbook opens with Excel's default password, so that it is
not refused as password-protected.

Excel encrypts a workbook that has only a password to modify (or a protected structure) with the
password ``VelvetSweatshop`` ([MS-OFFCRYPTO] 2.4.2.2, 2.3.7.3): it opens without asking, and so
does LibreOffice, which tries that password first. Its FilePass record ([MS-XLS] 2.4.117) looks
like any other, so the password is tried against the record's verifier:

- XOR obfuscation: the 16-bit verifier of [MS-OFFCRYPTO] 2.3.7.1;
- RC4 (version 1.1, what LibreOffice writes): the key of 2.3.6.2 (MD5 of the password, of 16
  copies of its first 5 bytes and the salt, then of that and block 0), which decrypts the
  verifier to one whose MD5 is its hash (2.3.6.4);
- RC4 CryptoAPI (versions 2-4.2, what Excel 2002 and later write): the key of 2.3.5.2 (SHA-1 of
  the salt and the password, then of that and block 0), which decrypts the verifier to one
  whose SHA-1 is its hash (2.3.5.6).

A password's check is a few hashes and under 40 bytes of RC4: bounded, whatever the record
says. RC4 is written out here for that check only: it
decrypts 36 bytes of a verifier, it protects nothing.
"""

from __future__ import annotations

import hashlib
import struct

DEFAULT = "VelvetSweatshop"
_XOR, _RC4 = 0x0000, 0x0001
_CRYPTO_API_MINOR = 2
_SALT, _VERIFIER, _SHA1 = 16, 16, 20


def opens_with(filepass: bytes, password: str = DEFAULT) -> bool:
    """Does ``password`` open the workbook whose FilePass record's data is ``filepass``?
    False for what cannot be told (another method, a record too short)."""
    if len(filepass) < 6:
        return False
    (method,) = struct.unpack_from("<H", filepass)
    if method == _XOR:
        (verifier,) = struct.unpack_from("<H", filepass, 4)
        return bool(verifier == xor_verifier(password))
    major, minor = struct.unpack_from("<HH", filepass, 2)
    if method == _RC4 and (major, minor) == (1, 1):
        return _rc4_opens(filepass[6:], password)
    if method == _RC4 and major in (2, 3, 4) and minor == _CRYPTO_API_MINOR:
        return _crypto_api_opens(filepass[6:], password)
    return False


def xor_verifier(password: str) -> int:
    """[MS-OFFCRYPTO] 2.3.7.1 CreatePasswordVerifier_Method1, over the password's bytes (one a
    character: the low byte, or the high one when the low is zero; at most 15)."""
    chars = [ord(c) & 0xFF or ord(c) >> 8 for c in password[:15]]
    verifier = 0
    for byte in reversed([len(chars), *chars]):
        verifier = (((verifier >> 14) & 1) | ((verifier << 1) & 0x7FFF)) ^ byte
    return verifier ^ 0xCE4B


def _rc4_opens(data: bytes, password: str) -> bool:
    """``data``: the salt, the encrypted verifier and its encrypted MD5 (2.3.6.1)."""
    if len(data) < _SALT + 2 * _VERIFIER:
        return False
    salt, encrypted = data[:_SALT], data[_SALT : _SALT + 2 * _VERIFIER]
    first = hashlib.md5(password.encode("utf-16-le")).digest()[:5]
    second = hashlib.md5((first + salt) * 16).digest()[:5]
    key = hashlib.md5(second + struct.pack("<I", 0)).digest()
    plain = _rc4(key, encrypted)
    return hashlib.md5(plain[:_VERIFIER]).digest() == plain[_VERIFIER:]


def _crypto_api_opens(data: bytes, password: str) -> bool:
    """``data``: the record after its version: flags, the header's size, the EncryptionHeader,
    then the EncryptionVerifier (2.3.5.1, 2.3.3)."""
    if len(data) < 8:
        return False
    (header_size,) = struct.unpack_from("<I", data, 4)
    header = data[8 : 8 + header_size]
    verifier = data[8 + header_size :]
    if len(header) < 20 or len(verifier) < 4 + _SALT + _VERIFIER + 4 + _SHA1:
        return False
    (key_bits,) = struct.unpack_from("<I", header, 16)
    salt = verifier[4 : 4 + _SALT]
    encrypted = verifier[4 + _SALT : 4 + _SALT + _VERIFIER] + verifier[40 : 40 + _SHA1]
    digest = hashlib.sha1(salt + password.encode("utf-16-le")).digest()
    block = hashlib.sha1(digest + struct.pack("<I", 0)).digest()
    # A 40-bit key is used as 128 bits, the rest zeros (2.3.5.2).
    key = block[:5] + bytes(11) if key_bits in (0, 40) else block[: min(key_bits, 160) // 8]
    plain = _rc4(key, encrypted)
    return hashlib.sha1(plain[:_VERIFIER]).digest() == plain[_VERIFIER:]


def _rc4(key: bytes, data: bytes) -> bytes:
    state = list(range(256))
    j = 0
    for i in range(256):
        j = (j + state[i] + key[i % len(key)]) & 0xFF
        state[i], state[j] = state[j], state[i]
    out = bytearray()
    i = j = 0
    for byte in data:
        i = (i + 1) & 0xFF
        j = (j + state[i]) & 0xFF
        state[i], state[j] = state[j], state[i]
        out.append(byte ^ state[(state[i] + state[j]) & 0xFF])
    return bytes(out)
