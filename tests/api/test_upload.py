"""PUT /v2/documents/{id}/pdf: the ingestion pipeline on another machine uploads the PDF, then
its chunks (or asks the service to chunk it), and batches highlight it; on the local folder and
on an S3-compatible object store (moto's server over real HTTP, tests/fixtures/s3.py), on SQLite
and PostgreSQL. Then every refusal, each with a message that says what to fix."""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pymupdf
import pytest

from app.core.config import Settings
from app.core.errors import BadRequest
from tests.core.test_error_contract import assert_documented, assert_error_body
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.pdfs import write_encrypted_pdf, write_scan_pdf, write_text_pdf
from tests.fixtures.s3 import S3Bucket

SENTENCES = [
    "The ferry to Lamu leaves the harbour every morning at seven.",
    "Tickets cost four hundred shillings for adults and half that for children.",
]
PDF = {"content-type": "application/pdf"}
URL = "/v2/documents/ferry/pdf"


def _batch(chunk_id: str) -> dict[str, Any]:
    return {
        "query": "When does the ferry leave and what does a ticket cost?",
        "answer": "The ferry leaves the harbour every morning at seven [1].",
        "citations": [{"chunk_id": chunk_id, "citation_id": "1"}],
    }


def _pdf(tmp_path: Path, footer: str = "", title: str = "Ferry timetable") -> bytes:
    path = tmp_path / f"ferry-{len(list(tmp_path.glob('ferry-*.pdf')))}.pdf"
    return write_text_pdf(
        path, [*SENTENCES, footer or "Printed by the county."], title
    ).read_bytes()


def _settings(database_url: str, tmp_path: Path, storage_url: str = "", **extra: Any) -> Settings:
    return make_settings(
        database_url,
        tmp_path / "pdfs",
        storage_url=storage_url,
        storage_cache_dir=tmp_path / "storage-cache",
        **extra,
    )


@pytest.fixture(params=["folder", pytest.param("s3", marks=pytest.mark.slow)])
def storage_url(request: pytest.FixtureRequest) -> str:
    """Both backends: the local folder (HIGHLIGHT_STORAGE_URL empty) and the object store."""
    if request.param == "folder":
        return ""
    bucket: S3Bucket = request.getfixturevalue("s3_bucket")
    return bucket.url


async def _highlighted(client: httpx.AsyncClient, chunk_id: str) -> dict[str, Any]:
    response = await client.post("/v2/highlights/batch", json=_batch(chunk_id))
    assert response.status_code == 200, response.text
    (result,) = response.json()["results"]
    return dict(result)


async def test_upload_then_the_documents_chunks_then_a_batch(
    database_url: str, storage_url: str, tmp_path: Path
) -> None:
    data = _pdf(tmp_path)
    sha = hashlib.sha256(data).hexdigest()
    settings = _settings(database_url, tmp_path, storage_url)
    async with app_client(settings) as client:
        first = await client.put(URL, content=data, headers=PDF, params={"sha256": sha})
        assert first.status_code == 201, first.text
        assert_documented(first)
        assert first.json() == {
            "document_id": "ferry",
            "sha256": sha,
            "source_path": f"ingested/{sha}.pdf",
            "page_count": 1,
            "title": "Ferry timetable",
            "newly_stored": True,
            "source_format": "pdf",
            "original_name": None,
            "created": None,
            "changed": None,
            "chunks": None,
        }
        version = _stored_version(settings, first.json()["source_path"])

        again = await client.put(URL, content=data, headers=PDF)
        assert again.status_code == 200
        assert again.json() == {**first.json(), "newly_stored": False}
        assert _stored_version(settings, first.json()["source_path"]) == version

        chunk = {"id": "ferry-1", "text": " ".join(SENTENCES), "page_start": 1, "page_end": 1}
        document = {"source_path": first.json()["source_path"], "chunks": [chunk]}
        put = await client.put("/v2/documents/ferry", json=document)
        assert put.status_code == 201, put.text
        assert put.json()["sha256"] == sha

        result = await _highlighted(client, "ferry-1")
        assert result["status"] == "highlighted", result
        assert result["highlights"][0]["page"] == 1
        pdf = await client.get(URL)
        assert (pdf.status_code, pdf.content) == (200, data)
        assert pdf.headers["etag"] == f'"{sha}"'


