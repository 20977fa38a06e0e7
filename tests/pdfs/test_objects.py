"""The object-store backend against moto's S3 server over real HTTP (tests/fixtures/s3.py says
why moto): content-addressed writes, each replica's read-through copy, objects an upstream put
and changed or deleted, the readiness check, and the shared index blobs."""

from __future__ import annotations

import hashlib
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest
from obstore.store import S3Store

from app.core.config import ConfigurationError, Settings
from app.pdfs.backends import build_storage
from app.pdfs.errors import InvalidSourcePath, PdfChanged, PdfMissing, StorageUnavailable
from app.pdfs.object_store import INDEX_PREFIX, ObjectBlobs
from app.pdfs.objects import ObjectPdfStorage
from app.services import ingest_file
from tests.fixtures.live import free_port
from tests.fixtures.pdfs import write_text_pdf
from tests.fixtures.s3 import S3Bucket

pytestmark = pytest.mark.slow  # a moto_server process


def _replica(bucket: S3Bucket, cache: Path) -> ObjectPdfStorage:
    """A replica's storage as the service builds it from the settings."""
    settings = Settings(_env_file=None, storage_url=bucket.url, storage_cache_dir=cache)
    storage = build_storage(settings, workers=None)
    assert isinstance(storage, ObjectPdfStorage)
    return storage


@pytest.fixture
def pdf_bytes(tmp_path: Path) -> bytes:
    path = write_text_pdf(tmp_path / "ferry.pdf", ["The ferry runs every hour from the pier."])
    return path.read_bytes()


def _other_pdf(tmp_path: Path) -> bytes:
    path = write_text_pdf(tmp_path / "bridge.pdf", ["The bridge toll rises by five per cent."])
    return path.read_bytes()


def test_a_new_replica_reads_through_its_own_cache(
    s3_bucket: S3Bucket, pdf_bytes: bytes, tmp_path: Path
) -> None:
    sha = hashlib.sha256(pdf_bytes).hexdigest()
    first = _replica(s3_bucket, tmp_path / "cache-a")
    saved = first.save(pdf_bytes, sha)
    assert (saved.source_path, saved.newly_stored) == (f"ingested/{sha}.pdf", True)
    stored = s3_bucket.store().head(saved.source_path)
    assert stored["size"] == len(pdf_bytes)

    # Same content again: nothing rewritten (the object keeps its version).
    assert first.save(pdf_bytes, sha).newly_stored is False
    assert s3_bucket.store().head(saved.source_path)["e_tag"] == stored["e_tag"]
    assert s3_bucket.store().head(saved.source_path)["last_modified"] == stored["last_modified"]

    # A second replica with an empty cache fetches it from the store, checked by its hash.
    second = _replica(s3_bucket, tmp_path / "cache-b")
    assert not (tmp_path / "cache-b").exists()
    facts = second.facts(saved.source_path)
    assert (facts.sha256, facts.page_count) == (sha, 1)
    path = second.verify(saved.source_path, sha)
    assert path == (tmp_path / "cache-b" / f"{sha}.pdf").resolve()
    assert path.read_bytes() == pdf_bytes
    assert second.read_verified(saved.source_path, sha) == pdf_bytes

    # A content-addressed copy, once here, needs no network: the same cache behind a store
    # that cannot be reached still verifies.
    offline = ObjectPdfStorage(_unreachable_store(s3_bucket), tmp_path / "cache-b")
    assert offline.verify(saved.source_path, sha) == path
    # ... while a replica without the copy says the store is unavailable (not that the PDF is
    # missing: it is not), naming no secret.
    with pytest.raises(StorageUnavailable) as unavailable:
        ObjectPdfStorage(_unreachable_store(s3_bucket), tmp_path / "cache-c").verify(
            saved.source_path, sha
        )
    assert "cannot be fetched now" in unavailable.value.message
    assert "test-secret-key" not in unavailable.value.message


def test_a_damaged_cached_copy_is_fetched_again(
    s3_bucket: S3Bucket, pdf_bytes: bytes, tmp_path: Path
) -> None:
    sha = hashlib.sha256(pdf_bytes).hexdigest()
    key = _replica(s3_bucket, tmp_path / "writer").save(pdf_bytes, sha).source_path
    reader = _replica(s3_bucket, tmp_path / "cache")
    copy = reader.verify(key, sha)
    copy.write_bytes(b"%PDF-1.7 not what was stored")
    assert reader.verify(key, sha).read_bytes() == pdf_bytes


