"""Documents over HTTP and the ingest path: idempotent, transactional, validated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.api.helpers import SAMPLE_ID, ingest_sample
from tests.fixtures.app import app_client, make_settings

SOURCE = "sample/sample-assembly.pdf"


def body(**overrides: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "title": "Sample",
        "source_path": SOURCE,
        "chunks": [
            {"id": "d-1", "text": "The House met at 2.30 p.m.", "page_start": 1, "page_end": 1},
            {"id": "d-2", "text": "Ms. Wanjiru moved the motion.", "page_start": 2, "page_end": 2},
        ],
    }
    value.update(overrides)
    return value


async def test_put_is_idempotent_and_replaces_chunks(database_url: str, pdf_root: Path) -> None:
    async with app_client(make_settings(database_url, pdf_root)) as client:
        first = await client.put("/v2/documents/d", json=body())
        assert first.status_code == 201, first.text
        assert first.json()["created"] is True
        assert first.json()["page_count"] == 3
        again = await client.put("/v2/documents/d", json=body())
        assert again.status_code == 200
        assert (again.json()["created"], again.json()["changed"]) == (False, False)

        fewer = body(chunks=[body()["chunks"][1] | {"page_end": 3}])
        changed = await client.put("/v2/documents/d", json=fewer)
        assert changed.json()["changed"] is True
        stored = (await client.get("/v2/documents/d", params={"include_text": True})).json()
        # The pages sent are hints: the chunk's text is on page 2 only, and that is kept, with
        # the pages sent beside it.
        assert [
            (c["id"], c["page_start"], c["page_end"], c["given_page_start"], c["given_page_end"])
            for c in stored["chunks"]
        ] == [("d-2", 2, 2, 2, 3)]
        assert stored["chunks"][0]["pages_corrected"] is True
        assert stored["chunks"][0]["placement"] == "placed"
        assert stored["chunks"][0]["text"] == "Ms. Wanjiru moved the motion."
        assert len(stored["sha256"]) == 64

        pdf = await client.get("/v2/documents/d/pdf")
        assert pdf.status_code == 200
        assert pdf.headers["content-type"] == "application/pdf"
        assert pdf.content == (pdf_root / SOURCE).read_bytes()


async def test_a_documents_pdf_url_is_under_the_public_base_url(
    database_url: str, pdf_root: Path
) -> None:
    """Behind a proxy that mounts the service under a path, the document's own PDF link says
    that path, as the batch results' links do (it was built by hand and left it out)."""
    base = "https://chat.example.org/highlights"
    settings = make_settings(database_url, pdf_root, public_base_url=base)
    async with app_client(settings) as client:
        put = await client.put("/v2/documents/d", json=body())
        assert put.json()["pdf_url"] == f"{base}/v2/documents/d/pdf"
        got = await client.get("/v2/documents/d")
        assert got.json()["pdf_url"] == f"{base}/v2/documents/d/pdf"
    async with app_client(make_settings(database_url, pdf_root)) as client:
        assert (await client.get("/v2/documents/d")).json()["pdf_url"] == "/v2/documents/d/pdf"


@pytest.mark.parametrize(
    ("overrides", "status", "fragment"),
    [
        ({"source_path": "../etc/passwd"}, 422, "outside the PDF root"),
        ({"source_path": "/etc/passwd"}, 422, "relative to the PDF root"),
        ({"source_path": "missing.pdf"}, 422, "no PDF at source_path"),
        (
            {"chunks": [{"id": "x", "text": "t", "page_start": 2, "page_end": 9}]},
            422,
            "the PDF has 3 pages",
        ),
        (
            {"chunks": [{"id": "x", "text": "t", "page_start": 3, "page_end": 2}]},
            422,
            "page_end (2) is before page_start (3)",
        ),
        (
            {"chunks": [{"id": "x", "text": "a", "page_start": 1, "page_end": 1}] * 2},
            422,
            "appears twice",
        ),
        ({"chunks": []}, 422, "chunks"),
        ({"pages": 3}, 422, "pages"),
    ],
    ids=["traversal", "absolute", "missing", "beyond", "order", "dup", "empty", "unknown"],
)
async def test_bad_documents_are_refused_with_a_reason(
    database_url: str, pdf_root: Path, overrides: dict[str, Any], status: int, fragment: str
) -> None:
    async with app_client(make_settings(database_url, pdf_root)) as client:
        response = await client.put("/v2/documents/d", json=body(**overrides))
        assert response.status_code == status, response.text
        assert fragment in response.json()["error"]["message"]
        assert (await client.get("/v2/documents/d")).status_code == 404


