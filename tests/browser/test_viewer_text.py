"""The reference viewer on web and text sources, in Chromium against the real service: an HTML
page and a Markdown file stored as text, a batch, and the citation's viewer link (signed, auth
on) showing the document's text with the cited sentence in a <mark>, scrolled into view, built
from text alone (no script, no request beyond the service). And Chromium itself resolves the
highlight's URL text fragment (#:~:text=) on a served copy of the page."""

from __future__ import annotations

import asyncio
import functools
import http.server
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.core.config import Settings
from app.core.formats import SourceFormat
from app.documents.text_extract import html_to_text
from app.documents.text_sources import store_text
from app.services import open_services
from tests.browser.watch import watch_for_failures
from tests.fixtures.live import LiveService, live_service, run_cli
from tests.fixtures.text_sources import CITED, HTML, MARKDOWN

pytestmark = pytest.mark.slow

READ = "reader-token-1"
SHOWN = """async () => {
  const state = await window.__viewer.ready;
  const marks = window.__viewer.markElements();
  const inView = (el) => {
    const b = el.getBoundingClientRect();
    return b.top >= 0 && b.bottom <= window.innerHeight;
  };
  return {
    status: state.status,
    view: state.view,
    errors: state.errors,
    marked: marks.map((m) => m.textContent),
    firstInView: marks.length > 0 && inView(marks[0]),
    scripts: document.querySelectorAll("#pages script, #pages img, #pages iframe").length,
    headings: [...document.querySelectorAll("#pages h1, #pages h2")].map((h) => h.textContent),
    items: document.querySelectorAll("#pages li").length,
    title: document.getElementById("title").textContent,
  };
}"""


def _env(work: Path) -> dict[str, str]:
    return {
        "HIGHLIGHT_DATABASE_URL": f"sqlite+aiosqlite:///{work / 'viewer.db'}",
        "HIGHLIGHT_PDF_ROOT": str(work / "pdfs"),
        "HIGHLIGHT_INDEX_CACHE_DIR": str(work / "cache"),
        "HIGHLIGHT_AUTH_READ_TOKENS": f'["{READ}"]',
        "HIGHLIGHT_AUTH_WRITE_TOKENS": '["writer-token-1"]',
    }


async def _store(work: Path) -> None:
    settings = Settings(
        _env_file=None, database_url=_env(work)["HIGHLIGHT_DATABASE_URL"], pdf_root=work / "pdfs"
    )
    async with open_services(settings, command=True) as services:
        for document_id, body, fmt in (
            ("page", HTML, SourceFormat.html),
            ("notes", MARKDOWN, SourceFormat.markdown),
        ):
            await store_text(
                services.session_factory, services.storage, document_id, body.encode(), fmt
            )


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    work = tmp_path_factory.mktemp("viewer-text")
    (work / "pdfs").mkdir()
    run_cli(_env(work), "migrate")
    # In a thread of its own: Playwright's sync API keeps an event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, _store(work)).result()
    with live_service(work, _env(work), "serve") as running:
        yield running


def _cited(service: LiveService, document_id: str) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {READ}"}
    document = httpx.get(
        f"{service.url}/v2/documents/{document_id}?include_text=true", headers=headers
    ).json()
    chunk = next(c["id"] for c in document["chunks"] if CITED in c["text"])
    batch = {
        "query": "What will the water programme cost?",
        "answer": "It costs 12.5 billion shillings over three years [1].",
        "citations": [{"chunk_id": chunk, "citation_id": "1"}],
    }
    response = httpx.post(
        f"{service.url}/v2/highlights/batch", json=batch, headers=headers, timeout=60
    )
    assert response.status_code == 200, response.text
    (result,) = response.json()["results"]
    assert result["status"] == "highlighted", result
    return dict(result)


@pytest.mark.parametrize(("document_id", "heading"), [("page", "Roads"), ("notes", "Roads")])
def test_the_viewer_marks_the_cited_sentence_in_the_text(
    browser: Any, service: LiveService, document_id: str, heading: str
) -> None:
    result = _cited(service, document_id)
    link = result["viewer_link"]
    assert "view=text" in link
    assert "signature=" in link
    page = browser.new_page(viewport={"width": 900, "height": 400})
    problems: list[str] = []
    watch_for_failures(page, problems)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{service.url}{link}")
    shown = page.evaluate(SHOWN)
    page.close()
    assert shown["status"] == "ready", shown
    assert shown["view"] == "text"
    assert shown["errors"] == []
    cited = [h["text"] for h in result["highlights"]]
    assert CITED in cited
    assert shown["marked"] == cited
    assert shown["firstInView"]
    assert shown["scripts"] == 0
    assert heading in shown["headings"]
    assert shown["items"] >= 2
    assert problems == []
    assert all(url.startswith(service.url) for url in requests), requests


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


def test_chromium_resolves_the_text_fragment_on_the_page(
    browser: Any, service: LiveService, tmp_path: Path
) -> None:
    result = _cited(service, "page")
    [highlight] = [h for h in result["highlights"] if h["text"] == CITED]
    fragment = highlight["text_fragment"]
    # The page as its site would serve it, long enough that the sentence starts off screen.
    padding = "".join(f"<p>Filler paragraph number {i}.</p>" for i in range(120))
    (tmp_path / "page.html").write_text(HTML.replace("<main>", f"<main>{padding}"))
    handler = functools.partial(_Quiet, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page = browser.new_page(viewport={"width": 900, "height": 400})
        page.goto(f"http://127.0.0.1:{server.server_port}/page.html{fragment}")
        page.wait_for_timeout(0)
        where = page.evaluate(
            """(cited) => {
              const p = [...document.querySelectorAll("p")].find(
                (el) => el.textContent.includes(cited));
              const b = p.getBoundingClientRect();
              return {scrolled: window.scrollY, top: b.top, bottom: b.bottom,
                      height: window.innerHeight};
            }""",
            CITED,
        )
        # The text the service keeps is the text Chromium shows, block by block (less the
        # furniture it leaves out).
        shown = page.evaluate("() => document.body.innerText")
        page.close()
    finally:
        server.shutdown()
    words = " ".join(shown.split())
    for block in html_to_text(HTML).text.split("\n\n"):
        assert " ".join(block.split()) in words, block
    assert where["scrolled"] > 0, where
    assert where["top"] < where["height"], where
    assert where["bottom"] > 0, where


# Pages without furniture: the service's text must be the words Chromium shows, in order.
SNIPPETS = [
    "<p>one<b>two</b> three<i> four</i></p><p>five&nbsp;six</p>",
    "<div>a<div>b</div>c</div><span>d</span> e",
    "<ul><li>x<li>y<ol><li>z</ol></ul><p>after</p>",
    "<table><tr><th>h1<th>h2</tr><tr><td> 1 </td><td>2</td></tr></table>",
    "<p>line<br>break<br><br>again</p><pre>  keep\n   this</pre>",
    "<h1>T<small>sub</small></h1><blockquote><p>q</p></blockquote><dl><dt>t<dd>d</dl>",
    "<p>a <script>no()</script>b<style>p{}</style> c<template>t</template></p>",
    "<p>x<span hidden>h</span><span style='display:none'>n</span> y</p><hr><p>z</p>",
]


@pytest.mark.parametrize("markup", SNIPPETS)
def test_html_text_is_what_chromium_shows(browser: Any, markup: str) -> None:
    page = browser.new_page()
    page.set_content(f"<!doctype html><html><body>{markup}</body></html>")
    shown = page.evaluate("() => document.body.innerText")
    page.close()
    assert html_to_text(markup).text.split() == shown.split()
