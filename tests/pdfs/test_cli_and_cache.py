"""The JSON-lines command and the index cache (memory, local files, a shared store)."""

from __future__ import annotations

import io
import json
import logging
import os
import pickle
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.alignment.index import INDEX_VERSION, DocumentIndex
from app.alignment.locate import locate
from app.pdfs.extract import build_index
from app.pdfs.index_cache import IndexCache, blob_name
from app.pdfs.index_codec import decode_index, encode_index
from app.pdfs.index_signing import Binding, SigningKey, SigningKeys, open_blob, seal
from app.pdfs.locate_cli import run
from app.pdfs.storage import sha256_of_file
from tests.alignment.conftest import REPEATED, make_sample_pdf
from tests.pdfs.test_index_codec import assert_same_index

# The deployment's key: the shared store is used only with one (index_signing.py).
KEYS = SigningKeys([SigningKey("k1", b"a test key of thirty-two characters!")])


def stored_index(blob: bytes, sha: str, keys: SigningKeys | None = None) -> DocumentIndex:
    """The index a cache file or shared blob holds, through its envelope: verified with
    ``keys``, or unverified (a file of the private folder of a deployment without keys)."""
    opened = open_blob(blob, Binding(sha), keys or SigningKeys(), verify=keys is not None)
    return decode_index(opened.payload)


@pytest.fixture(scope="module")
def layout_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The locator's layout PDF (tests/alignment/conftest.py), with its repeated sentence."""
    return make_sample_pdf(tmp_path_factory.mktemp("layout") / "sample.pdf")


@pytest.fixture(scope="module")
def layout_index(layout_pdf: Path) -> DocumentIndex:
    return build_index(layout_pdf)


def test_cli_answers_every_line(layout_pdf: Path) -> None:
    lines = [
        json.dumps({"id": 1, "quote": REPEATED, "pages": [3, 4]}),
        "not json",
        json.dumps({"id": "x", "quote": 5}),
        json.dumps({"id": 3, "quote": "a", "pages": [1]}),
        "",
        json.dumps({"id": 4, "quote": "Nothing like this appears anywhere in the sample file."}),
    ]
    stdout = io.StringIO()
    assert run(layout_pdf, io.StringIO("\n".join(lines) + "\n"), stdout) == 0
    out = [json.loads(line) for line in stdout.getvalue().splitlines()]
    assert [o["status"] for o in out] == ["found", "error", "error", "error", "no_match"]
    assert [o["id"] for o in out] == [1, None, "x", 3, 4]
    assert out[0]["score"] == 100.0
    assert out[0]["matched_text"].startswith("Meeting adjourned")
    assert {r["page"] for r in out[0]["rects"]} == {4}
    assert set(out[0]["rects"][0]) == {"page", "x0", "y0", "x1", "y1"}
    assert out[4]["rects"] == []
    assert all("message" in o for o in out[1:4])


def test_cli_missing_pdf(tmp_path: Path) -> None:
    assert run(tmp_path / "missing.pdf", io.StringIO(""), io.StringIO()) == 1


def test_index_pickles_for_the_worker_processes(layout_index: DocumentIndex) -> None:
    """PDF workers hand the built index back through pebble, which pickles it over a pipe
    between the service's own processes (the cache itself never reads a pickle)."""
    clone = pickle.loads(pickle.dumps(layout_index))
    assert locate(clone, REPEATED) == locate(layout_index, REPEATED)


class Builds:
    """A build that counts its calls (the cache's ``build`` argument)."""

    def __init__(self, pdf: Path) -> None:
        self.pdf = pdf
        self.count = 0

    def __call__(self) -> DocumentIndex:
        self.count += 1
        return build_index(self.pdf.read_bytes())


