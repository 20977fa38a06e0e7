"""The probes as a platform would use them: /livez never depends on anything; /readyz is 503 with
a reason while the database is unreachable or behind this release's schema, while the storage is
unreachable, and from the moment shutdown begins; /healthz answers as before."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import httpx
import pytest

from app.db.migrate import downgrade, head_revisions, upgrade
from app.main import create_app
from tests.fixtures.app import app_client, make_settings


async def test_ready_on_a_migrated_database(database_url: str, pdf_root: Path) -> None:
    async with app_client(make_settings(database_url, pdf_root)) as client:
        live = await client.get("/livez")
        ready = await client.get("/readyz")
        health = await client.get("/healthz")
    assert live.status_code == 200, live.text
    assert live.json() == {"status": "alive"}
    assert ready.status_code == 200, ready.text
    assert ready.json() == {
        "status": "ready",
        "database": "ok",
        "storage": "ok",
        "shutting_down": False,
        "problems": [],
    }
    assert health.status_code == 200


def _sqlite_copy(tmp_path: Path, template: Path) -> tuple[str, Path]:
    path = tmp_path / "probe.db"
    shutil.copyfile(template, path)
    return f"sqlite+aiosqlite:///{path}", path


async def test_behind_the_schema_is_not_ready_but_alive(
    tmp_path: Path, pdf_root: Path, sqlite_template: Path
) -> None:
    url, _ = _sqlite_copy(tmp_path, sqlite_template)
    downgrade(url, "0001")
    async with app_client(make_settings(url, pdf_root)) as client:
        live = await client.get("/livez")
        ready = await client.get("/readyz")
        upgrade(url)  # what the release's migration Job does
        after = await client.get("/readyz")
    assert live.status_code == 200
    assert ready.status_code == 503, ready.text
    body = ready.json()
    assert body["database"] == "not_migrated"
    (problem,) = body["problems"]
    assert "0001" in problem
    assert "highlight-service migrate" in problem
    assert all(head in problem for head in head_revisions())
    assert after.status_code == 200, after.text


async def test_database_gone_is_not_ready_but_alive(
    tmp_path: Path, pdf_root: Path, sqlite_template: Path
) -> None:
    url, path = _sqlite_copy(tmp_path, sqlite_template)
    async with app_client(make_settings(url, pdf_root)) as client:
        assert (await client.get("/readyz")).status_code == 200
        path.unlink()
        Path(f"{path}-wal").unlink(missing_ok=True)
        Path(f"{path}-shm").unlink(missing_ok=True)
        ready = await client.get("/readyz")
        live = await client.get("/livez")
    assert ready.status_code == 503, ready.text
    assert ready.json()["database"] == "unreachable"
    assert ready.json()["problems"] == ["the database cannot be reached or has no schema"]
    assert live.status_code == 200


async def test_storage_gone_is_not_ready(
    tmp_path: Path, pdf_root: Path, sqlite_template: Path
) -> None:
    url, _ = _sqlite_copy(tmp_path, sqlite_template)
    async with app_client(make_settings(url, pdf_root)) as client:
        assert (await client.get("/readyz")).status_code == 200
        shutil.rmtree(pdf_root)
        ready = await client.get("/readyz")
    assert ready.status_code == 503, ready.text
    body = ready.json()
    assert body["storage"] == "unreachable"
    assert body["database"] == "ok"
    assert body["problems"]
    assert str(tmp_path) not in " ".join(body["problems"])


async def test_not_ready_once_shutdown_begins(
    tmp_path: Path, pdf_root: Path, sqlite_template: Path
) -> None:
    url, _ = _sqlite_copy(tmp_path, sqlite_template)
    settings = make_settings(url, pdf_root)
    app = create_app(settings)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client,
    ):
        assert (await client.get("/readyz")).status_code == 200
        app.state.services.highlights.begin_shutdown()  # what SIGTERM does (app/server.py)
        ready = await client.get("/readyz")
        live = await client.get("/livez")
    assert ready.status_code == 503
    assert int(ready.headers["retry-after"]) >= 1
    assert ready.json()["shutting_down"] is True
    assert ready.json()["problems"] == ["shutting down"]
    assert live.status_code == 200


@pytest.mark.parametrize("path", ["/livez", "/readyz", "/healthz"])
async def test_probes_need_no_token(
    path: str, tmp_path: Path, pdf_root: Path, sqlite_template: Path
) -> None:
    url, _ = _sqlite_copy(tmp_path, sqlite_template)
    settings = make_settings(url, pdf_root, auth_read_tokens=["r" * 32])
    async with app_client(settings) as client:
        assert (await client.get(path)).status_code == 200


async def test_a_schema_from_a_newer_release_stays_ready(
    tmp_path: Path, pdf_root: Path, sqlite_template: Path
) -> None:
    """During a rolling update the release's migration Job runs before the old pods stop: they
    must not all drop out of the load balancer (migrations keep the previous release working)."""
    url, path = _sqlite_copy(tmp_path, sqlite_template)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE alembic_version SET version_num = 'from-a-newer-release'")
    async with app_client(make_settings(url, pdf_root)) as client:
        ready = await client.get("/readyz")
    assert ready.status_code == 200, ready.text
