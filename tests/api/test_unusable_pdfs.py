"""PDFs that open but cannot be highlighted as they claim, and PDF text no database stores: refused
with a 422 (PUT) or a one-line error (ingest) that says why, or cleaned where the text is
extracted. Checked against a44369f: the lying page count and the cyclic page tree were accepted
at PUT and ingest, and the control characters made `ingest` die with a pydantic traceback."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from app.core.errors import BadRequest
from app.services import ingest_file
from tests.api.test_highlights import batch
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.live import ingest_refusal
from tests.fixtures.pdfs import (
    write_control_chars_pdf,
    write_cyclic_page_tree_pdf,
    write_lying_page_count_pdf,
)

UNUSABLE = [
    pytest.param(write_lying_page_count_pdf, "declares 9 pages, but page 3", id="count-lies"),
    # MuPDF raises on the first read of page_count: a 500 at PUT on a44369f.
    pytest.param(
        partial(write_lying_page_count_pdf, count="-1"), "page tree is invalid", id="count-negative"
    ),
    pytest.param(
        partial(write_lying_page_count_pdf, count="99999999"),
        "page tree is invalid",
        id="count-huge",
    ),
    pytest.param(write_cyclic_page_tree_pdf, "cycle in page tree", id="cyclic-tree"),
]


@pytest.mark.parametrize(("write", "why"), UNUSABLE)
async def test_a_pdf_that_cannot_be_indexed_is_refused_at_put_and_ingest(
    database_url: str, pdf_root: Path, write: Callable[[Path], Path], why: str
) -> None:
    pdf = write(pdf_root / "broken.pdf")
    settings = make_settings(database_url, pdf_root)
    body = {
        "source_path": "broken.pdf",
        "chunks": [{"id": "b-1", "text": "Page 1 says the ferry runs.", "page_start": 1,
                    "page_end": 1}],
    }  # fmt: skip
    async with app_client(settings) as client:
        response = await client.put("/v2/documents/broken", json=body)
        assert response.status_code == 422, response.text
        assert why in response.json()["error"]["message"]
        assert (await client.get("/v2/documents/broken")).status_code == 404
    with pytest.raises(BadRequest, match=why):
        await ingest_file(settings, pdf, "broken")


@pytest.mark.slow
def test_the_cli_refuses_an_unusable_pdf_in_one_line(tmp_path: Path) -> None:
    pdf = write_cyclic_page_tree_pdf(tmp_path / "cyclic.pdf")
    assert ingest_refusal(pdf) == [
        "error: cyclic.pdf cannot be indexed: its page tree declares 2 pages, but page 2 cannot "
        "be read (cycle in page tree)"
    ]


async def test_control_characters_in_pdf_text_are_cleaned_where_the_text_is_extracted(
    database_url: str, pdf_root: Path
) -> None:
    pdf = write_control_chars_pdf(pdf_root / "form.pdf")
    settings = make_settings(database_url, pdf_root)
    ingested = await ingest_file(settings, pdf, "form")
    async with app_client(settings) as client:
        document = (await client.get("/v2/documents/form?include_text=true")).json()
        assert document["title"].startswith("Form")
        text = document["chunks"][0]["text"]
        assert text.startswith("The box was ticked and the form was filed on time.")
        answer = "The box was ticked and the form was filed on time [1]."
        chunk_ids = ingested["chunks"]
        assert isinstance(chunk_ids, list)
        response = await client.post("/v2/highlights/batch", json=batch(*chunk_ids, answer=answer))
    (result,) = response.json()["results"]
    assert result["status"] == "highlighted", result
    assert result["highlights"][0]["page"] == 1
