"""Legacy Office files (DOC, PPT, XLS) through PUT /v2/documents/{id}/file and `ingest`: real files
that LibreOffice saved from the generated DOCX, PPTX and XLSX (``legacy_files``, made once per
session), converted back to PDF by the real LibreOffice, chunked and highlighted: the cited
sentence's words are under the rectangles (read by poppler); `highlight-service ingest` of a .doc
too. The refusals with their reasons: a password-protected file (real DOC and XLS, a crafted PPT:
tests/fixtures/legacy_office.py), a damaged one, another kind of compound file; each before
anything is converted or stored."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import httpx
import pytest

from app.core.config import Settings
from tests.api.test_office import highlight_and_check, upload
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.hostile_ole import cut, lost_table_stream
from tests.fixtures.ole import Tree, compound_file
from tests.test_cli import cli_env, run_cli

pytestmark = pytest.mark.skipif(
    shutil.which("soffice") is None or shutil.which("pdftotext") is None,
    reason="LibreOffice (soffice) and poppler (pdftotext) are needed: .ci/run installs them",
)

LEGACY = ["doc", "ppt", "xls"]


def _settings(database_url: str, tmp_path: Path) -> Settings:
    return make_settings(database_url, tmp_path / "pdfs")


@pytest.fixture
def sqlite_url(sqlite_template: Path, tmp_path: Path) -> str:
    shutil.copyfile(sqlite_template, tmp_path / "highlight.db")
    return f"sqlite+aiosqlite:///{tmp_path / 'highlight.db'}"


@pytest.mark.parametrize("fmt", LEGACY)
async def test_each_legacy_format_is_converted_chunked_and_highlighted(
    fmt: str, legacy_files: dict[str, bytes], sqlite_url: str, tmp_path: Path
) -> None:
    data = legacy_files[fmt]
    name = f"Ferry_timetable.{fmt}"
    async with app_client(_settings(sqlite_url, tmp_path)) as client:
        response = await upload(client, f"ferry-{fmt}", data, name)
        assert response.status_code == 201, response.text
        body = response.json()
        assert (body["source_format"], body["original_name"]) == (fmt, name)
        assert body["source_path"] == f"ingested/{body['sha256']}.pdf"
        await highlight_and_check(client, body["chunks"][0]["id"], fmt, name, tmp_path)
        document = (await client.get(f"/v2/documents/ferry-{fmt}")).json()
        assert (document["source_format"], document["original_name"]) == (fmt, name)
    original = hashlib.sha256(data).hexdigest()
    assert (tmp_path / "pdfs" / "originals" / f"{original}.{fmt}").read_bytes() == data


async def test_a_doc_named_xls_and_sent_as_excel_is_taken_as_a_doc(
    legacy_files: dict[str, bytes], sqlite_url: str, tmp_path: Path
) -> None:
    data = legacy_files["doc"]
    async with app_client(_settings(sqlite_url, tmp_path)) as client:
        response = await client.put(
            "/v2/documents/ferry/file",
            params={"filename": "ferry.xls", "chunk": "true"},
            content=data,
            headers={"content-type": "application/vnd.ms-excel"},
        )
        assert response.status_code == 201, response.text
        assert response.json()["source_format"] == "doc"
        await highlight_and_check(client, "ferry-c0000", "doc", "ferry.xls", tmp_path)
    original = hashlib.sha256(data).hexdigest()
    assert (tmp_path / "pdfs" / "originals" / f"{original}.doc").is_file()


async def test_the_same_doc_again_is_converted_once_and_keeps_its_highlights(
    legacy_files: dict[str, bytes], database_url: str, tmp_path: Path
) -> None:
    data = legacy_files["doc"]
    original = hashlib.sha256(data).hexdigest()
    async with app_client(_settings(database_url, tmp_path)) as client:
        first = (await upload(client, "ferry", data, "ferry.doc")).json()
        result = await highlight_and_check(
            client, first["chunks"][0]["id"], "doc", "ferry.doc", tmp_path
        )
        again = await upload(client, "ferry", data, "ferry.doc")
        assert again.status_code == 200, again.text
        assert (again.json()["sha256"], again.json()["changed"]) == (first["sha256"], False)
        other = (await upload(client, "ferry-copy", data, "copy.doc")).json()
        assert other["sha256"] == first["sha256"]
        stored = await client.get(f"/v2/highlights/{result['highlights'][0]['highlight_id']}")
        assert stored.status_code == 200, stored.text
        assert stored.json()["source_format"] == "doc"
    root = tmp_path / "pdfs"
    assert (root / "converted" / f"{original}.sha256").read_text() == first["sha256"]
    # One conversion: one PDF stored for the three uploads.
    assert [p.name for p in (root / "ingested").iterdir()] == [f"{first['sha256']}.pdf"]


async def test_highlight_service_ingest_takes_a_doc_by_its_content(
    legacy_files: dict[str, bytes], tmp_path: Path
) -> None:
    # The command as a user runs it (a real process), on a file whose name says text.
    path = tmp_path / "Ferry timetable (1998).txt"
    path.write_bytes(legacy_files["doc"])
    env = cli_env(tmp_path)
    first = run_cli("ingest", str(path), "--document-id", "ferry", env=env)
    assert first.returncode == 0, first.stderr
    stored = json.loads(first.stdout)
    assert (stored["source_format"], stored["original_name"], stored["created"]) == (
        "doc",
        path.name,
        True,
    )
    again = run_cli("ingest", str(path), "--document-id", "ferry", env=env)
    assert json.loads(again.stdout)["changed"] is False
    settings = make_settings(env["HIGHLIGHT_DATABASE_URL"], tmp_path / "pdfs")
    async with app_client(settings) as client:
        await highlight_and_check(client, "ferry-c0000", "doc", path.name, tmp_path)


# -- refusals ----------------------------------------------------------------------------------


async def _refused(settings: Settings, data: bytes, filename: str) -> httpx.Response:
    """The upload's answer; no document made, and nothing converted or kept."""
    async with app_client(settings) as client:
        response = await upload(client, "ferry", data, filename)
        assert (await client.get("/v2/documents/ferry")).status_code == 404
    for kept in ("converted", "originals", "ingested"):
        assert not (settings.pdf_root / kept).exists(), kept
    return response