def test_an_upstream_object_that_changes_is_pdf_changed(
    s3_bucket: S3Bucket, pdf_bytes: bytes, tmp_path: Path
) -> None:
    upstream = s3_bucket.store()
    upstream.put("reports/ferry.pdf", pdf_bytes)
    storage = _replica(s3_bucket, tmp_path / "cache")
    facts = storage.facts("reports/ferry.pdf")
    assert facts.sha256 == hashlib.sha256(pdf_bytes).hexdigest()
    assert storage.verify("reports/ferry.pdf", facts.sha256).read_bytes() == pdf_bytes

    other = _other_pdf(tmp_path)
    upstream.put("reports/ferry.pdf", other)
    with pytest.raises(PdfChanged) as changed:
        storage.verify("reports/ferry.pdf", facts.sha256)
    assert "re-ingest" in changed.value.message
    with pytest.raises(PdfChanged):
        storage.read_verified("reports/ferry.pdf", facts.sha256)
    # The object as it is now, for a viewer that asked without pinning the content.
    assert storage.current_file("reports/ferry.pdf").read_bytes() == other

    upstream.delete("reports/ferry.pdf")
    with pytest.raises(PdfMissing, match="missing from the object store"):
        storage.verify("reports/ferry.pdf", facts.sha256)


def test_a_deleted_content_addressed_object_is_missing_on_a_new_replica(
    s3_bucket: S3Bucket, pdf_bytes: bytes, tmp_path: Path
) -> None:
    sha = hashlib.sha256(pdf_bytes).hexdigest()
    key = _replica(s3_bucket, tmp_path / "writer").save(pdf_bytes, sha).source_path
    s3_bucket.store().delete(key)
    with pytest.raises(PdfMissing):
        _replica(s3_bucket, tmp_path / "new").verify(key, sha)
    with pytest.raises(InvalidSourcePath, match="upload it first"):
        _replica(s3_bucket, tmp_path / "new").facts(key)


def test_an_object_larger_than_an_upload_may_be_is_refused(
    s3_bucket: S3Bucket, pdf_bytes: bytes, tmp_path: Path
) -> None:
    s3_bucket.store().put("big.pdf", pdf_bytes)
    storage = ObjectPdfStorage(s3_bucket.store(), tmp_path / "cache", max_bytes=len(pdf_bytes) - 1)
    with pytest.raises(PdfChanged, match="HIGHLIGHT_MAX_PDF_BYTES"):
        storage.verify("big.pdf", hashlib.sha256(pdf_bytes).hexdigest())
    assert not list((tmp_path / "cache").glob("*.pdf"))


