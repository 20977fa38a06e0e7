"""Bearer tokens and signed PDF links.

Tokens are compared in constant time: the candidate's SHA-256 digest against every configured
digest with ``hmac.compare_digest``, with no early exit, so neither timing nor length tells an
attacker how close a guess came.

A browser that opens a ``…/pdf#page=N`` link from a batch result cannot send a bearer token, so
with auth on the service signs those links (HMAC of the document id and an expiry time) and the
PDF endpoint accepts a valid signature in place of a token. A refused link is told apart
(``check_link``): an expired one is normal (a reader came back a day later) and gets a fresh
link from the chat answer; a tampered or cut one is worth a warning in the log.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Callable, Sequence
from enum import IntEnum, StrEnum

from pydantic import SecretStr


class LinkCheck(StrEnum):
    """A signed link's verdict; the values are what a refused link is logged with."""

    valid = "valid"
    absent = "absent"  # no signature: the request must carry a token
    expired = "expired"  # signed here, past its time
    incomplete = "incomplete"  # a signature without its expiry (the link was cut)
    tampered = "tampered"  # the signature does not match the document and expiry


class Scope(IntEnum):
    none = 0
    read = 1
    write = 2


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class TokenRegistry:
    def __init__(self, read: Sequence[SecretStr], write: Sequence[SecretStr]) -> None:
        self._tokens = [(_digest(t.get_secret_value()), Scope.read) for t in read] + [
            (_digest(t.get_secret_value()), Scope.write) for t in write
        ]
        secrets = sorted(t.get_secret_value() for t in (*read, *write))
        # Links stay valid across restarts and workers: the key is derived from the tokens.
        self._link_key = hashlib.sha256("\x00".join(["pdf-link", *secrets]).encode()).digest()

    @property
    def enabled(self) -> bool:
        return bool(self._tokens)

    def scope_of(self, token: str | None) -> Scope:
        if not token:
            return Scope.none
        candidate = _digest(token)
        granted = Scope.none
        for digest, scope in self._tokens:
            if hmac.compare_digest(candidate, digest) and scope > granted:
                granted = scope
        return granted

    def link_signature(self, document_id: str, expires: int) -> str:
        mac = hmac.new(self._link_key, f"{document_id}\n{expires}".encode(), hashlib.sha256)
        return base64.urlsafe_b64encode(mac.digest()[:24]).decode().rstrip("=")

    def link_is_valid(
        self,
        document_id: str,
        expires: int | None,
        signature: str | None,
        clock: Callable[[], float] = time.time,
    ) -> bool:
        return self.check_link(document_id, expires, signature, clock) is LinkCheck.valid

    def check_link(
        self,
        document_id: str,
        expires: int | None,
        signature: str | None,
        clock: Callable[[], float] = time.time,
    ) -> LinkCheck:
        """What a signed link's parameters are. ``expired`` only for a link this service signed
        (the signature matches): an edited expiry is ``tampered``, not a reason to tell the
        reader to wait for a fresh link."""
        if signature is None:
            return LinkCheck.absent
        if expires is None:
            return LinkCheck.incomplete
        expected = self.link_signature(document_id, expires).encode()
        if not hmac.compare_digest(expected, signature.encode("utf-8", "surrogatepass")):
            return LinkCheck.tampered
        return LinkCheck.expired if expires < clock() else LinkCheck.valid
