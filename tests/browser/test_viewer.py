"""The reference viewer in a real browser, against the real service: a user's frontend is the final
judge of a rectangle. For each case the service answers a batch, Chromium opens the citation's
viewer link, and the test checks, page by page:

- the highlight colour on the rendered page covers the returned rectangles and nothing else
  (the pixels of a screenshot, not the DOM's idea of them);
- the words PDF.js renders under the rectangles (its text layer, character by character) are the
  highlighted sentence;
- the claims the citation supports (the link's claim parameters) are shown above the first page,
  as text, each with its verdict ("Supports: …", "Partly supports: …"); a citation without
  claims shows its verdict on the whole answer.

Screenshots are kept under bench/results/viewer/ (CI keeps them as artefacts).
"""

from __future__ import annotations

import json
import re
import shutil
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pymupdf
import pytest
from rapidfuzz.distance import Levenshtein

from app.documents.links import VIEWER_CLAIMS, viewer_claim
from tests.api.helpers import CHUNK_MAIN, ocr_line
from tests.browser.watch import watch_for_failures
from tests.conftest import PROJECT_ROOT, SHARED_PDFS
from tests.fixtures.live import LiveService, ingest_with_cli, live_service
from tests.fixtures.pdfs import (
    ROTATED_SENTENCES,
    write_image_only_copy,
    write_rotated_pdf,
    write_text_pdf,
)

# Starts server processes, a browser or other programs: `make test-fast` leaves it out.
pytestmark = pytest.mark.slow

SCREENSHOTS = PROJECT_ROOT / "bench" / "results" / "viewer"
HIGHLIGHT_RGB = (255, 214, 0)  # the viewer's highlight colour, drawn at 45% opacity

# For every drawn rect: its box, and the text-layer characters whose centre lies inside it.
MEASURE = """async () => {
  const state = await window.__viewer.ready;
  const inside = (x, y, b) => x >= b.left && x <= b.right && y >= b.top && y <= b.bottom;
  return {
    status: state.status,
    errors: state.errors,
    rects: window.__viewer.rectElements().map((el) => {
      const box = el.getBoundingClientRect();
      const pageEl = el.closest(".page");
      const pageBox = pageEl.getBoundingClientRect();
      let text = "";
      const layer = pageEl.querySelector(".textLayer");
      const walker = document.createTreeWalker(layer, NodeFilter.SHOW_TEXT);
      const range = document.createRange();
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (let i = 0; i < node.data.length; i++) {
          range.setStart(node, i);
          range.setEnd(node, i + 1);
          const r = range.getBoundingClientRect();
          if (r.width > 0 && inside(r.left + r.width / 2, r.top + r.height / 2, box)) {
            text += node.data[i];
          }
        }
        text += " ";
      }
      // In document coordinates, which is what a full-page screenshot shows.
      const x = window.scrollX, y = window.scrollY;
      return {
        id: el.dataset.highlightId,
        page: Number(el.dataset.page),
        box: {x0: box.left + x, y0: box.top + y, x1: box.right + x, y1: box.bottom + y},
        pageBox: {x0: pageBox.left + x, y0: pageBox.top + y,
                  x1: pageBox.right + x, y1: pageBox.bottom + y},
        text,
      };
    }),
  };
}"""


# The claims block and the first page, in document coordinates (read at the top of the page).
CLAIMS = """() => {
  const block = document.getElementById("claims");
  const first = document.querySelector('.page[data-page-number="1"]');
  const canvas = first && first.querySelector("canvas");
  const box = (el) => {
    const b = el.getBoundingClientRect();
    const x = window.scrollX, y = window.scrollY;
    return {x0: b.left + x, y0: b.top + y, x1: b.right + x, y1: b.bottom + y};
  };
  return {
    hidden: block.hidden,
    visible: block.checkVisibility(),
    lines: [...block.querySelectorAll("li")].map((li) => li.textContent),
    markup: block.querySelectorAll("li *").length,
    state: window.__viewer.state.claims,
    block: box(block),
    canvas: canvas && box(canvas),
  };
}"""


@dataclass(frozen=True)
class Case:
    name: str
    document_id: str
    page: int | None  # the page the cited chunk starts on (None: any)
    answer: str | None  # None: the chunk's second sentence
    chunk_id: str | None = None  # the chunk to cite (None: the longest that has the answer)
    scanned: bool = False  # an image-only page, read by OCR: no text layer in PDF.js