@pytest.mark.parametrize("fmt", LEGACY)
async def test_a_password_protected_legacy_file_is_422_saying_so(
    fmt: str, protected_legacy_files: dict[str, bytes], sqlite_url: str, tmp_path: Path
) -> None:
    settings = _settings(sqlite_url, tmp_path)
    response = await _refused(settings, protected_legacy_files[fmt], f"secret.{fmt}")
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert "the file is password-protected" in error["message"]
    assert "remove the password" in error["message"]
    assert error["details"] == {"detected": "encrypted"}


async def test_a_workbook_with_excels_default_password_is_converted_and_highlighted(
    protected_legacy_files: dict[str, bytes], sqlite_url: str, tmp_path: Path
) -> None:
    # Encrypted with the password Excel uses for a password to modify only: LibreOffice opens
    # it without asking, so it is no password-protected file.
    data = protected_legacy_files["xls with the default password"]
    async with app_client(_settings(sqlite_url, tmp_path)) as client:
        response = await upload(client, "budget", data, "budget.xls")
        assert response.status_code == 201, response.text
        chunk = response.json()["chunks"][0]["id"]
        await highlight_and_check(client, chunk, "xls", "budget.xls", tmp_path)


async def test_a_cut_legacy_file_is_422_saying_it_is_damaged_before_any_conversion(
    legacy_files: dict[str, bytes], sqlite_url: str, tmp_path: Path
) -> None:
    settings = _settings(sqlite_url, tmp_path)
    response = await _refused(settings, cut(legacy_files["doc"]), "minutes.doc")
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert "cannot be read" in error["message"]
    assert "it is damaged or was cut short" in error["message"]
    assert error["details"] == {"detected": "broken ole"}


async def test_a_doc_libreoffice_cannot_read_is_the_conversions_422(
    legacy_files: dict[str, bytes], sqlite_url: str, tmp_path: Path
) -> None:
    # The container and the FIB are sound, the document is not (its table stream is gone):
    # told only by converting it.
    settings = _settings(sqlite_url, tmp_path)
    damaged = lost_table_stream(legacy_files["doc"])
    async with app_client(settings) as client:
        response = await upload(client, "ferry", damaged, "minutes.doc")
        assert (await client.get("/v2/documents/ferry")).status_code == 404
    assert response.status_code == 422, response.text
    message = response.json()["error"]["message"]
    assert "minutes.doc could not be converted to PDF" in message
    assert "send it as a PDF" in message


@pytest.mark.parametrize(
    ("tree", "named"),
    [
        ({"__properties_version1.0": bytes(64), "__substg1.0_0037001F": b"Ferry times"},
         "an Outlook message (.msg)"),
        ({"VisioDocument": bytes(5000)}, "a Visio drawing (.vsd)"),
        ({"Contents": bytes(64)}, "an OLE compound file that is not a Word, PowerPoint or Excel"),
    ],
    ids=["msg", "vsd", "other"],
)  # fmt: skip
async def test_another_ole_file_is_415_naming_it(
    tree: Tree, named: str, sqlite_url: str, tmp_path: Path
) -> None:
    settings = _settings(sqlite_url, tmp_path)
    response = await _refused(settings, compound_file(tree), "ferry.doc")
    assert response.status_code == 415, response.text
    assert named in response.json()["error"]["message"]