async def test_chunk_ids_of_another_document_conflict_and_nothing_is_written(
    database_url: str, pdf_root: Path
) -> None:
    async with app_client(make_settings(database_url, pdf_root)) as client:
        assert (await client.put("/v2/documents/a", json=body())).status_code == 201
        response = await client.put("/v2/documents/b", json=body())
        assert response.status_code == 409
        assert "d-1" in response.json()["error"]["message"]
        assert (await client.get("/v2/documents/b")).status_code == 404


async def test_unknown_document_and_bad_ids(database_url: str, pdf_root: Path) -> None:
    async with app_client(make_settings(database_url, pdf_root)) as client:
        missing = await client.get("/v2/documents/nope")
        assert missing.status_code == 404
        assert missing.json()["error"]["message"] == "no document with id 'nope'"
        assert (await client.get("/v2/documents/nope/pdf")).status_code == 404
        assert (await client.put("/v2/documents/bad%20id", json=body())).status_code == 422


async def test_ingest_is_idempotent(database_url: str, pdf_root: Path) -> None:
    settings = make_settings(database_url, pdf_root)
    first = await ingest_sample(settings)
    second = await ingest_sample(settings)
    assert (first["created"], first["changed"]) == (True, True)
    assert (second["created"], second["changed"]) == (False, False)
    assert first["chunks"] == second["chunks"] == [f"{SAMPLE_ID}-c0000", f"{SAMPLE_ID}-c0001"]
    assert first["source_path"] == "sample/sample-assembly.pdf"


async def test_ingest_from_outside_the_root_copies_by_content(
    database_url: str, pdf_root: Path, sample_pdf: Path
) -> None:
    from app.services import ingest_file

    settings = make_settings(database_url, pdf_root)
    result = await ingest_file(settings, sample_pdf, None)
    assert result["document_id"] == "sample-assembly"
    stored = pdf_root / str(result["source_path"])
    assert stored.read_bytes() == sample_pdf.read_bytes()
    assert str(result["source_path"]).startswith("ingested/")


async def test_health_reports_database(database_url: str, pdf_root: Path) -> None:
    async with app_client(make_settings(database_url, pdf_root)) as client:
        response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "database": "ok",
        "llm_provider": "none",
        "llm_model": None,
    }


async def test_concurrent_identical_puts_all_succeed_idempotently(
    database_url: str, pdf_root: Path
) -> None:
    import asyncio

    async with app_client(make_settings(database_url, pdf_root)) as client:
        responses = await asyncio.gather(
            *(client.put("/v2/documents/race", json=body()) for _ in range(6))
        )
        codes = sorted(r.status_code for r in responses)
        # One request creates the document; every other one finds it unchanged, none is told to
        # retry (409) what it asked for already happened.
        assert codes == [200] * 5 + [201], [r.text for r in responses]
        assert sorted(r.json()["changed"] for r in responses) == [False] * 5 + [True]
        stored = await client.get("/v2/documents/race")
        assert [c["id"] for c in stored.json()["chunks"]] == ["d-1", "d-2"]


async def test_put_builds_the_text_index_ahead_of_the_first_request(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "index-cache"
    settings = make_settings(database_url, pdf_root, index_cache_dir=cache)
    async with app_client(settings) as client:
        response = await client.put("/v2/documents/d", json=body())
        assert response.status_code == 201
        sha = response.json()["sha256"]
    assert [p.name.split(".")[0] for p in cache.iterdir()] == [sha]