class MemoryBlobs:
    """An in-memory stand-in for the object store (the S3 implementation is tested against a
    real S3-compatible server elsewhere): the protocol's two calls, and a count of each."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.gets = 0
        self.puts = 0

    def get(self, name: str) -> bytes | None:
        self.gets += 1
        return self.blobs.get(name)

    def put(self, name: str, data: bytes) -> None:
        self.puts += 1
        self.blobs[name] = data


class BrokenBlobs:
    """A store that is down."""

    def get(self, name: str) -> bytes | None:
        raise ConnectionError("store unreachable")

    def put(self, name: str, data: bytes) -> None:
        raise ConnectionError("store unreachable")


def test_cache_memory_and_disk(layout_pdf: Path, tmp_path: Path) -> None:
    build = Builds(layout_pdf)
    sha = sha256_of_file(layout_pdf)
    cache = IndexCache(cache_dir=tmp_path, max_entries=2)
    first = cache.get(sha, build)
    assert cache.get(sha, build) is first
    assert build.count == 1
    assert [p.name for p in tmp_path.iterdir()] == [blob_name(sha)]
    assert blob_name(sha) == f"{sha}.v{INDEX_VERSION}.idx"
    from_disk = IndexCache(cache_dir=tmp_path).get(sha, build)
    assert build.count == 1
    assert from_disk is not first
    assert_same_index(first, from_disk)
    assert IndexCache().get(sha, build).page_count == 4
    assert build.count == 2


def test_builds_are_timed(layout_pdf: Path) -> None:
    seconds: list[float] = []
    cache = IndexCache(on_build=seconds.append)
    sha = sha256_of_file(layout_pdf)
    cache.get(sha, Builds(layout_pdf))
    cache.get(sha, Builds(layout_pdf))
    assert len(seconds) == 1
    assert seconds[0] > 0


def test_shared_blob_spares_a_new_replica_the_build(layout_pdf: Path, tmp_path: Path) -> None:
    store, sha = MemoryBlobs(), sha256_of_file(layout_pdf)
    first = Builds(layout_pdf)
    built = IndexCache(tmp_path / "one", shared=store, signing=KEYS).get(sha, first)
    assert first.count == 1
    assert list(store.blobs) == [blob_name(sha)]
    # Another replica: its own empty folder, the same store.
    second = Builds(layout_pdf)
    fetched = IndexCache(tmp_path / "two", shared=store, signing=KEYS).get(sha, second)
    assert second.count == 0
    assert_same_index(built, fetched)
    assert (tmp_path / "two" / blob_name(sha)).read_bytes() == store.blobs[blob_name(sha)]
    # Its next process reads its own folder, not the store.
    gets = store.gets
    IndexCache(tmp_path / "two", shared=store, signing=KEYS).get(sha, second)
    assert (store.gets, second.count) == (gets, 0)


def test_bad_shared_blob_is_rebuilt_and_replaced(
    layout_pdf: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store, sha = MemoryBlobs(), sha256_of_file(layout_pdf)
    store.blobs[blob_name(sha)] = b"HLINDEX\x00 but not really"
    build = Builds(layout_pdf)
    with caplog.at_level(logging.WARNING, logger="app.alignment.index"):
        IndexCache(shared=store, signing=KEYS).get(sha, build)
    assert build.count == 1
    assert stored_index(store.blobs[blob_name(sha)], sha, KEYS).page_count == 4
    (record,) = caplog.records
    assert record.getMessage().startswith(f"shared index {blob_name(sha)} is unusable")


def test_store_down_costs_a_build_not_the_request(layout_pdf: Path, tmp_path: Path) -> None:
    build = Builds(layout_pdf)
    cache = IndexCache(tmp_path, shared=BrokenBlobs(), signing=KEYS)
    index = cache.get(sha256_of_file(layout_pdf), build)
    assert (index.page_count, build.count) == (4, 1)
    assert len(list(tmp_path.glob("*.idx"))) == 1


def test_planted_pickle_is_never_run(
    layout_pdf: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A pickle under the cache's name that would create a file when loaded: it is not loaded,
    and a real index takes its place."""
    marker = tmp_path / "owned"
    payload = pickle.dumps(Planted(marker))
    sha = sha256_of_file(layout_pdf)
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    (cache_dir / blob_name(sha)).write_bytes(payload)
    build = Builds(layout_pdf)
    with caplog.at_level(logging.WARNING, logger="app.alignment.index"):
        index = IndexCache(cache_dir).get(sha, build)
    assert not marker.exists()
    assert (index.page_count, build.count) == (4, 1)
    assert stored_index((cache_dir / blob_name(sha)).read_bytes(), sha).chars == index.chars
    (record,) = caplog.records
    assert str(tmp_path) not in record.getMessage()  # no absolute paths in the log
    pickle.loads(payload)  # the payload was live: loading it is what the cache must not do
    assert marker.exists()


