"""What a reader sees in Chromium when a viewer link cannot show its highlights: the link
expired (a day later), it was altered or cut when copied, or the document changed since the
answer. Each says what happened and what to do, in a reader's words: nothing about bearer
tokens, and never the link itself (its signature) on the page."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from app.core.security import TokenRegistry
from tests.fixtures.live import LiveService, ingest_with_cli, live_service
from tests.fixtures.pdfs import write_text_pdf

pytestmark = pytest.mark.slow

READ, WRITE = "reader-token-1", "writer-token-1"
SENTENCE = "The harbour master said the new pier opens in the spring."
OUTCOME = """async () => {
  const state = await window.__viewer.ready;
  return {
    status: state.status,
    errors: state.errors,
    rects: window.__viewer.rectElements().length,
    shown: document.getElementById("errors").innerText,
    title: document.getElementById("title").innerText,
  };
}"""


def _env(work: Path) -> dict[str, str]:
    return {
        "HIGHLIGHT_DATABASE_URL": f"sqlite+aiosqlite:///{work / 'viewer.db'}",
        "HIGHLIGHT_PDF_ROOT": str(work / "pdfs"),
        "HIGHLIGHT_INDEX_CACHE_DIR": str(work / "cache"),
        "HIGHLIGHT_AUTH_READ_TOKENS": f'["{READ}"]',
        "HIGHLIGHT_AUTH_WRITE_TOKENS": f'["{WRITE}"]',
    }


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    work = tmp_path_factory.mktemp("viewer-links")
    pdf = write_text_pdf(work / "pier.pdf", ["A report on the harbour.", SENTENCE], "Pier")
    ingest_with_cli(_env(work), pdf, "pier")
    with live_service(work, _env(work), "serve") as running:
        yield running


def _viewer_link(service: LiveService) -> str:
    batch = {
        "query": "When does the pier open?",
        "answer": SENTENCE,
        "citations": [{"chunk_id": "pier-c0000", "citation_id": "1"}],
    }
    response = httpx.post(
        f"{service.url}/v2/highlights/batch",
        json=batch,
        headers={"authorization": f"Bearer {READ}"},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    (result,) = response.json()["results"]
    assert result["status"] == "highlighted", result
    return str(result["viewer_link"])


def _expired(link: str) -> str:
    """The same link as this service signs it, a day past its expiry."""
    expires = int(time.time()) - 24 * 3600
    signature = TokenRegistry([SecretStr(READ)], [SecretStr(WRITE)]).link_signature("pier", expires)
    return re.sub(r"expires=\d+&signature=[\w-]+", f"expires={expires}&signature={signature}", link)


def _open(browser: Any, url: str) -> dict[str, Any]:
    page = browser.new_page()
    try:
        page.goto(url)
        outcome: dict[str, Any] = page.evaluate(OUTCOME)
    finally:
        page.close()
    return outcome


def _html(browser: Any, url: str) -> str:
    page = browser.new_page()
    try:
        page.goto(url)
        return str(page.content())
    finally:
        page.close()


def _reader_words_only(outcome: dict[str, Any], link: str) -> None:
    text = outcome["shown"].lower()
    assert "bearer" not in text
    assert "token" not in text
    assert "http" not in text
    signature = re.search(r"signature=([\w-]+)", link)
    assert signature is not None
    assert signature[1] not in outcome["shown"]


def test_expired_altered_and_outdated_viewer_links_say_so_to_the_reader(
    browser: Any, service: LiveService, tmp_path: Path
) -> None:
    link = _viewer_link(service)

    expired = _expired(link)
    outcome = _open(browser, service.url + expired)
    assert outcome["rects"] == 0
    assert {e["code"] for e in outcome["errors"]} == {"link_expired"}, outcome
    assert len(outcome["errors"]) == 1  # said once, not once per request that met it
    assert "This link has expired" in outcome["shown"]
    assert "again from the chat answer" in outcome["shown"]
    _reader_words_only(outcome, expired)

    altered = re.sub(r"signature=([\w-])", lambda m: "signature=" + "AB"[m[1] == "A"], link)
    outcome = _open(browser, service.url + altered)
    assert {e["code"] for e in outcome["errors"]} == {"link_invalid"}, outcome
    assert "This link is not valid" in outcome["shown"]
    _reader_words_only(outcome, altered)

    # The PDF link of a chat answer opened straight in the browser: a page, not JSON.
    pdf_link = re.sub(r"^/viewer\?[^&]*(&highlight=[^&]*)*", "/v2/documents/pier/pdf?", expired)
    html = _html(browser, service.url + pdf_link.replace("?&", "?"))
    assert "This link has expired" in html
    assert "again from the chat answer" in html
    assert "bearer" not in html.lower()

    # The document is ingested again with other content: the link is still signed and valid,
    # but its highlights belong to the earlier PDF.
    env = _env(service.log.parent)
    other = write_text_pdf(tmp_path / "pier-2.pdf", ["A second edition.", SENTENCE], "Pier")
    ingest_with_cli(env, other, "pier")
    outcome = _open(browser, service.url + link)
    assert outcome["rects"] == 0
    assert {e["code"] for e in outcome["errors"]} == {"pdf_changed"}, outcome
    assert "The document changed since this answer" in outcome["shown"]
    _reader_words_only(outcome, link)