def _env(work: Path) -> dict[str, str]:
    return {
        "HIGHLIGHT_DATABASE_URL": f"sqlite+aiosqlite:///{work / 'viewer.db'}",
        "HIGHLIGHT_PDF_ROOT": str(work / "pdfs"),
        "HIGHLIGHT_INDEX_CACHE_DIR": str(work / "cache"),
    }


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, sample_pdf: Path) -> Iterator[LiveService]:
    work = tmp_path_factory.mktemp("viewer")
    env = _env(work)
    pdfs = {"sample": sample_pdf, "rotated": write_rotated_pdf(work / "rotated.pdf")}
    if shutil.which("tesseract") is not None:  # read by OCR at ingest
        pdfs["scan"] = write_image_only_copy(sample_pdf, work / "sample-scan.pdf", dpi=200)
    if (SHARED_PDFS / "MANIFEST.tsv").is_file():
        pdfs["linn"] = SHARED_PDFS / LINN_SCAN
        pdfs["paper"] = SHARED_PDFS / "pdfjs_tracemonkey.pdf"
        pdfs["bill"] = SHARED_PDFS / "twly_bill_LCEWA01_080202_00016_zh-hant.pdf"
    for document_id, pdf in pdfs.items():
        ingest_with_cli(env, pdf, document_id)
    with live_service(work, env, "serve") as running:
        yield running


def _citation(service: LiveService, case: Case) -> dict[str, Any]:
    document = httpx.get(
        f"{service.url}/v2/documents/{case.document_id}", params={"include_text": True}
    ).json()
    chunks = [c for c in document["chunks"] if case.page is None or c["page_start"] == case.page]
    if case.chunk_id is not None:
        chunks = [c for c in chunks if c["id"] == case.chunk_id]
    if case.answer is not None and case.chunk_id is None:
        # The chunk that holds the answer: the most of its words (a chunk that does not say it
        # is unsupported now, and lights nothing), the longest of equals.
        words = case.answer.split()
        chunk = max(chunks, key=lambda c: (sum(w in c["text"] for w in words), len(c["text"])))
    else:
        chunk = max(chunks, key=lambda c: len(c["text"]))
    answer = case.answer
    if answer is None:
        sentences = re.split(r"(?<=[.!?。])\s*", chunk["text"])
        answer = max(sentences[1:4], key=len)
    batch = {
        "query": "What does the document say?",
        "answer": answer,
        "citations": [{"chunk_id": chunk["id"], "citation_id": "1"}],
    }
    response = httpx.post(f"{service.url}/v2/highlights/batch", json=batch, timeout=60)
    assert response.status_code == 200, response.text
    (result,) = response.json()["results"]
    assert result["status"] == "highlighted", result
    return dict(result)


def _letters(text: str) -> str:
    """Letters and digits only, ligatures expanded: what both sides must agree on. Spaces (the
    text layer adds some between runs, Chinese has none), line-end hyphens, bullets and
    punctuation at a sentence's edge are where extractors legitimately differ."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", text) if ch.isalnum()).casefold()


def _yellow_box(pix: pymupdf.Pixmap, region: pymupdf.IRect) -> pymupdf.IRect | None:
    """Bounding box of the highlight colour's pixels inside ``region`` of a screenshot."""
    xs: list[int] = []
    ys: list[int] = []
    region &= pix.irect
    for y in range(region.y0, region.y1):
        row = pix.samples[y * pix.stride : y * pix.stride + pix.width * pix.n]
        for x in range(region.x0, region.x1):
            r, g, b = row[x * pix.n : x * pix.n + 3]
            # The fill over paper: about (255, 237, 140); over ink it is dark and left out.
            if r > 220 and g > 190 and b < 190 and r - b > 50:
                xs.append(x)
                ys.append(y)
    if not xs:
        return None
    return pymupdf.IRect(min(xs), min(ys), max(xs) + 1, max(ys) + 1)


def _check_scanned_words(browser: Any, service: LiveService, result: dict[str, Any]) -> None:
    """On a scan the PDF has no text layer for PDF.js to lay out: the words under each drawn
    rectangle are read from the rendered page itself, by Tesseract, off a screenshot taken at
    three device pixels per CSS pixel (about 300 dpi, as OCR needs)."""
    page = browser.new_page(viewport={"width": 1000, "height": 1200}, device_scale_factor=3)
    try:
        page.goto(service.url + result["viewer_link"])
        drawn = page.evaluate(MEASURE)["rects"]
        page.evaluate("window.scrollTo(0, 0)")
        for highlight in result["highlights"]:
            read = ""
            for rect in (r for r in drawn if r["id"] == highlight["highlight_id"]):
                box = rect["box"]
                shot = page.screenshot(
                    full_page=True,
                    clip={
                        "x": box["x0"] - 2,
                        "y": box["y0"] - 2,
                        "width": box["x1"] - box["x0"] + 4,
                        "height": box["y1"] - box["y0"] + 4,
                    },
                )
                read += _letters(ocr_line(shot))
            want = _letters(highlight["display_text"])
            assert Levenshtein.normalized_similarity(read, want) >= 0.9, (read, want)
    finally:
        page.close()