def _stored_version(settings: Settings, source_path: str) -> object:
    """What says whether the stored object was rewritten: its modification time (and e_tag)."""
    if not settings.storage_url:
        return (settings.pdf_root / source_path).stat().st_mtime_ns
    from app.pdfs.object_store import open_store

    store, _, _ = open_store(settings.storage_url)
    meta = store.head(source_path)
    return (meta["e_tag"], meta["last_modified"])


@pytest.mark.slow
async def test_chunk_true_ingests_in_one_call_and_a_new_replica_reads_it_through(
    database_url: str, s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    first_pdf = _pdf(tmp_path, "Edition one.")
    settings = _settings(database_url, tmp_path, s3_bucket.url)
    async with app_client(settings) as client:
        created = await client.put(URL, content=first_pdf, headers=PDF, params={"chunk": "true"})
        assert created.status_code == 201, created.text
        assert_documented(created)
        body = created.json()
        assert (body["created"], body["changed"], body["newly_stored"]) == (True, True, True)
        assert body["title"] == "Ferry timetable"
        assert [c["id"] for c in body["chunks"]] == ["ferry-c0000"]

        result = await _highlighted(client, "ferry-c0000")
        assert result["status"] == "highlighted", result
        old_highlight = result["highlights"][0]["highlight_id"]

        same = await client.put(URL, content=first_pdf, headers=PDF, params={"chunk": "true"})
        assert same.status_code == 200
        assert (same.json()["created"], same.json()["changed"]) == (False, False)
        assert same.json()["newly_stored"] is False

        # Another PDF under the same id replaces the document, as a document PUT does: the
        # earlier content's highlights are forgotten (the background task has run by now).
        second_pdf = _pdf(tmp_path, "Edition two.")
        replaced = await client.put(
            URL, content=second_pdf, headers=PDF, params={"chunk": "true", "title": "Ferry 2"}
        )
        assert replaced.status_code == 200, replaced.text
        assert (replaced.json()["created"], replaced.json()["changed"]) == (False, True)
        assert replaced.json()["title"] == "Ferry 2"
        # Its link still answers, and says why it no longer applies: 410, not "no such id".
        outdated = await client.get(f"/v2/highlights/{old_highlight}")
        assert_error_body(outdated, "pdf_changed")
        assert_documented(outdated)
        assert outdated.status_code == 410
        assert "ingested again with other content" in outdated.json()["error"]["message"]
        document = (await client.get("/v2/documents/ferry")).json()
        assert document["sha256"] == hashlib.sha256(second_pdf).hexdigest()

    # A second replica: same database and bucket, its own empty cache.
    replica = settings.model_copy(update={"storage_cache_dir": tmp_path / "replica-cache"})
    async with app_client(replica) as client:
        result = await _highlighted(client, "ferry-c0000")
        assert result["status"] == "highlighted", result
        assert (await client.get(URL)).content == second_pdf
    assert (tmp_path / "replica-cache" / f"{document['sha256']}.pdf").read_bytes() == second_pdf


@pytest.mark.slow
async def test_an_upstream_object_that_changes_or_goes_is_a_per_citation_reason(
    sqlite_url: str, s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    """The pipeline may put its own object and name it: then "changed" is the object's e_tag
    and size, then its hash."""
    upstream = s3_bucket.store()
    original = _pdf(tmp_path)
    upstream.put("reports/ferry.pdf", original)
    settings = _settings(sqlite_url, tmp_path, s3_bucket.url)
    chunk = {"id": "ferry-1", "text": " ".join(SENTENCES), "page_start": 1, "page_end": 1}
    async with app_client(settings) as client:
        put = await client.put(
            "/v2/documents/ferry", json={"source_path": "reports/ferry.pdf", "chunks": [chunk]}
        )
        assert put.status_code == 201, put.text
        assert (await _highlighted(client, "ferry-1"))["status"] == "highlighted"
        sha = put.json()["sha256"]

        edited = _pdf(tmp_path, "Edition two.")
        upstream.put("reports/ferry.pdf", edited)
        changed = await _highlighted(client, "ferry-1")
        assert (changed["status"], changed["reason"]) == ("fallback", "pdf_changed")
        pinned = await client.get(URL, params={"sha256": sha})
        assert_error_body(pinned, "pdf_changed")
        unpinned = await client.get(URL)
        # Served as it is now, but not under the ingested content's ETag.
        assert (unpinned.status_code, unpinned.content) == (200, edited)
        assert unpinned.headers["etag"] != f'"{sha}"'

        upstream.delete("reports/ferry.pdf")
        gone = await _highlighted(client, "ferry-1")
        assert (gone["status"], gone["reason"]) == ("fallback", "pdf_unavailable")
        assert (await client.get(URL)).status_code == 404

        # A document PUT naming an object that is not there says what to do.
        missing = await client.put(
            "/v2/documents/other", json={"source_path": "reports/none.pdf", "chunks": [chunk]}
        )
        assert missing.status_code == 422
        assert "upload it first" in missing.json()["error"]["message"]


@pytest.fixture
def sqlite_url(tmp_path: Path, sqlite_template: Path) -> str:
    shutil.copyfile(sqlite_template, tmp_path / "highlight.db")
    return f"sqlite+aiosqlite:///{tmp_path / 'highlight.db'}"


@pytest.fixture
async def client(sqlite_url: str, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    settings = _settings(sqlite_url, tmp_path, max_pdf_bytes=64 * 1024)
    async with app_client(settings) as client:
        yield client


async def test_refusals_say_what_to_fix(client: httpx.AsyncClient, tmp_path: Path) -> None:
    data = _pdf(tmp_path)

    as_json = await client.put(URL, content=data, headers={"content-type": "application/json"})
    assert_error_body(as_json, "unsupported_media_type")
    assert_documented(as_json)
    assert as_json.status_code == 415
    assert "application/pdf" in as_json.json()["error"]["message"]
    untyped = await client.put(URL, content=data)
    assert untyped.status_code == 415
    assert "no Content-Type" in untyped.json()["error"]["message"]

    empty = await client.put(URL, content=b"", headers=PDF)
    assert (empty.status_code, "empty" in empty.json()["error"]["message"]) == (422, True)
    not_pdf = await client.put(URL, content=b"<html>hello</html>", headers=PDF)
    assert not_pdf.status_code == 422
    assert "not a PDF" in not_pdf.json()["error"]["message"]

    wrong = hashlib.sha256(b"another file").hexdigest()
    mismatch = await client.put(URL, content=data, headers=PDF, params={"sha256": wrong})
    assert_documented(mismatch)
    assert mismatch.status_code == 422
    assert mismatch.json()["error"]["details"] == {
        "sha256": hashlib.sha256(data).hexdigest(),
        "expected": wrong,
    }
    malformed = await client.put(URL, content=data, headers=PDF, params={"sha256": "abc"})
    assert_error_body(malformed, "validation_error")

    titled = await client.put(URL, content=data, headers=PDF, params={"title": "Ferry"})
    assert titled.status_code == 422
    assert "chunk=true" in titled.json()["error"]["message"]

    (tmp_path / "plain.pdf").write_bytes(data)
    encrypted = write_encrypted_pdf(tmp_path / "plain.pdf", tmp_path / "locked.pdf")
    locked = await client.put(URL, content=encrypted.read_bytes(), headers=PDF)
    assert locked.status_code == 422
    assert "password" in locked.json()["error"]["message"]

    scan = write_scan_pdf(tmp_path / "scan.pdf").read_bytes()
    no_text = await client.put(URL, content=scan, headers=PDF, params={"chunk": "true"})
    assert no_text.status_code == 422
    assert "no text layer" in no_text.json()["error"]["message"]

    # Nothing refused was stored.
    assert not (tmp_path / "pdfs" / "ingested").exists()


async def test_a_pdf_over_the_limit_is_refused_before_it_is_stored(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    big = b"%PDF-1.7\n" + b"0" * (64 * 1024)
    declared = await client.put(URL, content=big, headers=PDF)
    assert_documented(declared)
    assert declared.status_code == 413
    assert "HIGHLIGHT_MAX_PDF_BYTES" in declared.json()["error"]["message"]

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
        for start in range(0, len(big), 8192):
            yield big[start : start + 8192]

    streamed = await client.put(URL, content=chunks(), headers=PDF)
    assert streamed.status_code == 413
    assert not (tmp_path / "pdfs" / "ingested").exists()


async def test_uploads_need_a_write_token(sqlite_url: str, tmp_path: Path) -> None:
    settings = _settings(
        sqlite_url, tmp_path, auth_read_tokens=["r-token"], auth_write_tokens=["w-token"]
    )
    data = _pdf(tmp_path)
    async with app_client(settings) as client:
        anonymous = await client.put(URL, content=data, headers=PDF)
        assert_error_body(anonymous, "unauthorized")
        reader = await client.put(
            URL, content=data, headers={**PDF, "authorization": "Bearer r-token"}
        )
        assert_error_body(reader, "forbidden")
        writer = await client.put(
            URL, content=data, headers={**PDF, "authorization": "Bearer w-token"}
        )
        assert writer.status_code == 201, writer.text


def _cuts(data: bytes) -> dict[str, bytes]:
    """A whole PDF cut where a broken upload or copy ends: in the middle, in the last tenth, just
    before its cross-reference table, and just before the %%EOF that ends it."""
    return {
        "half": data[: len(data) // 2],
        "nine-tenths": data[: len(data) * 9 // 10],
        "before-xref": data[: data.rindex(b"xref")],
        "before-eof": data[: data.rindex(b"%%EOF")],
    }


async def test_a_pdf_cut_short_is_refused_and_says_why(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    """MuPDF repairs a PDF cut at any of these points and opens it with every page: only the
    missing end says the file is not whole. Refused, whatever the storage, before it is stored."""
    long = write_text_pdf(tmp_path / "long.pdf", [" ".join(SENTENCES)] * 60, "Long").read_bytes()
    for document in (_pdf(tmp_path), long):
        for where, cut in _cuts(document).items():
            refused = await client.put(URL, content=cut, headers=PDF, params={"chunk": "true"})
            assert refused.status_code == 422, (where, refused.text)
            message = refused.json()["error"]["message"]
            assert f"ends after {len(cut)} bytes" in message, (where, message)
            assert "send the whole file" in message
    assert not (tmp_path / "pdfs" / "ingested").exists()
    whole = await client.put(URL, content=long, headers=PDF)
    assert whole.status_code == 201, whole.text


async def test_a_pdf_that_lost_a_page_object_is_refused(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    """The end is there, but a page's object was blanked out (a damaged copy): MuPDF repairs it
    and shows that page blank; the page tree still names it, so it is refused."""
    doc = pymupdf.open()
    for number in (1, 2, 3):
        doc.new_page().insert_text((72, 72), f"Page {number} of the ferry timetable.")
    data = doc.tobytes()
    xref = pymupdf.open(stream=data).page_xref(1)
    found = re.search(rb"\n%d 0 obj.*?endobj" % xref, data, re.S)
    assert found is not None
    start, end = found.start() + 1, found.end()
    damaged = data[:start] + b" " * (end - start) + data[end:]
    refused = await client.put(URL, content=damaged, headers=PDF)
    assert refused.status_code == 422, refused.text
    message = refused.json()["error"]["message"]
    assert "declares 3 pages, but page 2 is not in the file" in message
    assert (await client.put(URL, content=data, headers=PDF)).status_code == 201


async def test_a_body_shorter_than_its_content_length_is_refused(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    """A proxy or ASGI server that hands on a body cut short as if it were whole: the declared
    length says it is not (an HTTP server ends the request at Content-Length itself)."""
    data = _pdf(tmp_path)
    sent = data[: len(data) - 100]
    headers = {**PDF, "content-length": str(len(data))}
    cut = await client.put(URL, content=sent, headers=headers)
    assert cut.status_code == 422, cut.text
    assert_documented(cut)
    error = cut.json()["error"]
    assert error["message"].startswith(f"the upload ended after {len(sent)} of {len(data)} bytes")
    assert error["details"] == {"received": len(sent), "declared": len(data)}
    assert not (tmp_path / "pdfs" / "ingested").exists()


def test_no_pdf_of_the_shared_corpus_is_taken_for_a_cut_one(shared_pdfs: Path) -> None:
    """The rule that refuses a cut PDF refuses none of the real ones (12 producers), and each
    of them cut in half is refused."""
    from app.pdfs.storage import inspect_pdf

    pdfs = sorted(shared_pdfs.rglob("*.pdf"))
    assert pdfs
    for pdf in pdfs:
        pages, _ = inspect_pdf(pdf, pdf.name)
        assert pages >= 1, pdf.name
        cut = pdf.read_bytes()
        with pytest.raises(BadRequest, match="cut short"):
            inspect_pdf(cut[: len(cut) // 2], pdf.name)
