"""Office files through PUT /v2/documents/{id}/file and `ingest`: generated DOCX, PPTX, XLSX, ODT
and RTF converted by the real LibreOffice, chunked, highlighted by a batch (the word-overlap
judge, no LLM), and the highlight's rectangles read back with poppler over the converted PDF:
they cover the cited sentence's words. The same original again is the same PDF (no change, the
highlights kept), on SQLite and PostgreSQL, since the record of the conversion is stored."""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.core.config import Settings
from app.services import ingest_file
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.office import (
    FERRY,
    docx_bytes,
    odt_bytes,
    poppler_words,
    pptx_bytes,
    rtf_bytes,
    words_under,
    xlsx_bytes,
)
from tests.fixtures.s3 import S3Bucket

pytestmark = pytest.mark.skipif(
    shutil.which("soffice") is None or shutil.which("pdftotext") is None,
    reason="LibreOffice (soffice) and poppler (pdftotext) are needed: .ci/run installs them",
)

SENTENCES = FERRY
CITED = SENTENCES[0]
OCTETS = {"content-type": "application/octet-stream"}
MAKERS: dict[str, Callable[[list[str]], bytes]] = {
    "docx": docx_bytes,
    "pptx": pptx_bytes,
    "xlsx": xlsx_bytes,
    "odt": odt_bytes,
    "rtf": rtf_bytes,
}


def _settings(database_url: str, tmp_path: Path, **extra: Any) -> Settings:
    return make_settings(database_url, tmp_path / "pdfs", **extra)


def _batch(chunk_id: str) -> dict[str, Any]:
    return {
        "query": "When does the ferry to Lamu leave?",
        "answer": "The ferry to Lamu leaves the harbour every morning at seven [1].",
        "citations": [{"chunk_id": chunk_id, "citation_id": "1"}],
    }


async def upload(
    client: httpx.AsyncClient, document_id: str, data: bytes, filename: str, **params: Any
) -> httpx.Response:
    return await client.put(
        f"/v2/documents/{document_id}/file",
        params={"filename": filename, "chunk": "true", **params},
        content=data,
        headers=OCTETS,
    )


async def _covered_words(client: httpx.AsyncClient, result: dict[str, Any], tmp: Path) -> str:
    """The words poppler reads under the citation's highlight rectangles in the served PDF."""
    pdf = await client.get(result["pdf_url"])
    assert pdf.status_code == 200
    path = tmp / "served.pdf"
    path.write_bytes(pdf.content)
    rects = [r for h in result["highlights"] for r in h["rects"]]
    return " ".join(words_under(poppler_words(path), rects))


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


async def highlight_and_check(
    client: httpx.AsyncClient, chunk_id: str, fmt: str, name: str, tmp: Path
) -> dict[str, Any]:
    response = await client.post("/v2/highlights/batch", json=_batch(chunk_id))
    assert response.status_code == 200, response.text
    (result,) = response.json()["results"]
    assert result["status"] == "highlighted", result
    assert (result["source_format"], result["original_name"]) == (fmt, name)
    assert any(CITED in " ".join(h["display_text"].split()) for h in result["highlights"])
    covered = _words(await _covered_words(client, result, tmp))
    # Every word of the cited sentence is under a rectangle, and nothing of the next one.
    assert set(_words(CITED)) <= set(covered), covered
    assert "tickets" not in covered
    # The W3C selectors find the cited sentence in the document's text as the service serves it.
    served = await client.get(f"/v2/documents/{result['document_id']}/text")
    assert served.status_code == 200, served.text
    text = served.json()["text"]
    cited = [h for h in result["highlights"] if CITED in " ".join(h["display_text"].split())]
    for highlight in cited:
        quote, position = highlight["selectors"]
        assert (quote["type"], position["type"]) == ("TextQuoteSelector", "TextPositionSelector")
        assert text[position["start"] : position["end"]] == quote["exact"]
        assert text.count(quote["prefix"] + quote["exact"] + quote["suffix"]) == 1
        assert CITED in " ".join(quote["exact"].split())
    return dict(result)