def test_planted_fifo_does_not_hang_the_reader(layout_pdf: Path, tmp_path: Path) -> None:
    sha = sha256_of_file(layout_pdf)
    os.mkfifo(tmp_path / blob_name(sha))
    build = Builds(layout_pdf)
    found: list[DocumentIndex] = []
    reader = threading.Thread(target=lambda: found.append(IndexCache(tmp_path).get(sha, build)))
    reader.start()
    reader.join(timeout=30)
    if reader.is_alive():  # unblock it: a writer at the other end ends its read
        (tmp_path / blob_name(sha)).write_bytes(b"")
        pytest.fail("reading a FIFO under the cache's name blocked")
    assert (found[0].page_count, build.count) == (4, 1)
    assert stored_index((tmp_path / blob_name(sha)).read_bytes(), sha).page_count == 4


class Planted:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[Path]]:
        return Path.touch, (self.marker,)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_any_damaged_file_is_rebuilt(
    layout_pdf: Path,
    layout_index: DocumentIndex,
    tmp_path_factory: pytest.TempPathFactory,
    data: st.DataObject,
) -> None:
    """Random bytes, a truncated blob, a flipped byte: a miss, rebuilt, and the file replaced."""
    sha = sha256_of_file(layout_pdf)
    blob = seal(encode_index(layout_index), Binding(sha), None)  # unsigned: a folder without keys
    damaged = data.draw(
        st.one_of(
            st.binary(max_size=256),
            st.integers(0, len(blob) - 1).map(lambda cut: blob[:cut]),
            st.tuples(st.integers(0, len(blob) - 1), st.integers(1, 255)).map(
                lambda flip: (
                    blob[: flip[0]] + bytes([blob[flip[0]] ^ flip[1]]) + blob[flip[0] + 1 :]
                )
            ),
        )
    )
    cache_dir = tmp_path_factory.mktemp("damaged")
    (cache_dir / blob_name(sha)).write_bytes(damaged)
    build = Builds(layout_pdf)
    assert IndexCache(cache_dir).get(sha, build).page_count == 4
    assert build.count == 1
    assert (cache_dir / blob_name(sha)).read_bytes() == blob


def test_keys_that_are_not_digests_name_no_file(layout_pdf: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a hex SHA-256"):
        IndexCache(tmp_path).get("../../etc/passwd", Builds(layout_pdf))
    assert IndexCache().get("any key in memory", Builds(layout_pdf)).page_count == 4


def test_cli_refuses_a_page_range_outside_the_pdf(layout_pdf: Path) -> None:
    """A range past the end names the page count (it used to answer no_text_layer, as if the
    pages were scans); one that starts before page 1 says pages are 1-based."""
    pages = build_index(layout_pdf).page_count
    lines = [
        json.dumps({"id": 1, "quote": REPEATED, "pages": [pages + 1, pages + 2]}),
        json.dumps({"id": 2, "quote": REPEATED, "pages": [0, 2]}),
        json.dumps({"id": 3, "quote": REPEATED, "pages": [pages, pages]}),
    ]
    stdout = io.StringIO()
    assert run(layout_pdf, io.StringIO("\n".join(lines) + "\n"), stdout) == 0
    past, before, last = (json.loads(line) for line in stdout.getvalue().splitlines())
    assert past == {
        "id": 1,
        "status": "error",
        "message": f"pages [{pages + 1}, {pages + 2}] is past the end: the PDF has {pages} pages",
    }
    assert before["status"] == "error"
    assert "1-based" in before["message"]
    assert last["status"] in ("found", "no_match")
