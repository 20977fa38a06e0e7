"""The frontend example (frontend-contract/examples/react-pdf-highlighter) end to end, as a reader
meets it: built with esbuild, served from its own origin, calling the real service across origins
(CORS) for an answer with citation markers, and drawing the boxes with react-pdf-highlighter's own
components in Chromium, at a desktop width and on a phone.

For each highlighted citation the test opens it from the list and reads back the characters of
PDF.js's text layer under every box the library drew: they must be the highlighted sentence (a
sentence across a page break: both pages' parts). A citation of a chunk that does not exist shows
its reader notice. No request may fail and nothing may be logged as an error.

Screenshots are kept under bench/results/example/.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import unicodedata
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from rapidfuzz.distance import Levenshtein

from tests.browser.watch import watch_for_failures
from tests.conftest import PROJECT_ROOT
from tests.fixtures.live import LiveService, ingest_with_cli, live_service
from tests.fixtures.pdfs import ROTATED_SENTENCES, write_rotated_pdf

# Starts server processes, a browser or other programs: `make test-fast` leaves it out.
pytestmark = pytest.mark.slow

FRONTEND = PROJECT_ROOT / "frontend-contract"
SCREENSHOTS = PROJECT_ROOT / "bench" / "results" / "example"
PAGE_BREAK = (
    "Eleven bids were received and three firms were short-listed after a technical evaluation "
    "by the procurement committee."
)
MISSING_CHUNK = "not-ingested-yet"
WAIT_MS = 120_000  # a ceiling for a stuck page, not a speed requirement

# The number of boxes react-pdf-highlighter has drawn for these highlights on one page.
# Counted once the page's text layer is whole too: PDF.js appends ".endOfContent" when it has
# rendered it (pdf_viewer.mjs, TextLayerBuilder.render), and the highlights can be drawn before
# that; measured then, a box held no text (once, beside the whole suite: '' under a sentence).
DRAWN = """([ids, page]) => {
  const pageEl = document.querySelector(`.pdf-pane .page[data-page-number="${page}"]`);
  if (!pageEl || !pageEl.querySelector(".textLayer .endOfContent")) return 0;
  return ids.reduce((n, id) => n + pageEl.querySelectorAll(
    `[data-highlight-id="${id}"] .Highlight__part`).length, 0);
}"""

# Scrolls the PDF pane as a reader does to the next page: its top a quarter down the pane, under
# the end of the page before.
SCROLL_TO_PAGE = """(page) => {
  const pageEl = document.querySelector(`.pdf-pane .page[data-page-number="${page}"]`);
  const pane = document.querySelector(".PdfHighlighter");
  const offset = pageEl.getBoundingClientRect().top - pane.getBoundingClientRect().top;
  pane.scrollTop += offset - pane.clientHeight / 4;
}"""

# Each drawn box on one page, with the text-layer characters whose centre lies inside it (the
# technique of test_viewer.py's MEASURE). The library puts its highlight layer inside the text
# layer; that layer's own nodes are not the page's text.
MEASURE = """(page) => {
  const pageEl = document.querySelector(`.pdf-pane .page[data-page-number="${page}"]`);
  const layer = pageEl.querySelector(".textLayer");
  const inside = (x, y, b) => x >= b.left && x <= b.right && y >= b.top && y <= b.bottom;
  const chars = [];
  const walker = document.createTreeWalker(layer, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => node.parentElement.closest(".PdfHighlighter__highlight-layer")
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
  });
  const range = document.createRange();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.data.length; i++) {
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const r = range.getBoundingClientRect();
      if (r.width > 0) {
        chars.push({ch: node.data[i], x: r.left + r.width / 2, y: r.top + r.height / 2});
      }
    }
    chars.push({ch: " ", x: NaN, y: NaN});
  }
  const pane = document.querySelector(".PdfHighlighter").getBoundingClientRect();
  return [...pageEl.querySelectorAll("[data-highlight-id] .Highlight__part")].map((el) => {
    const b = el.getBoundingClientRect();
    return {
      id: el.closest("[data-highlight-id]").dataset.highlightId,
      text: chars.filter((c) => c.ch === " " || inside(c.x, c.y, b)).map((c) => c.ch).join(""),
      // Whether the box is inside the scrolled PDF pane, where a reader sees it.
      shown: b.bottom > pane.top && b.top < pane.bottom && b.right > pane.left &&
        b.left < pane.right && b.width > 0,
    };
  });
}"""


def _unavailable(reason: str) -> None:
    if os.environ.get("HIGHLIGHT_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (HIGHLIGHT_REQUIRE_BROWSER=1)")
    pytest.skip(reason)


def _letters(text: str) -> str:
    """Letters and digits only, ligatures expanded (as test_viewer.py compares)."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", text) if ch.isalnum()).casefold()