@pytest.mark.parametrize("fmt", list(MAKERS))
async def test_each_office_format_is_converted_chunked_and_highlighted(
    fmt: str, sqlite_template: Path, tmp_path: Path
) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'highlight.db'}"
    shutil.copyfile(sqlite_template, tmp_path / "highlight.db")
    name = f"Ferry_timetable.{fmt}"
    async with app_client(_settings(database_url, tmp_path)) as client:
        response = await upload(client, f"ferry-{fmt}", MAKERS[fmt](SENTENCES), name)
        assert response.status_code == 201, response.text
        body = response.json()
        assert (body["source_format"], body["original_name"]) == (fmt, name)
        # The PDF's own title is empty: the file's name stands in, read as words.
        assert body["title"] == "Ferry timetable"
        assert body["source_path"] == f"ingested/{body['sha256']}.pdf"
        await highlight_and_check(client, body["chunks"][0]["id"], fmt, name, tmp_path)
        document = (await client.get(f"/v2/documents/ferry-{fmt}")).json()
        assert (document["source_format"], document["original_name"]) == (fmt, name)


async def test_a_word_placeholder_title_gives_way_to_the_original_name(
    sqlite_url: str, tmp_path: Path
) -> None:
    data = docx_bytes(SENTENCES, title="Microsoft Word - Document1")
    async with app_client(_settings(sqlite_url, tmp_path)) as client:
        body = (await upload(client, "ferry", data, "Ferry_timetable.docx")).json()
        result = await highlight_and_check(
            client, body["chunks"][0]["id"], "docx", "Ferry_timetable.docx", tmp_path
        )
        stored = await client.get(f"/v2/highlights/{result['highlights'][0]['highlight_id']}")
    assert body["title"] == result["document_title"] == "Ferry timetable"
    # What the viewer shows above the pages.
    assert stored.json()["document_title"] == "Ferry timetable"


async def test_the_same_docx_again_is_the_same_pdf_and_keeps_its_highlights(
    database_url: str, tmp_path: Path
) -> None:
    data = docx_bytes(SENTENCES, title="Ferry timetable 2026")
    original = hashlib.sha256(data).hexdigest()
    async with app_client(_settings(database_url, tmp_path)) as client:
        first = (await upload(client, "ferry", data, "ferry.docx")).json()
        assert (first["newly_stored"], first["created"], first["changed"]) == (True, True, True)
        assert first["title"] == "Ferry timetable 2026"  # the document's own title
        result = await highlight_and_check(
            client, first["chunks"][0]["id"], "docx", "ferry.docx", tmp_path
        )
        again = await upload(client, "ferry", data, "ferry.docx")
        assert again.status_code == 200, again.text
        second = again.json()
        assert second["sha256"] == first["sha256"]
        assert (second["newly_stored"], second["created"], second["changed"]) == (
            False,
            False,
            False,
        )
        # Another document id of the same original gets the same PDF, converted once.
        other = (await upload(client, "ferry-copy", data, "copy.docx")).json()
        assert other["sha256"] == first["sha256"]
        stored = await client.get(f"/v2/highlights/{result['highlights'][0]['highlight_id']}")
        assert stored.status_code == 200, stored.text
        assert (stored.json()["source_format"], stored.json()["original_name"]) == (
            "docx",
            "ferry.docx",
        )
    root = tmp_path / "pdfs"
    assert (root / "originals" / f"{original}.docx").read_bytes() == data
    assert (root / "converted" / f"{original}.sha256").read_text() == first["sha256"]


async def test_on_an_object_store_the_original_and_its_conversion_are_objects(
    sqlite_url: str, s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    data = docx_bytes(SENTENCES)
    original = hashlib.sha256(data).hexdigest()
    settings = _settings(
        sqlite_url,
        tmp_path,
        storage_url=s3_bucket.url,
        storage_cache_dir=tmp_path / "storage-cache",
    )
    async with app_client(settings) as client:
        first = (await upload(client, "ferry", data, "ferry.docx")).json()
        await highlight_and_check(client, first["chunks"][0]["id"], "docx", "ferry.docx", tmp_path)
    # Another replica (its own cache) finds the record and the PDF in the store.
    settings = settings.model_copy(update={"storage_cache_dir": tmp_path / "replica-cache"})
    async with app_client(settings) as client:
        again = (await upload(client, "ferry", data, "ferry.docx")).json()
    assert (again["sha256"], again["changed"], again["newly_stored"]) == (
        first["sha256"],
        False,
        False,
    )
    store = s3_bucket.store()
    assert bytes(store.get(f"originals/{original}.docx").bytes()) == data
    assert bytes(store.get(f"converted/{original}.sha256").bytes()).decode() == first["sha256"]


async def test_ingest_takes_an_office_file_by_its_content(
    sqlite_template: Path, tmp_path: Path
) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'highlight.db'}"
    shutil.copyfile(sqlite_template, tmp_path / "highlight.db")
    settings = _settings(database_url, tmp_path)
    # Named .txt, but it is a DOCX: the bytes decide.
    path = tmp_path / "ferry notes.txt"
    path.write_bytes(docx_bytes(SENTENCES))
    first = await ingest_file(settings, path, "ferry", None)
    assert (first["source_format"], first["original_name"], first["created"]) == (
        "docx",
        "ferry notes.txt",
        True,
    )
    again = await ingest_file(settings, path, "ferry", None)
    assert (again["changed"], again["source_path"]) == (False, first["source_path"])
    async with app_client(settings) as client:
        await highlight_and_check(client, "ferry-c0000", "docx", "ferry notes.txt", tmp_path)


