"""The SQLite file deleted, replaced or damaged under a running service: 503 database_unavailable,
/healthz not ok, and never a write acknowledged that went to a file nobody will read again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.db.migrate import upgrade
from tests.api.helpers import CHUNK_MAIN, ingest_sample
from tests.api.test_highlights import batch
from tests.fixtures.app import app_client, make_settings

DOC = {
    "source_path": "sample/sample-assembly.pdf",
    "chunks": [{"id": "w-1", "text": "The House met.", "page_start": 1, "page_end": 1}],
}


def _remove_database(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _sqlite(tmp_path: Path, sqlite_template: Path) -> tuple[str, Path]:
    path = tmp_path / "live.db"
    path.write_bytes(sqlite_template.read_bytes())
    return f"sqlite+aiosqlite:///{path}", path


async def _assert_unavailable(client: Any) -> None:
    put = await client.put("/v2/documents/w", json=DOC)
    assert put.status_code == 503, put.text
    assert put.json()["error"]["code"] == "database_unavailable"
    assert put.headers["retry-after"]
    highlights = await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))
    assert highlights.status_code == 503, highlights.text
    assert int(highlights.headers["retry-after"]) >= 1
    health = await client.get("/healthz")
    assert health.status_code == 503
    assert health.json()["database"] == "unreachable"
    assert int(health.headers["retry-after"]) >= 1


async def test_deleted_sqlite_file_is_503_and_not_recreated_empty(
    tmp_path: Path, pdf_root: Path, sqlite_template: Path
) -> None:
    url, path = _sqlite(tmp_path, sqlite_template)
    settings = make_settings(url, pdf_root)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        assert (await client.get("/healthz")).status_code == 200
        ok = await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))
        assert ok.status_code == 200  # a pooled connection to the file now exists
        _remove_database(path)
        await _assert_unavailable(client)
    assert not path.exists(), "the service must not create a new, empty database"


async def test_damaged_sqlite_file_is_503(
    tmp_path: Path, pdf_root: Path, sqlite_template: Path
) -> None:
    url, path = _sqlite(tmp_path, sqlite_template)
    settings = make_settings(url, pdf_root)
    await ingest_sample(settings)
    async with app_client(settings) as client:
        assert (await client.get("/healthz")).status_code == 200
        with path.open("r+b") as handle:  # in place: same inode, garbage content
            handle.write(b"this is no longer a database" * 200)
        await _assert_unavailable(client)


async def test_write_to_a_file_deleted_mid_request_is_not_acknowledged(
    tmp_path: Path, pdf_root: Path, sqlite_template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.documents import repository

    url, path = _sqlite(tmp_path, sqlite_template)
    original = repository.replace_chunks

    async def delete_then_write(*args: Any) -> None:
        _remove_database(path)  # an operator's cleanup racing the request
        await original(*args)

    monkeypatch.setattr(repository, "replace_chunks", delete_then_write)
    async with app_client(make_settings(url, pdf_root)) as client:
        response = await client.put("/v2/documents/w", json=DOC)
    # The rows went to an unlinked file: telling the client 201 would lose them silently.
    assert response.status_code == 503, response.text
    assert "retry" in response.json()["error"]["message"]

    monkeypatch.setattr(repository, "replace_chunks", original)
    upgrade(url)  # the operator restores an empty database; the client retries
    async with app_client(make_settings(url, pdf_root)) as client:
        assert (await client.get("/v2/documents/w")).status_code == 404
        assert (await client.put("/v2/documents/w", json=DOC)).status_code == 201
