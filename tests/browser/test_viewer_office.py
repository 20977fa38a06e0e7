"""The reference viewer on a converted Office file, in a real browser against the real service:
a DOCX ingested by `highlight-service ingest` (LibreOffice converts it), a batch citing it, and
the viewer link opened in Chromium. The checks are test_viewer.py's: the highlight colour on the
rendered page is where the rectangles are, and the words PDF.js lays out under them are the
cited sentence; the title shown is the original file's name (the converted PDF has none)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import httpx
import pymupdf
import pytest

from tests.browser.test_viewer import Case, _check, _env
from tests.browser.watch import watch_for_failures
from tests.fixtures.live import LiveService, ingest_with_cli, live_service
from tests.fixtures.office import docx_bytes

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice (soffice) needed"),
]

SENTENCES = [
    "The ferry to Lamu leaves the harbour every morning at seven.",
    "Tickets cost four hundred shillings for adults and half that for children.",
    "The crossing takes about forty minutes when the sea is calm.",
]
CASE = Case(
    name="office-docx",
    document_id="ferry",
    page=1,
    answer="The ferry to Lamu leaves the harbour every morning at seven [1].",
)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    work = tmp_path_factory.mktemp("viewer-office")
    env = _env(work)
    docx = work / "Ferry_timetable.docx"
    docx.write_bytes(docx_bytes(SENTENCES))
    ingest_with_cli(env, docx, CASE.document_id)
    with live_service(work, env, "serve") as running:
        yield running


def _result(service: LiveService) -> dict[str, Any]:
    batch = {
        "query": "When does the ferry to Lamu leave?",
        "answer": CASE.answer,
        "citations": [{"chunk_id": "ferry-c0000", "citation_id": "1"}],
    }
    response = httpx.post(f"{service.url}/v2/highlights/batch", json=batch, timeout=60)
    assert response.status_code == 200, response.text
    (result,) = response.json()["results"]
    assert result["status"] == "highlighted", result
    assert (result["source_format"], result["original_name"]) == ("docx", "Ferry_timetable.docx")
    return dict(result)


def test_the_viewer_draws_a_converted_docx_highlight_over_its_sentence(
    browser: Any, service: LiveService
) -> None:
    result = _result(service)
    _check(browser, service, CASE, result)
    page = browser.new_page(viewport={"width": 1000, "height": 1200})
    errors: list[str] = []
    watch_for_failures(page, errors)
    try:
        page.goto(service.url + result["viewer_link"])
        page.evaluate("window.__viewer.ready")
        assert page.evaluate("document.getElementById('title').textContent") == "Ferry timetable"
        assert errors == []
    finally:
        page.close()


def test_the_served_pdf_is_the_conversion(service: LiveService) -> None:
    pdf = httpx.get(f"{service.url}/v2/documents/{CASE.document_id}/pdf", timeout=30)
    assert pdf.status_code == 200
    with pymupdf.open(stream=pdf.content) as doc:
        assert doc.metadata is not None
        assert doc.metadata["producer"].startswith("LibreOffice")