# -- refusals ----------------------------------------------------------------------------------


async def _refused(settings: Settings, data: bytes, filename: str) -> httpx.Response:
    async with app_client(settings) as client:
        response = await upload(client, "ferry", data, filename)
        assert (await client.get("/v2/documents/ferry")).status_code == 404
    return response


@pytest.fixture
def sqlite_url(sqlite_template: Path, tmp_path: Path) -> str:
    shutil.copyfile(sqlite_template, tmp_path / "highlight.db")
    return f"sqlite+aiosqlite:///{tmp_path / 'highlight.db'}"


async def test_a_png_named_docx_is_refused_naming_what_it_is(
    sqlite_url: str, tmp_path: Path
) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
    response = await _refused(_settings(sqlite_url, tmp_path), png, "report.docx")
    assert response.status_code == 415
    assert "PNG image" in response.json()["error"]["message"]


async def test_a_damaged_docx_is_refused_with_what_to_do(sqlite_url: str, tmp_path: Path) -> None:
    from tests.fixtures.office import broken_docx

    response = await _refused(_settings(sqlite_url, tmp_path), broken_docx(), "report.docx")
    assert response.status_code == 422, response.text
    message = response.json()["error"]["message"]
    assert "report.docx could not be converted to PDF" in message
    assert "send it as a PDF" in message


async def test_an_office_file_over_its_limit_is_refused(sqlite_url: str, tmp_path: Path) -> None:
    settings = _settings(sqlite_url, tmp_path, max_office_bytes=4096)
    response = await _refused(settings, docx_bytes(SENTENCES), "report.docx")
    assert response.status_code == 413
    assert "HIGHLIGHT_MAX_OFFICE_BYTES" in response.json()["error"]["message"]


async def test_a_conversion_past_its_time_is_refused_with_the_reason(
    sqlite_url: str, tmp_path: Path
) -> None:
    settings = _settings(sqlite_url, tmp_path, office_timeout_s=0.05)
    response = await _refused(settings, docx_bytes(SENTENCES), "report.docx")
    assert response.status_code == 422, response.text
    message = response.json()["error"]["message"]
    assert "was not converted to PDF within 0.05 s (HIGHLIGHT_OFFICE_TIMEOUT_S)" in message


async def test_without_libreoffice_an_office_file_is_a_415_saying_to_install_it(
    sqlite_url: str, tmp_path: Path
) -> None:
    settings = _settings(sqlite_url, tmp_path, soffice_path=str(tmp_path / "no-soffice"))
    response = await _refused(settings, docx_bytes(SENTENCES), "report.docx")
    assert response.status_code == 415
    assert "libreoffice-writer-nogui" in response.json()["error"]["message"]


async def test_a_filename_with_control_characters_is_refused(
    sqlite_url: str, tmp_path: Path
) -> None:
    response = await _refused(_settings(sqlite_url, tmp_path), docx_bytes(SENTENCES), "a\x00.docx")
    assert response.status_code == 422
    assert "filename" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("filename", "said"),
    [
        ("report\u202excod.docx", "U+202E"),  # a bidi override: shown as another name
        ("report\x85.docx", "U+0085"),  # a C1 control
        ("report\u200b.docx", "U+200B"),  # zero width
        (".", "names no file"),
        ("..", "names no file"),
        ("folder/..", "names no file"),
        ("folder\\", "names no file"),
    ],
)
async def test_a_filename_that_hides_characters_or_names_a_folder_is_refused(
    sqlite_url: str, tmp_path: Path, filename: str, said: str
) -> None:
    settings = _settings(sqlite_url, tmp_path)
    response = await _refused(settings, docx_bytes(SENTENCES), filename)
    assert response.status_code == 422, response.text
    message = response.json()["error"]["message"]
    assert "filename" in message
    assert said in message
