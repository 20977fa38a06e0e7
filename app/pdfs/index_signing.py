"""Index blobs bound to the PDF they index and signed: what lets a replica believe an index that
another process wrote into the shared store.

``index_codec`` checks that a blob is consistent, not that it is true: an index of the right PDF
with every box moved down a page decodes, and highlights the wrong lines. Anyone who may write the
bucket (the README invites upstream pipelines to) could put one there. So a blob carries the PDF
it was built from (the PDF's SHA-256, the index version, the OCR settings) and an HMAC-SHA256 over
all of it and the codec's bytes, under a key the deployment configures
(``HIGHLIGHT_INDEX_SIGNING_KEYS``, a JSON list of ``id:secret``): the first key signs, every key
verifies, so a key is rotated by adding the new one first and dropping the old one later. A blob
that fails is never decoded (``RejectedBlob``, with one of ``REASONS``); the cache rebuilds it.

Without a key nothing is signed: the cache neither reads nor writes the shared store, and its
own folder is trusted only while it is private to this user (``index_cache.py`` says why).

Layout (integers little-endian)::

    0      8   MAGIC
    8      1   ENVELOPE_VERSION
    9      1   n, the key id's length (0: unsigned, only ever trusted from the private folder)
    10     n   key id (ASCII)
    10+n   32  the PDF's SHA-256
    42+n   2   INDEX_VERSION the index was built with
    44+n   1   m, the build variant's length
    45+n   m   build variant (ASCII: empty, or the OCR settings' tag)
    45+n+m 32  HMAC-SHA256(secret, DOMAIN + bytes 0..45+n+m + payload); zeros when unsigned
    77+n+m     payload: the ``index_codec`` blob
"""

from __future__ import annotations

import hashlib
import hmac
import re
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pydantic import SecretStr

from app.alignment.index import INDEX_VERSION
from app.core.config import SIGNING_KEY
from app.pdfs import index_codec

MAGIC = b"HLSIGNED"
ENVELOPE_VERSION = 1
# Domain separation: a MAC made here means "an index blob" and nothing else the same key signs.
DOMAIN = b"highlight-index-blob\x00"
_MAC_SIZE = hashlib.sha256().digest_size
_UNSIGNED = bytes(_MAC_SIZE)
_VERSION = struct.Struct("<H")
_KEY_ID = re.compile(rb"[A-Za-z0-9._-]{1,32}")
_VARIANT = re.compile(rb"[a-z0-9]*")

# Why a blob is refused: a small closed set, the label of highlight_index_blobs_rejected_total.
REASONS = ("unsigned", "unknown_key", "bad_mac", "wrong_pdf", "wrong_version", "corrupt")