@pytest.fixture(scope="module")
def example_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example as `npm run build:example` bundles it, into a temporary folder."""
    if shutil.which("npm") is None:
        _unavailable("npm is not installed: the example app cannot be built")
    if not (FRONTEND / "node_modules" / "react-pdf-highlighter").is_dir():
        _unavailable(
            "frontend-contract/node_modules is missing: run `cd frontend-contract && npm ci`"
        )
    out = tmp_path_factory.mktemp("example-app")
    built = subprocess.run(
        ["npm", "run", "--silent", "build:example", "--", "--outdir", str(out)],
        cwd=FRONTEND,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    assert (out / "pdf.worker.min.mjs").is_file()
    return out


class _StaticFiles(SimpleHTTPRequestHandler):
    # A module worker is refused unless served as JavaScript; not every Python maps .mjs.
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".mjs": "text/javascript"}

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass


@pytest.fixture(scope="module")
def app_origin(example_build: Path) -> Iterator[str]:
    """The example's files on their own origin (another port), as a chat frontend is served."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_StaticFiles, directory=example_build))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory, sample_pdf: Path, app_origin: str
) -> Iterator[LiveService]:
    work = tmp_path_factory.mktemp("example-service")
    env = {
        "HIGHLIGHT_DATABASE_URL": f"sqlite+aiosqlite:///{work / 'example.db'}",
        "HIGHLIGHT_PDF_ROOT": str(work / "pdfs"),
        "HIGHLIGHT_INDEX_CACHE_DIR": str(work / "cache"),
        # The app calls the service from its own origin: the service must allow it.
        "HIGHLIGHT_CORS_ALLOW_ORIGINS": json.dumps([app_origin]),
    }
    ingest_with_cli(env, sample_pdf, "sample")
    ingest_with_cli(env, write_rotated_pdf(work / "rotated.pdf"), "rotated")
    with live_service(work, env, "serve") as running:
        yield running


def _chunk_with(service: LiveService, document_id: str, sentence: str) -> str:
    """The chunk that holds most of the sentence's words (the longest of equals)."""
    document = httpx.get(
        f"{service.url}/v2/documents/{document_id}", params={"include_text": True}
    ).json()
    words = sentence.split()
    chunk = max(
        document["chunks"],
        key=lambda c: (sum(w in c["text"] for w in words), len(c["text"])),
    )
    return str(chunk["id"])


@pytest.fixture(scope="module")
def answer(service: LiveService, app_origin: str, example_build: Path) -> dict[str, Any]:
    """A chat answer citing a sentence across a page break, one sentence on each rotated page,
    and a chunk that was never ingested; written where the app reads it (?input=answer.json)."""
    cited = [("sample", PAGE_BREAK)] + [("rotated", s) for s in ROTATED_SENTENCES.values()]
    claims, citations, sentences = [], [], {}
    for n, (document_id, sentence) in enumerate(cited, start=1):
        claims.append(f"{sentence.rstrip('.')} [{n}].")
        citations.append(
            {"chunk_id": _chunk_with(service, document_id, sentence), "citation_id": str(n)}
        )
        sentences[str(n)] = sentence
    missing = str(len(cited) + 1)
    claims.append(f"The ferry company was founded in 1901 [{missing}].")
    citations.append({"chunk_id": MISSING_CHUNK, "citation_id": missing})
    data = {
        "baseUrl": service.url,
        "question": "What do the documents say about the tender and the town's services?",
        "answer": " ".join(claims),
        "citations": citations,
    }
    (example_build / "answer.json").write_text(json.dumps(data))
    return {"url": f"{app_origin}/?input=answer.json", "sentences": sentences, "missing": missing}


def _wait_drawn(page: Any, ids: list[str], number: int, count: int) -> None:
    page.wait_for_function(
        f"(args) => ({DRAWN})(args) >= {count}", arg=[ids, number], timeout=WAIT_MS
    )


