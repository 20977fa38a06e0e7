"""Whom the index cache believes (``index_cache.py``, ``index_signing.py``): the shared store
only with keys and only what they signed, keys rotated without rebuilds, a local folder without
keys only while it is private; every refusal counted and logged once, without the key."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from app.pdfs.index_cache import IndexCache, blob_name
from app.pdfs.index_codec import encode_index
from app.pdfs.index_signing import Binding, SigningKey, SigningKeys, open_blob, seal
from app.pdfs.storage import sha256_of_file
from tests.alignment.conftest import make_sample_pdf
from tests.pdfs.test_cli_and_cache import Builds, MemoryBlobs, stored_index

OLD = SigningKey("2026-05", b"the old key of thirty-two characters")
NEW = SigningKey("2026-11", b"the new key of thirty-two characters")


@pytest.fixture(scope="module")
def layout_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sample_pdf(tmp_path_factory.mktemp("layout") / "sample.pdf")


@pytest.fixture(scope="module")
def payload(layout_pdf: Path) -> bytes:
    return encode_index(Builds(layout_pdf)())


def _rejected(source: str, reason: str) -> float:
    labels = {"source": source, "reason": reason}
    return REGISTRY.get_sample_value("highlight_index_blobs_rejected_total", labels) or 0.0


def test_without_keys_the_shared_store_is_neither_read_nor_written(
    layout_pdf: Path, payload: bytes, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store, sha = MemoryBlobs(), sha256_of_file(layout_pdf)
    store.blobs[blob_name(sha)] = seal(payload, Binding(sha), NEW)
    build = Builds(layout_pdf)
    with caplog.at_level(logging.WARNING):
        cache = IndexCache(tmp_path, shared=store)
        assert cache.get(sha, build).page_count == 4
    assert (build.count, store.gets, store.puts) == (1, 0, 0)
    assert "without HIGHLIGHT_INDEX_SIGNING_KEYS" in caplog.text
    # Its own folder is used: the next process of this replica reads it without a build.
    IndexCache(tmp_path, shared=store).get(sha, build)
    assert build.count == 1


def test_rotation_re_signs_with_the_new_key_and_a_dropped_key_costs_a_rebuild(
    layout_pdf: Path, payload: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    store, sha = MemoryBlobs(), sha256_of_file(layout_pdf)
    name = blob_name(sha)
    store.blobs[name] = seal(payload, Binding(sha), OLD)
    # Step 1: the new key added first; the old one's blob is believed, and signed again.
    build = Builds(layout_pdf)
    IndexCache(shared=store, signing=SigningKeys([NEW, OLD])).get(sha, build)
    assert build.count == 0
    assert open_blob(store.blobs[name], Binding(sha), SigningKeys([NEW])).key_id == NEW.key_id
    # Step 2: the old key dropped; what the new one signed needs no build.
    IndexCache(shared=store, signing=SigningKeys([NEW])).get(sha, build)
    assert build.count == 0
    # A blob only the dropped key signed: rebuilt, counted, and signed by the new key.
    store.blobs[name] = seal(payload, Binding(sha), OLD)
    before = _rejected("shared", "unknown_key")
    with caplog.at_level(logging.WARNING):
        IndexCache(shared=store, signing=SigningKeys([NEW])).get(sha, build)
    assert build.count == 1
    assert _rejected("shared", "unknown_key") == before + 1
    assert open_blob(store.blobs[name], Binding(sha), SigningKeys([NEW])).key_id == NEW.key_id
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith(f"shared index {name} is unusable and is replaced (unknown_key: ")
    for key in (OLD, NEW):
        assert key.secret.decode() not in caplog.text


def test_with_keys_the_local_folder_is_verified_too(
    layout_pdf: Path, payload: bytes, tmp_path: Path
) -> None:
    sha = sha256_of_file(layout_pdf)
    local = tmp_path / blob_name(sha)
    build = Builds(layout_pdf)
    for planted, reason in [
        (seal(payload, Binding(sha), None), "unsigned"),  # written before the keys were set
        (seal(payload, Binding(sha), OLD), "unknown_key"),
        (seal(payload, Binding("0" * 64), NEW), "wrong_pdf"),
    ]:
        local.write_bytes(planted)
        before = _rejected("local", reason)
        IndexCache(tmp_path, signing=SigningKeys([NEW])).get(sha, build)
        assert _rejected("local", reason) == before + 1
        assert open_blob(local.read_bytes(), Binding(sha), SigningKeys([NEW])).key_id == "2026-11"
    assert build.count == 3


def test_without_keys_a_folder_others_may_write_is_not_used(
    layout_pdf: Path, payload: bytes, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sha = sha256_of_file(layout_pdf)
    folder = tmp_path / "shared-folder"
    folder.mkdir()
    os.chmod(folder, 0o777)
    # What another user could plant there: believed, it would be used unverified.
    (folder / blob_name(sha)).write_bytes(seal(payload, Binding(sha), None))
    build = Builds(layout_pdf)
    with caplog.at_level(logging.WARNING):
        assert IndexCache(folder).get(sha, build).page_count == 4
    assert build.count == 1
    assert "HIGHLIGHT_INDEX_CACHE_DIR) is not used" in caplog.text
    # A folder the cache makes itself is private; its files are read back unverified.
    made = tmp_path / "made" / "here"
    IndexCache(made).get(sha, build)
    assert oct(made.stat().st_mode & 0o777) == oct(0o700)
    again = Builds(layout_pdf)
    assert stored_index((made / blob_name(sha)).read_bytes(), sha).page_count == 4
    IndexCache(made).get(sha, again)
    assert again.count == 0
