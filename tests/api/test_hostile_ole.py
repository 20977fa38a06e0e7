"""Hostile OLE compound files through PUT /v2/documents/{id}/file: each is refused with its reason
after one bounded look at its container (tests/core/test_ole.py counts that look's sectors and
bytes), nothing converted or stored. Checked against olefile 0.47, which spends 85 s of CPU on
the 2 KB FAT-list loop (200 turns of it; this one has a million)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.api.test_office import upload
from tests.fixtures import hostile_ole
from tests.fixtures.app import app_client, make_settings

# The app with its PDF worker processes: `make test-fast` leaves it out.
pytestmark = pytest.mark.slow


@pytest.fixture
def sqlite_url(sqlite_template: Path, tmp_path: Path) -> str:
    shutil.copyfile(sqlite_template, tmp_path / "highlight.db")
    return f"sqlite+aiosqlite:///{tmp_path / 'highlight.db'}"


@pytest.mark.parametrize(
    ("make", "status", "said"),
    [
        (
            hostile_ole.looping_fat_list,
            422,
            "claims 127000109 table sectors (listed in 1000000 more) in a file of 3",
        ),
        (hostile_ole.looping_directory, 422, "a chain of sectors loops"),
        (hostile_ole.looping_tree, 422, "tree comes back to an entry"),
        (hostile_ole.looping_slides, 422, "a chain of sectors loops"),
        # 45 MB of directory at the root, under HIGHLIGHT_MAX_OFFICE_BYTES: its first 10,000
        # entries are looked at, none a legacy Office stream.
        (lambda: hostile_ole.wide_directory(45), 415, "an OLE compound file that is not a Word"),
    ],
    ids=["fat list loop", "directory loop", "tree loop", "slides loop", "45 MB directory"],
)
async def test_a_hostile_ole_file_is_refused_with_its_reason_before_any_conversion(
    make: Callable[[], bytes], status: int, said: str, sqlite_url: str, tmp_path: Path
) -> None:
    settings = make_settings(sqlite_url, tmp_path / "pdfs")
    async with app_client(settings) as client:
        response = await upload(client, "hostile", make(), "hostile.doc")
        assert (await client.get("/v2/documents/hostile")).status_code == 404
        assert (await client.get("/healthz")).status_code == 200
    assert response.status_code == status, response.text
    message = response.json()["error"]["message"]
    assert said in message
    if status == 422:
        assert "it is damaged or was cut short" in message
    for kept in ("converted", "originals", "ingested"):
        assert not (settings.pdf_root / kept).exists(), kept


@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice (soffice) is needed")
async def test_a_word_file_claiming_4_gb_streams_goes_to_libreoffice_and_is_its_422(
    sqlite_url: str, tmp_path: Path
) -> None:
    # Its container reads (what it claims is not believed, what is there is read): the type is
    # Word, and the document, a FIB and zeros, is LibreOffice's to refuse, within its limits.
    settings = make_settings(sqlite_url, tmp_path / "pdfs")
    async with app_client(settings) as client:
        response = await upload(client, "hostile", hostile_ole.huge_claims(), "hostile.doc")
        assert (await client.get("/v2/documents/hostile")).status_code == 404
    assert response.status_code == 422, response.text
    assert "hostile.doc" in response.json()["error"]["message"]