def _wait_text_under(page: Any, number: int) -> None:
    """Until every drawn box on the page has text-layer characters under it. On a busy machine
    PDF.js can still be laying out a page's text (its spans not yet measured, zero wide) after
    the highlights and `.endOfContent` are there: read then, a box held '' (CI, stop 47, the
    rotated page). A box that stays empty is still caught: the wait ends at WAIT_MS and the
    words are compared as before."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(
            f"(page) => ({MEASURE})(page).every((b) => b.text.trim().length > 0)",
            arg=number,
            timeout=WAIT_MS,
        )
    except PlaywrightTimeout:
        pass  # the comparison below says which box is empty


def _check_citation(
    page: Any, citation: dict[str, Any], sentence: str, screenshot: Path | None = None
) -> dict[str, int]:
    """The open citation's boxes, page by page: as many as the API's rects, each over its words.
    The first page's are on screen without scrolling (the app scrolled to them); ``screenshot``
    is taken once all are drawn."""
    highlights = {h["highlight_id"]: h for h in citation["highlights"]}
    ids = list(highlights)
    per_page: dict[int, int] = {}
    for highlight in highlights.values():
        for rect in highlight["normalized_rects"]:
            per_page[rect["page"]] = per_page.get(rect["page"], 0) + 1
    first = citation["highlights"][0]["rects"][0]["page"]
    under: dict[str, str] = dict.fromkeys(ids, "")
    for number in sorted(per_page, key=lambda n: (n != first, n)):
        if number != first:  # a sentence's next page is drawn once it is in view
            page.evaluate(SCROLL_TO_PAGE, number)
        _wait_drawn(page, ids, number, per_page[number])
        _wait_text_under(page, number)
        boxes = page.evaluate(MEASURE, number)
        assert len(boxes) == per_page[number], (citation["citation_id"], number, boxes)
        if number == first:
            assert any(b["shown"] for b in boxes), ("not scrolled to the highlight", boxes)
        for box in boxes:
            under[box["id"]] += box["text"]
    if screenshot is not None:
        # What the reader sees (a full-page capture would resize the window, and the viewer
        # would redraw during it).
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(screenshot))
    distances = []
    for highlight_id, highlight in highlights.items():
        got, want = _letters(under[highlight_id]), _letters(highlight["text"])
        distances.append(Levenshtein.distance(got, want))
        # Exact up to a glyph, as in test_viewer.py.
        assert distances[-1] <= max(1, len(want) // 100), (got, want)
    # And the highlighted sentences are the one the answer cited.
    said = _letters("".join(h["text"] for h in citation["highlights"]))
    assert Levenshtein.normalized_similarity(said, _letters(sentence)) >= 0.9, (said, sentence)
    return {
        "citation": citation["citation_id"],
        "highlights": len(highlights),
        "boxes": sum(per_page.values()),
        "pages": sorted(per_page),
        "letters": sum(len(_letters(h["text"])) for h in highlights.values()),
        "letters_off": sum(distances),  # edits between the words under the boxes and the API's
    }


@pytest.mark.parametrize(
    ("width", "height", "mobile"), [(1280, 800, False), (390, 844, True)], ids=["1280", "390"]
)
def test_example_app_draws_each_citation_on_its_words(
    browser: Any, answer: dict[str, Any], width: int, height: int, mobile: bool
) -> None:
    page = browser.new_page(
        viewport={"width": width, "height": height}, is_mobile=mobile, has_touch=mobile
    )
    problems: list[str] = []
    watch_for_failures(page, problems)
    try:
        with page.expect_response(
            lambda r: r.url.endswith("/v2/highlights/batch") and r.request.method == "POST",
            timeout=WAIT_MS,
        ) as answered:
            page.goto(answer["url"])
        batch = answered.value.json()
        results = {c["citation_id"]: c for c in batch["results"]}
        assert set(results) == {*answer["sentences"], answer["missing"]}
        counted = []
        for n, (citation_id, sentence) in enumerate(answer["sentences"].items()):
            citation = results[citation_id]
            assert citation["status"] == "highlighted", citation
            if n > 0:  # the first is open on load; the others from the list, as a reader does
                button = page.locator(f'li[data-citation-id="{citation_id}"] button')
                button.tap() if mobile else button.click()
            if citation_id == "1":  # the sentence across the page break
                assert {r["page"] for r in citation["highlights"][0]["rects"]} == {1, 2}
            shot = SCREENSHOTS / f"example-{width}-citation{citation_id}.png"
            counted.append(_check_citation(page, citation, sentence, shot if n in (0, 2) else None))
        # The missing chunk: no PDF, and the reader is told why in the list.
        missing = results[answer["missing"]]
        assert (missing["status"], missing["reason"]) == ("fallback", "chunk_not_found")
        item = page.locator(
            f'li[data-citation-id="{answer["missing"]}"]'
            '[data-status="fallback"][data-reason="chunk_not_found"]'
        )
        notice = item.locator(".notice")
        notice.wait_for(timeout=WAIT_MS)
        # The words of frontend-contract/src/reasons.ts (READER_NOTICES.chunk_not_found).
        assert notice.inner_text().startswith("Source not found"), notice.inner_text()
        assert item.locator("button").count() == 0
        assert item.locator("a").count() == 0, "an unknown chunk has no page to link to"
    finally:
        page.close()
    assert problems == [], "\n".join(problems)
    # What was read back, kept beside the screenshots.
    (SCREENSHOTS / f"example-{width}-words.json").write_text(json.dumps(counted, indent=1))