def _check(browser: Any, service: LiveService, case: Case, result: dict[str, Any]) -> None:
    page = browser.new_page(viewport={"width": 1000, "height": 1200})
    errors: list[str] = []
    watch_for_failures(page, errors)
    try:
        page.goto(service.url + result["viewer_link"])
        got = page.evaluate(MEASURE)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        # The sticky header stays at the top of the document in the captures below (pages
        # with highlights keep their canvas when scrolled away).
        page.evaluate("window.scrollTo(0, 0)")
        assert got["status"] == "ready", got
        assert got["errors"] == [], got["errors"]
        assert errors == []
        _check_claims(page, case, result)
        expected = {h["highlight_id"]: h for h in result["highlights"]}
        drawn = got["rects"]
        assert {r["id"] for r in drawn} == set(expected)
        assert len(drawn) == sum(len(h["rects"]) for h in expected.values())
        # The words under a highlight's rectangles are its sentence.
        for highlight_id, highlight in expected.items():
            if case.scanned:
                continue  # no text layer: _check_scanned_words reads the words
            under = "".join(r["text"] for r in drawn if r["id"] == highlight_id)
            got_text, want = _letters(under), _letters(highlight["text"])
            # Exact up to a glyph: a rectangle a few points off its words loses the letters at
            # one end of each line and gains others at the other end.
            assert Levenshtein.distance(got_text, want) <= max(1, len(want) // 100), (
                case.name,
                got_text,
                want,
            )
        # The highlight colour on each page is where the rectangles are, and only there.
        for number in sorted({r["page"] for r in drawn}):
            on_page = [r for r in drawn if r["page"] == number]
            page_box = on_page[0]["pageBox"]
            # The page as rendered, cut from a full-page capture (an element capture would
            # scroll it under the sticky header).
            shot = page.screenshot(
                path=str(SCREENSHOTS / f"{case.name}-page{number}.png"),
                full_page=True,
                clip={
                    "x": page_box["x0"],
                    "y": page_box["y0"],
                    "width": page_box["x1"] - page_box["x0"],
                    "height": page_box["y1"] - page_box["y0"],
                },
            )
            pixels = pymupdf.Pixmap(shot)
            # Where the API says the highlight is, scaled to the page as the browser shows it:
            # independent of the viewer's own arithmetic.
            width, height = page_box["x1"] - page_box["x0"], page_box["y1"] - page_box["y0"]
            boxes = [
                {"x0": n["x0"] * width, "y0": n["y0"] * height,
                 "x1": n["x1"] * width, "y1": n["y1"] * height}
                for h in expected.values()
                for n in h["normalized_rects"]
                if n["page"] == number
            ]  # fmt: skip
            region = pymupdf.IRect(0, 0, pixels.width, pixels.height)
            union = pymupdf.Rect(
                min(b["x0"] for b in boxes),
                min(b["y0"] for b in boxes),
                max(b["x1"] for b in boxes),
                max(b["y1"] for b in boxes),
            )
            yellow = _yellow_box(pixels, region)
            assert yellow is not None, (case.name, number)
            overlap = (union & pymupdf.Rect(yellow)).get_area()
            iou = overlap / (union | pymupdf.Rect(yellow)).get_area()
            assert iou > 0.85, (case.name, number, union, yellow)
    finally:
        page.close()


def _check_claims(page: Any, case: Case, result: dict[str, Any]) -> None:
    """The citation's claims, as its link carries them, are shown above the first page's canvas
    (the page at the top); a citation without claims shows no block."""
    want = [viewer_claim(c["text"]) for c in result["claims"]][:VIEWER_CLAIMS]
    shown = page.evaluate(CLAIMS)
    assert shown["state"] == want, shown
    # Each claim with the citation's verdict on it; without claims, the verdict on the answer.
    words = {"supported": "Supports", "partial": "Partly supports"}
    lines = [f"{words[c['support']]}: “{viewer_claim(c['text'])}”" for c in result["claims"]]
    if not result["claims"]:
        lines = [f"{words[result['support']]} the answer"]
    assert not shown["hidden"], shown
    assert shown["visible"], shown
    assert shown["lines"] == lines[:VIEWER_CLAIMS], shown
    if not want:
        return
    assert shown["markup"] == 0
    assert shown["canvas"] is not None, "the first page is not rendered"
    block, canvas = shown["block"], shown["canvas"]
    assert block["y1"] <= canvas["y0"], shown
    # Over the page's columns, not off to a side.
    assert block["x0"] < canvas["x1"], shown
    assert canvas["x0"] < block["x1"], shown
    page.screenshot(path=str(SCREENSHOTS / f"{case.name}-claims.png"))


