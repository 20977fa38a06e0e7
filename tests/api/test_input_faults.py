"""Input no database can store, or no file system can name, is a 422 that names the field, on
SQLite and on PostgreSQL (which refuses NUL in text and 32-bit overflow), never a 500."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.app import app_client, make_settings

SOURCE = "sample/sample-assembly.pdf"


def document(chunk: dict[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "title": "Sample",
        "source_path": SOURCE,
        "chunks": [
            chunk or {"id": "n-1", "text": "The House met.", "page_start": 1, "page_end": 1}
        ],
    }
    value.update(overrides)
    return value


def chunk(**overrides: Any) -> dict[str, Any]:
    return {"id": "n-1", "text": "The House met.", "page_start": 1, "page_end": 1} | overrides


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        (document(title="Report\x00 2025"), "body.title"),
        (document(chunk(id="n\x001")), "body.chunks.0.id"),
        (document(source_path="sample/sample\x00.pdf"), "body.source_path"),
        (document(source_path="sample/" + "x" * 252 + ".pdf"), "body.source_path"),
        (document(source_path="é" * 130 + ".pdf"), "body.source_path"),
        (document(chunk(ordinal=2**31)), "body.chunks.0.ordinal"),
        (document(chunk(page_start=2**31, page_end=2**31)), "body.chunks.0.page_start"),
    ],
    ids=[
        "nul-title",
        "nul-id",
        "nul-path",
        "long-name",
        "long-name-in-bytes",
        "ordinal-2^31",
        "page-2^31",
    ],
)
async def test_unstorable_documents_are_422_naming_the_field(
    database_url: str, pdf_root: Path, payload: dict[str, Any], field: str
) -> None:
    async with app_client(make_settings(database_url, pdf_root)) as client:
        response = await client.put("/v2/documents/d", json=payload)
        assert response.status_code == 422, response.text
        error = response.json()["error"]
        assert error["code"] == "validation_error"
        assert error["message"].startswith(f"{field}:"), error["message"]
        assert (await client.get("/v2/documents/d")).status_code == 404


async def test_control_characters_in_a_chunks_text_are_stored_as_spaces(
    database_url: str, pdf_root: Path
) -> None:
    """A caller's extractor emits what no database stores (pypdf reads a 10-K's tick boxes as
    U+0000): the chunk is stored, its controls as spaces and a lone surrogate as U+FFFD, one for
    one, as the service cleans its own extraction; refused, the whole PUT was lost."""
    raw = json.dumps(document(chunk(text="The House\x00 met.\x0b Then \ud800 rose.")))
    async with app_client(make_settings(database_url, pdf_root)) as client:
        response = await client.put("/v2/documents/d", **_raw(raw))
        assert response.status_code == 201, response.text
        stored = await client.get("/v2/documents/d", params={"include_text": True})
    assert stored.json()["chunks"][0]["text"] == "The House  met.  Then \ufffd rose."


def _raw(body: str) -> dict[str, Any]:
    return {"content": body.encode(), "headers": {"content-type": "application/json"}}


@pytest.mark.parametrize(
    ("raw_body", "field"),
    [
        ('{"query": "q\\u0000", "answer": "a", "citations": [{"chunk_id": "c"}]}', "body.query"),
        ('{"query": "q", "answer": "a", "citations": [{"chunk_id": "c\\u0000"}]}', "chunk_id"),
        ('{"query": "q", "answer": "a", "citations": [{"chunk_id": "\\ud800"}]}', "chunk_id"),
        (
            '{"query": "q", "answer": "a", "citations": [{"chunk_id": "c", '
            '"citation_id": "\\udfff"}]}',
            "citation_id",
        ),
        ('{"query": "q", "answer": "\\ud83d", "citations": [{"chunk_id": "c"}]}', "body.answer"),
    ],
    ids=["nul-query", "nul-chunk-id", "surrogate-chunk-id", "surrogate-citation-id", "half-emoji"],
)
async def test_unstorable_batch_input_is_422_naming_the_field(
    database_url: str, pdf_root: Path, raw_body: str, field: str
) -> None:
    json.loads(raw_body)  # valid JSON: only the characters it decodes to are the problem
    async with app_client(make_settings(database_url, pdf_root)) as client:
        response = await client.post("/v2/highlights/batch", **_raw(raw_body))
    assert response.status_code == 422, response.text
    assert field in response.json()["error"]["message"]