def test_problem_names_what_is_wrong_without_secrets(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    assert _replica(s3_bucket, tmp_path / "cache").problem() is None

    no_bucket = S3Bucket(s3_bucket.endpoint, "no-such-bucket")
    problem = _replica(no_bucket, tmp_path / "cache").problem()
    assert problem is not None
    assert "NoSuchBucket" in problem

    for endpoint in _dead_endpoints():
        with pytest.MonkeyPatch.context() as env:
            env.setenv("AWS_ENDPOINT_URL", endpoint)
            down = _replica(s3_bucket, tmp_path / "cache").problem()
        assert down is not None
        assert down.startswith(f"the object store {s3_bucket.url} ")
        assert "test-secret-key" not in down
        assert "127.0.0.1" not in down
        assert "\n" not in down


def test_index_blobs_are_shared_and_failures_are_misses(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    blobs = _replica(s3_bucket, tmp_path / "a").index_blobs()
    assert blobs.get(f"{'0' * 64}.v1.idx") is None
    blobs.put(f"{'0' * 64}.v1.idx", b"index bytes")
    # Another replica sees it; the object sits under index/ beside the PDFs.
    assert _replica(s3_bucket, tmp_path / "b").index_blobs().get(f"{'0' * 64}.v1.idx") == (
        b"index bytes"
    )
    assert s3_bucket.store().head(f"index/{'0' * 64}.v1.idx")["size"] == len(b"index bytes")
    # Names that are not plain file names never reach the store.
    blobs.put("../escape", b"x")
    assert blobs.get("../escape") is None

    unreachable = ObjectPdfStorage(_unreachable_store(s3_bucket), tmp_path / "c").index_blobs()
    assert unreachable.get(f"{'0' * 64}.v1.idx") is None
    unreachable.put(f"{'1' * 64}.v1.idx", b"lost")  # logged, not raised


def test_file_and_memory_urls(tmp_path: Path, pdf_bytes: bytes) -> None:
    sha = hashlib.sha256(pdf_bytes).hexdigest()
    for url in (f"file://{tmp_path / 'store'}", "memory://"):
        settings = Settings(
            _env_file=None, storage_url=url, storage_cache_dir=tmp_path / "cache" / url[:4]
        )
        storage = build_storage(settings, workers=None)
        assert storage.problem() is None
        key = storage.save(pdf_bytes, sha).source_path
        assert storage.save(pdf_bytes, sha).newly_stored is False
        assert storage.verify(key, sha).read_bytes() == pdf_bytes
    assert (tmp_path / "store" / "ingested" / f"{sha}.pdf").read_bytes() == pdf_bytes

    shutil.rmtree(tmp_path / "store")
    settings = Settings(_env_file=None, storage_url=f"file://{tmp_path / 'store'}")
    storage = build_storage(settings, workers=None)
    (tmp_path / "store").rmdir()
    problem = storage.problem()
    assert problem is not None
    assert str(tmp_path) not in problem


@pytest.mark.parametrize(
    ("url", "says"), [("s3://", "needs a bucket"), ("file://relative/pdfs", "absolute path")]
)
def test_unusable_urls_are_configuration_errors(url: str, says: str) -> None:
    settings = Settings(_env_file=None, storage_url=url)
    with pytest.raises(ConfigurationError, match=says):
        build_storage(settings, workers=None)


async def test_cli_ingest_stores_the_pdf_and_its_index_in_the_object_store(
    s3_bucket: S3Bucket, sample_pdf: Path, sqlite_template: Path, tmp_path: Path
) -> None:
    shutil.copyfile(sqlite_template, tmp_path / "highlight.db")
    settings = Settings(
        _env_file=None,
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'highlight.db'}",
        storage_url=s3_bucket.url,
        storage_cache_dir=tmp_path / "cache",
        index_cache_dir=None,
        index_signing_keys=["k1:a-test-key-of-thirty-two-characters"],
    )
    result = await ingest_file(settings, sample_pdf, "sample")
    sha = hashlib.sha256(sample_pdf.read_bytes()).hexdigest()
    assert result["source_path"] == f"ingested/{sha}.pdf"
    store = s3_bucket.store()
    assert store.head(f"ingested/{sha}.pdf")["size"] == sample_pdf.stat().st_size
    # The text index built at ingest is shared, so no replica builds it cold.
    indexes = [meta["path"] for batch in store.list("index") for meta in batch]
    assert [PurePosixPath(path).name.split(".")[0] for path in indexes] == [sha]


def _dead_endpoints() -> Iterator[str]:
    """A port where nothing listens, and one that accepts connections but never answers."""
    yield f"http://127.0.0.1:{free_port()}"
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        yield f"http://127.0.0.1:{silent.getsockname()[1]}"
    finally:
        silent.close()


def _unreachable_store(bucket: S3Bucket) -> S3Store:
    return S3Store(
        bucket.bucket,
        prefix=bucket.prefix,
        endpoint=f"http://127.0.0.1:{free_port()}",
        access_key_id="k",
        secret_access_key="test-secret-key-not-for-logs",
        region="us-east-1",
        client_options={"allow_http": True, "connect_timeout": "1s"},
        retry_config={"max_retries": 0},
    )


def test_an_index_blob_larger_than_any_index_is_a_miss_before_it_is_read(
    s3_bucket: S3Bucket, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"{'2' * 64}.v1.idx"
    s3_bucket.store().put(f"{INDEX_PREFIX}{name}", b"x" * 2048)
    assert ObjectBlobs(s3_bucket.store(), max_bytes=4096).get(name) == b"x" * 2048
    assert ObjectBlobs(s3_bucket.store(), max_bytes=1024).get(name) is None
    assert "2048 bytes, more than an index can be" in caplog.text