class RejectedBlob(Exception):
    """A blob that must not be used; ``reason`` is one of ``REASONS``, the message never holds
    a key."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


@dataclass(frozen=True)
class SigningKey:
    key_id: str
    secret: bytes = field(repr=False)  # never in a repr, a log line or an error


class SigningKeys:
    """The keys a deployment configured, the first the one that signs. Its repr names the ids."""

    def __init__(self, keys: Sequence[SigningKey] = ()) -> None:
        self._keys = tuple(keys)
        self._by_id = {key.key_id: key for key in self._keys}
        if len(self._by_id) != len(self._keys):
            raise ValueError("two signing keys have the same id")

    @classmethod
    def from_settings(cls, values: Iterable[SecretStr]) -> SigningKeys:
        """From ``Settings.index_signing_keys`` (validated there: ``id:secret``)."""
        keys = []
        for value in values:
            found = SIGNING_KEY.fullmatch(value.get_secret_value())
            if found is None:
                raise ValueError("a signing key is not id:secret")
            keys.append(SigningKey(found[1], found[2].encode()))
        return cls(keys)

    def __bool__(self) -> bool:
        return bool(self._keys)

    def __repr__(self) -> str:
        return f"SigningKeys({[key.key_id for key in self._keys]})"

    @property
    def current(self) -> SigningKey | None:
        return self._keys[0] if self._keys else None

    def get(self, key_id: str) -> SigningKey | None:
        return self._by_id.get(key_id)


@dataclass(frozen=True)
class Binding:
    """What a blob must have been built from to be the index the reader asked for."""

    sha256: str  # the PDF's content hash, hex
    variant: str = ""  # the OCR settings' tag, empty without OCR


@dataclass(frozen=True)
class Opened:
    payload: memoryview  # the codec's blob
    key_id: str  # that signed it ("" when unsigned and read unverified)


def _header(binding: Binding, key_id: str) -> bytes:
    ident, variant = key_id.encode("ascii"), binding.variant.encode("ascii")
    return b"".join(
        (
            MAGIC,
            bytes((ENVELOPE_VERSION, len(ident))),
            ident,
            bytes.fromhex(binding.sha256),
            _VERSION.pack(INDEX_VERSION),
            bytes((len(variant),)),
            variant,
        )
    )


def _mac(secret: bytes, header: bytes | memoryview, payload: bytes | memoryview) -> bytes:
    mac = hmac.new(secret, DOMAIN, hashlib.sha256)
    mac.update(header)
    mac.update(payload)
    return mac.digest()


def seal(payload: bytes, binding: Binding, key: SigningKey | None) -> bytes:
    """``payload`` (an ``index_codec`` blob) bound to ``binding``, signed by ``key`` (None:
    unsigned, for the private local folder of a deployment without keys)."""
    header = _header(binding, key.key_id if key is not None else "")
    mac = _mac(key.secret, header, payload) if key is not None else _UNSIGNED
    return b"".join((header, mac, payload))


@dataclass(frozen=True)
class _Envelope:
    header: memoryview  # what the MAC covers before the payload
    key_id: str
    sha256: bytes
    version: int
    variant: str
    mac: memoryview
    payload: memoryview


def _parse(blob: bytes) -> _Envelope:
    view = memoryview(blob)
    if view[: len(MAGIC)] != MAGIC:
        if view[: len(index_codec.MAGIC)] == index_codec.MAGIC:
            raise RejectedBlob("unsigned", "an index without its signed envelope")
        raise RejectedBlob("corrupt", "not an index blob")
    at = len(MAGIC)
    if len(view) < at + 2:
        raise RejectedBlob("corrupt", "shorter than its header")
    if view[at] != ENVELOPE_VERSION:
        raise RejectedBlob("wrong_version", f"envelope version {view[at]}")
    id_size = view[at + 1]
    at += 2
    variant_at = at + id_size + 32 + _VERSION.size
    if len(view) < variant_at + 1:
        raise RejectedBlob("corrupt", "shorter than its header")
    end = variant_at + 1 + view[variant_at]
    if len(view) < end + _MAC_SIZE:
        raise RejectedBlob("corrupt", "shorter than its header")
    key_id, variant = bytes(view[at : at + id_size]), bytes(view[variant_at + 1 : end])
    # Both reach a log line: only the characters a key id or an OCR tag is made of.
    if (key_id and not _KEY_ID.fullmatch(key_id)) or not _VARIANT.fullmatch(variant):
        raise RejectedBlob("corrupt", "a key id or variant of other characters")
    sha256 = bytes(view[at + id_size : at + id_size + 32])
    (version,) = _VERSION.unpack_from(view, at + id_size + 32)
    mac, payload = view[end : end + _MAC_SIZE], view[end + _MAC_SIZE :]
    if not key_id and mac != _UNSIGNED:  # so that a flipped bit there is not believed
        raise RejectedBlob("corrupt", "a signature without a key id")
    return _Envelope(view[:end], key_id.decode(), sha256, version, variant.decode(), mac, payload)


def open_blob(blob: bytes, binding: Binding, keys: SigningKeys, *, verify: bool = True) -> Opened:
    """The payload of ``blob`` if it is the index of ``binding`` signed by one of ``keys``;
    raises ``RejectedBlob`` otherwise. ``verify=False`` skips the signature (never for a blob
    from the shared store: only for the private folder this process writes, without keys); the
    PDF and version it was built from are checked either way."""
    envelope = _parse(blob)
    if verify:
        if not envelope.key_id:
            raise RejectedBlob("unsigned", "no signature")
        key = keys.get(envelope.key_id)
        if key is None:
            raise RejectedBlob("unknown_key", f"signed by key {envelope.key_id!r}, not configured")
        if not hmac.compare_digest(
            _mac(key.secret, envelope.header, envelope.payload), envelope.mac
        ):
            raise RejectedBlob("bad_mac", f"its signature is not key {envelope.key_id!r}'s")
    # Checked after the signature: a forged blob is bad_mac whatever it claims to index.
    if envelope.sha256 != bytes.fromhex(binding.sha256):
        raise RejectedBlob("wrong_pdf", f"the index of another PDF ({envelope.sha256.hex()[:12]}…)")
    if (envelope.version, envelope.variant) != (INDEX_VERSION, binding.variant):
        raise RejectedBlob(
            "wrong_version",
            f"built as version {envelope.version} {envelope.variant or 'without OCR'}, expected "
            f"{INDEX_VERSION} {binding.variant or 'without OCR'}",
        )
    return Opened(envelope.payload, envelope.key_id if verify else "")
