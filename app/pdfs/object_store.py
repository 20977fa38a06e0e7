"""The obstore side of the object-store backend: a store opened from
``HIGHLIGHT_STORAGE_URL`` (with bounded timeouts and retries), obstore's errors in one line
without URLs, paths or secrets, and the index blobs replicas share (``index/<name>``).
``objects.py`` builds the PDF storage on it.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, cast

from obstore.exceptions import NotFoundError, PermissionDeniedError, UnauthenticatedError
from obstore.store import LocalStore, MemoryStore, S3Store

from app.core.config import ConfigurationError
from app.pdfs.index_codec import MAX_BLOB_BYTES

if TYPE_CHECKING:
    from obstore.store import ClientConfig, ObjectStore, RetryConfig

log = logging.getLogger(__name__)

INDEX_PREFIX = "index/"
_BLOB_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$")

# A PDF of HIGHLIGHT_MAX_PDF_BYTES (100 MB) over a slow link still fits in the timeout; a dead
# endpoint is given up within the retry budget instead of obstore's default three minutes.
_CLIENT: ClientConfig = {"connect_timeout": "5s", "timeout": "120s"}
_RETRY: RetryConfig = {"max_retries": 3, "retry_timeout": timedelta(seconds=30)}
# The readiness probe: one try, bounded, so /readyz answers within about 2 s.
_PROBE_CLIENT: ClientConfig = {"connect_timeout": "1s", "timeout": "2s"}
_PROBE_RETRY: RetryConfig = {"max_retries": 0, "retry_timeout": timedelta(seconds=2)}
# Client options obstore would read from AWS_<NAME>, but drops once client_options are given
# (seen with obstore 0.12: AWS_ALLOW_HTTP was ignored next to a timeout); carried over here.
_CLIENT_ENV = (
    "allow_http",
    "allow_invalid_certificates",
    "proxy_url",
    "proxy_ca_certificate",
    "proxy_excludes",
)


def open_store(url: str) -> tuple[ObjectStore, ObjectStore, str]:
    """The store, a second client of it for the readiness probe (short timeouts, no retries),
    and how messages name it (never credentials or a server path)."""
    scheme, _, rest = url.partition("://")
    if scheme == "s3":
        bucket, _, prefix = rest.partition("/")
        if not bucket:
            raise ConfigurationError("HIGHLIGHT_STORAGE_URL: s3:// needs a bucket (s3://bucket/…)")
        carried = _client_env()
        key_prefix = prefix.strip("/") or None
        store = S3Store(
            bucket,
            prefix=key_prefix,
            client_options=cast("ClientConfig", {**_CLIENT, **carried}),
            retry_config=_RETRY,
        )
        probe = S3Store(
            bucket,
            prefix=key_prefix,
            client_options=cast("ClientConfig", {**_PROBE_CLIENT, **carried}),
            retry_config=_PROBE_RETRY,
        )
        return store, probe, f"the object store s3://{bucket}/{prefix.strip('/')}"
    if scheme == "file":
        root = Path(rest)
        if not root.is_absolute():
            raise ConfigurationError(
                "HIGHLIGHT_STORAGE_URL: file:// needs an absolute path (file:///srv/pdfs)"
            )
        local = LocalStore(root, mkdir=True)
        return local, local, "the local object store (HIGHLIGHT_STORAGE_URL)"
    if scheme == "memory":
        memory = MemoryStore()
        return memory, memory, "the in-memory object store"
    raise ConfigurationError("HIGHLIGHT_STORAGE_URL must start with s3://, file:// or memory://")


def _client_env() -> dict[str, str | bool]:
    carried: dict[str, str | bool] = {}
    for name in _CLIENT_ENV:
        value = os.environ.get(f"AWS_{name.upper()}")
        if value is not None:
            flag = name.startswith("allow_")
            carried[name] = value.strip().lower() in {"1", "true", "yes", "on"} if flag else value
    return carried


# S3 error codes that mean the credentials themselves are wrong; any other 403 (AccessDenied)
# means they are fine but may not do this here (a read-only key, a bucket policy).
_CREDENTIAL_CODES = frozenset(
    {
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "InvalidToken",
        "TokenRefreshRequired",
        "AuthorizationHeaderMalformed",
    }
)
CREDENTIALS_REFUSED = "the credentials were refused (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)"


def summary(exc: BaseException) -> str:
    """One line for an obstore error: the S3 error code or the transport's words, without the
    request's URL (which names the endpoint and key) or a local path. Credentials are blamed
    only when the store said they are wrong, not for every refusal."""
    text = str(exc)
    code = re.search(r"<Code>(\w+)</Code>", text)
    status = re.search(r"status code: (\d{3})", text)
    if isinstance(exc, UnauthenticatedError) or (code and code[1] in _CREDENTIAL_CODES):
        return CREDENTIALS_REFUSED
    if isinstance(exc, PermissionDeniedError) and not code:
        return "access denied (HTTP 403)"
    if code:
        return f"{code[1]}" + (f" (HTTP {status[1]})" if status else "")
    first = text.splitlines()[0] if text.strip() else type(exc).__name__
    words = first.rsplit(" - ", 1)[-1]
    words = re.sub(r"\b\w+://\S+", "…", words)
    words = re.sub(r"(?<![\w.])/[^\s:,]+", "…", words)
    return words.strip()[:200] or type(exc).__name__


class ObjectBlobs:
    """Index blobs under ``index/<name>`` in the store (``alignment.index.SharedBlobs``). A
    cache: a miss or any failure reads as None, a failed write is logged and forgotten."""

    def __init__(
        self, store: ObjectStore, prefix: str = INDEX_PREFIX, max_bytes: int = MAX_BLOB_BYTES
    ) -> None:
        self.store = store
        self.prefix = prefix
        self.max_bytes = max_bytes

    def _key(self, name: str) -> str | None:
        return f"{self.prefix}{name}" if _BLOB_NAME.match(name) else None

    def get(self, name: str) -> bytes | None:
        key = self._key(name)
        if key is None:
            return None
        try:
            result = self.store.get(key)
            # Before the body is read: a foreign or damaged object larger than any index could
            # be would otherwise be held in memory whole, only for the codec to refuse it.
            if result.meta["size"] > self.max_bytes:
                log.warning(
                    "shared index %s not read: %d bytes, more than an index can be",
                    name,
                    result.meta["size"],
                )
                return None
            return bytes(result.bytes())
        except (FileNotFoundError, NotFoundError):
            return None
        except Exception as exc:
            log.warning("shared index %s not read from the object store: %s", name, summary(exc))
            return None

    def put(self, name: str, data: bytes) -> None:
        key = self._key(name)
        if key is None:
            log.warning("shared index name %r refused (not a plain file name)", name)
            return
        try:
            self.store.put(key, data)
        except Exception as exc:
            log.warning("shared index %s not written to the object store: %s", name, summary(exc))


# How long a write probe's answer stands. Readiness is polled every few seconds by every
# replica's kubelet; a probe per poll would be a PUT and a DELETE per replica every few seconds,
# and a store that flaps would be hammered hardest when it is weakest.
WRITE_PROBE_INTERVAL_S = 60.0
WRITE_PROBE_PREFIX = ".readyz/"


class WriteProbe:
    """Whether this service may write to the store: a PUT and a DELETE of an empty object of its
    own (``.readyz/write-probe-<id>``), at most once per ``interval_s`` whatever asks, and never
    two at once (a caller arriving during a probe gets the last answer). Real writes report
    their outcome too (``note``), so an upload refused by the store makes the replica not ready
    at once, and one that succeeds makes it ready again."""

    def __init__(
        self,
        store: ObjectStore,
        name: str,
        interval_s: float = WRITE_PROBE_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.name = name
        self.interval_s = interval_s
        self.clock = clock
        self.key = f"{WRITE_PROBE_PREFIX}write-probe-{uuid.uuid4().hex[:12]}"
        self._lock = threading.Lock()
        self._known: tuple[float, str | None] | None = None  # (when, problem)
        self._probing = False

    def problem(self) -> str | None:
        """Blocking: why the store refuses this service's writes (one line), or None."""
        with self._lock:
            known = self._known
            fresh = known is not None and self.clock() - known[0] < self.interval_s
            if fresh or self._probing:
                return known[1] if known is not None else None
            self._probing = True
        try:
            problem = self._probe()
        finally:
            with self._lock:
                self._probing = False
        self.note(problem)
        return problem

    def note(self, problem: str | None) -> None:
        with self._lock:
            self._known = (self.clock(), problem)

    def refusal(self, exc: BaseException, operation: str) -> str:
        return f"{self.name} is not writable: {summary(exc)} on {operation}"

    def _probe(self) -> str | None:
        try:
            self.store.put(self.key, b"")
        except (PermissionDeniedError, UnauthenticatedError) as exc:
            return self.refusal(exc, "put")
        except Exception as exc:
            # A timeout or a 5xx says nothing about write permission, and standing for a minute
            # it would take every replica out at once; readiness's read check reports an
            # unreachable store on each call.
            log.warning("the write probe %s could not be put: %s", self.key, summary(exc))
            return None
        try:
            self.store.delete(self.key)
        except Exception as exc:  # uploads need PUT only; the empty probe object stays
            log.warning("the write probe %s was not deleted: %s", self.key, summary(exc))
        return None