GENERATED = [
    Case(
        "page-break",
        "sample",
        1,
        "Eleven bids were received and three firms were short-listed after a technical "
        "evaluation by the procurement committee.",
    ),
    *(
        Case(f"rotated-{rotation}", "rotated", None, sentence)
        for rotation, sentence in ROTATED_SENTENCES.items()
    ),
]
SHARED = [Case("two-column-paper", "paper", 2, None), Case("chinese-bill", "bill", 1, None)]
LINN_SCAN = "ocrmypdf_linn_scan-no-text.pdf"
needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="Tesseract is not installed (apt-get install tesseract-ocr tesseract-ocr-osd)",
)
SCANNED = [
    Case(
        "scanned-page-break",
        "scan",
        1,
        "Eleven bids were received and three firms were short-listed after a technical "
        "evaluation by the procurement committee.",
        scanned=True,
    ),
    Case(
        "scanned-real-linn",
        "linn",
        1,
        "Each of the 100 sequences contains 32 simultaneous, polyphonic tracks.",
        scanned=True,
    ),
]


@pytest.mark.parametrize("case", GENERATED, ids=[c.name for c in GENERATED])
def test_viewer_draws_each_highlight_on_its_words(
    browser: Any, service: LiveService, case: Case
) -> None:
    result = _citation(service, case)
    if case.name == "page-break":
        assert {r["page"] for r in result["highlights"][0]["rects"]} == {1, 2}
    _check(browser, service, case, result)


@pytest.mark.parametrize("case", SHARED, ids=[c.name for c in SHARED])
def test_viewer_on_real_pdfs(
    browser: Any, service: LiveService, case: Case, shared_pdfs: Path
) -> None:
    _check(browser, service, case, _citation(service, case))


@needs_tesseract
@pytest.mark.parametrize("case", SCANNED, ids=[c.name for c in SCANNED])
def test_viewer_on_scanned_pages(browser: Any, service: LiveService, case: Case) -> None:
    """Pages that are only an image, read by OCR at ingest: the rectangles land on the words in
    the rendered image (the generated scan crosses a page break; the real one is a 1980s
    two-column product sheet)."""
    if case.document_id == "linn" and not (SHARED_PDFS / LINN_SCAN).is_file():
        pytest.skip(f"../shared/pdfs/{LINN_SCAN} is absent")
    result = _citation(service, case)
    _check(browser, service, case, result)
    _check_scanned_words(browser, service, result)


def test_viewer_reports_a_missing_highlight_in_the_page(browser: Any, service: LiveService) -> None:
    page = browser.new_page()
    try:
        page.goto(f"{service.url}/viewer?document_id=sample&highlight=h_{'0' * 32}")
        got = page.evaluate(MEASURE)
        shown = page.locator("#errors").inner_text()
    finally:
        page.close()
    assert got["status"] == "ready"
    assert [e["highlightId"] for e in got["errors"]] == [f"h_{'0' * 32}"]
    assert "h_0000" in shown or "highlight" in shown.lower(), json.dumps(got)


def test_viewer_draws_nothing_on_a_pdf_replaced_since(
    browser: Any, service: LiveService, tmp_path: Path
) -> None:
    """The batch was right, then the file was replaced on disk (no re-ingest): the viewer must
    say so and draw nothing, not the old rectangles on the new file (seen on a44369f: another
    PDF shown with an uncited sentence highlighted)."""
    work = service.log.parent
    sentence = "The harbour master said the new pier opens in the spring."
    pdf = write_text_pdf(tmp_path / "pier.pdf", ["A report on the harbour.", sentence])
    ingest_with_cli(_env(work), pdf, "pier")
    result = _citation(service, Case("pier", "pier", 1, sentence))
    document = httpx.get(f"{service.url}/v2/documents/pier").json()
    stored = Path(_env(work)["HIGHLIGHT_PDF_ROOT"]) / document["source_path"]
    stored.write_bytes(write_rotated_pdf(tmp_path / "other.pdf").read_bytes())
    page = browser.new_page()
    try:
        page.goto(service.url + result["viewer_link"])
        got = page.evaluate(MEASURE)
        shown = page.locator("#errors").inner_text()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "pdf-replaced-since.png"))
    finally:
        page.close()
    assert got["rects"] == []
    assert {e["code"] for e in got["errors"]} == {"pdf_changed"}, got["errors"]
    assert "re-ingest" in shown


CLAIMED = Case(
    "claim-above-page",
    "sample",
    None,
    "The programme will cost 12.5 billion shillings over three years [1].",
    chunk_id=CHUNK_MAIN,
)


def test_viewer_shows_the_claim_above_the_page(browser: Any, service: LiveService) -> None:
    """Issue 16: the answer's marker closes a claim; the citation's viewer link carries it and
    the viewer shows it above the page, with the highlight drawn as before."""
    result = _citation(service, CLAIMED)
    claims = [c["text"] for c in result["claims"]]
    assert claims == ["The programme will cost 12.5 billion shillings over three years"], claims
    assert "&claim=" in result["viewer_link"]
    _check(browser, service, CLAIMED, result)


def test_viewer_shows_claims_as_text_never_as_markup(browser: Any, service: LiveService) -> None:
    """A viewer URL is anyone's to write: a claim that is HTML is shown as its characters, and
    makes no element, no request and runs nothing. A URL without claims shows no block."""
    hostile = '<img src=x onerror="window.__xss = 1"><b>bold</b>'
    page = browser.new_page()
    errors: list[str] = []
    requested: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requested.append(r.url))
    try:
        page.goto(f"{service.url}/viewer?document_id=sample")
        assert page.evaluate(MEASURE)["status"] == "ready"
        assert page.evaluate(CLAIMS)["hidden"]
        query = urlencode(
            [
                ("document_id", "sample"),
                ("claim", hostile),
                ("claim", "Second."),
                ("support", hostile),  # an unknown verdict is not shown
                ("support", "partial"),
            ]
        )
        page.goto(f"{service.url}/viewer?{query}")
        got = page.evaluate(MEASURE)
        # Without highlights `ready` does not wait for the first page's canvas.
        page.wait_for_selector('.page[data-page-number="1"][data-rendered="true"]')
        shown = page.evaluate(CLAIMS)
        xss = page.evaluate("window.__xss")
        images = page.evaluate("document.querySelectorAll('img').length")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "claims-as-text.png"))
    finally:
        page.close()
    assert got["status"] == "ready", got
    assert got["errors"] == [], got
    assert shown["lines"] == [f"“{hostile}”", "Partly supports: “Second.”"], shown
    assert shown["markup"] == 0
    assert images == 0
    assert xss is None
    assert not [u for u in requested if u.rstrip("/").endswith("/x")], requested
    assert errors == []
    assert shown["block"]["y1"] <= shown["canvas"]["y0"], shown


BILL_SENTENCES = Case(
    "chinese-bill-sentences",
    "bill",
    1,
    "現行勞動基準法第二十八條規定雇主因歇業、清算或宣告破產，本於勞動契約所積欠之工資未滿六個月部分，"
    "有最優先受清償之權。依相關法令規定土地增值稅、不動產抵押權、動產質權以及動產抵押權的順位都優先於"
    "工資債權，以致本法對勞工的保障流於形式。",
    chunk_id="bill-c0000",
)


def test_viewer_highlights_whole_sentences_on_the_chinese_bill(
    browser: Any, service: LiveService, shared_pdfs: Path
) -> None:
    """The bill's printed lines wrap mid-word ("資遣" | "費"): each highlight is a whole sentence
    of its chunk (it starts where a sentence or paragraph starts and ends at 。！？ or at a
    paragraph's end), not a printed line, and its rectangles still fit its words."""
    result = _citation(service, BILL_SENTENCES)
    document = httpx.get(f"{service.url}/v2/documents/bill", params={"include_text": True}).json()
    (chunk,) = [c for c in document["chunks"] if c["id"] == BILL_SENTENCES.chunk_id]
    text = chunk["text"]
    assert result["highlights"]
    for highlight in result["highlights"]:
        start = text.find(highlight["text"])
        assert start >= 0, highlight["text"]
        end = start + len(highlight["text"])
        before, after = text[:start].rstrip(" "), text[end:]
        assert before == "" or before[-1] in "。！？：\n", (before[-10:], highlight["text"])
        assert highlight["text"][-1] in "。！？" or after == "" or after.startswith("\n\n"), (
            highlight["text"],
            after[:10],
        )
        assert "\n" not in highlight["text"], highlight["text"]
    _check(browser, service, BILL_SENTENCES, result)
