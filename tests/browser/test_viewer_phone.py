"""The reference viewer on a phone and on a scan, in a real browser against the real service.

On a 390 x 844 phone (touch, mobile viewport) the sticky header is one row: the title cut with
an ellipsis, the page number and the previous/next highlight buttons; zoom and the page steps
open behind the "More controls" button. The key hint is not shown on a touch screen. The claims
stay readable below the row, and the highlights are still drawn on their words. At 1280 px the
desktop layout is unchanged: every control shown, the key hint beside them, no menu button.

A scan coded as a fax (CCITT Group 4) makes PDF.js ask for jbig2.wasm under /viewer/assets/: it
must be there, served as application/wasm, with no failed request and no console error (a
JBIG2 scan asks for the same file: test_viewer.py's real scan, when ../shared/pdfs has it).

Screenshots (phone-390-*.png, desktop-1280-*.png, scan-fax-*.png) are kept under
bench/results/viewer/, as test_viewer.py's are.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from rapidfuzz.distance import Levenshtein

from tests.browser.test_viewer import (
    CLAIMED,
    MEASURE,
    SCREENSHOTS,
    Case,
    _citation,
    _env,
    _letters,
)
from tests.browser.watch import watch_for_failures
from tests.fixtures.live import LiveService, ingest_with_cli, live_service
from tests.fixtures.pdfs import write_fax_scan_pdf

# Starts a server process and a browser: `make test-fast` leaves it out.
pytestmark = pytest.mark.slow

PHONE = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 2,
    "is_mobile": True,
    "has_touch": True,
}
DESKTOP = {"viewport": {"width": 1280, "height": 800}}
# The header's share of a phone's height, claims included. One row of controls is 44 px (5% of
# 844); the claims below it scroll inside at most three lines (about 60 px), so the header stays
# near 13% whatever the claims, where it took a third before. 15% leaves the reader 85% of the
# screen for the page, and a few pixels for a font with taller lines.
HEADER_SHARE = 0.15

FAX_SENTENCE = "The ferry timetable changes in March, and the night crossing ends in April."
FAX = Case("scan-fax", "fax", 1, FAX_SENTENCE, scanned=True)

# The header's layout: its height, which controls are shown, and in how many rows.
HEADER = """() => {
  const header = document.querySelector("header");
  const shown = (el) => el.checkVisibility();
  const named = "button, input, output, #page-count, #highlight-status";
  const controls = [...header.querySelectorAll(named)];
  const title = document.getElementById("title");
  const centre = (el) => { const b = el.getBoundingClientRect(); return (b.top + b.bottom) / 2; };
  const row = [title, ...controls.filter(shown)].map(centre);
  const claims = document.getElementById("claims");
  const items = [...claims.querySelectorAll("li")];
  return {
    height: header.getBoundingClientRect().height,
    viewport: innerHeight,
    pageWidth: document.documentElement.scrollWidth,
    windowWidth: innerWidth,
    shown: Object.fromEntries(controls.map((el) => [el.id, shown(el)])),
    keys: shown(header.querySelector(".keys")),
    rowSpread: Math.max(...row) - Math.min(...row),
    title: {
      height: title.getBoundingClientRect().height,
      lineHeight: parseFloat(getComputedStyle(title).lineHeight),
      overflow: getComputedStyle(title).textOverflow,
    },
    expanded: document.getElementById("toolbar-more")?.getAttribute("aria-expanded") ?? null,
    claims: {
      shown: shown(claims),
      fontSize: Math.min(...items.map((li) => parseFloat(getComputedStyle(li).fontSize))),
      right: Math.max(...items.map((li) => li.getBoundingClientRect().right)),
      firstLine: items.length ? items[0].getClientRects()[0].toJSON() : null,
      box: claims.getBoundingClientRect().toJSON(),
    },
  };
}"""

# Where each highlight's first rect is, against the header's bottom and the window's.
IN_VIEW = """(id) => {
  const box = document.querySelector(`.hl-rect[data-highlight-id="${id}"]`).getBoundingClientRect();
  const top = document.querySelector("header").getBoundingClientRect().bottom;
  return box.top >= top && box.bottom <= innerHeight;
}"""

ON_PHONE_ROW = ["page-input", "page-count", "highlight-prev", "highlight-status", "highlight-next"]
IN_MENU = ["page-prev", "page-next", "zoom-out", "zoom-level", "zoom-in", "zoom-fit"]


def expect(target: Any) -> Any:
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(target)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, sample_pdf: Path) -> Iterator[LiveService]:
    work = tmp_path_factory.mktemp("phone")
    env = _env(work)
    ingest_with_cli(env, sample_pdf, "sample")
    if shutil.which("tesseract") is not None:  # a scan is read by OCR at ingest
        paragraphs = ["The harbour board met on Tuesday.", FAX_SENTENCE, "Fares rise in May."]
        ingest_with_cli(env, write_fax_scan_pdf(work / "fax.pdf", paragraphs), "fax")
    with live_service(work, env, "serve") as running:
        yield running


@contextmanager
def _opened(browser: Any, url: str, device: dict[str, Any]) -> Iterator[Any]:
    """The viewer at ``url`` on ``device``, loaded without an error, a failed request or a
    console error, none of which may happen while the test runs either."""
    context = browser.new_context(**device)
    page = context.new_page()
    problems: list[str] = []
    watch_for_failures(page, problems)
    try:
        page.goto(url)
        state = page.evaluate("window.__viewer.ready")
        assert state["status"] == "ready", state
        assert state["errors"] == [], state["errors"]
        yield page
        assert problems == []
    finally:
        context.close()


def _shot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def _assert_rects_on_words(page: Any, result: dict[str, Any]) -> None:
    """test_viewer's measure: the text-layer characters under each highlight's rects."""
    page.evaluate("window.__viewer.settled()")
    drawn = page.evaluate(MEASURE)["rects"]
    assert drawn
    for highlight in result["highlights"]:
        under = "".join(r["text"] for r in drawn if r["id"] == highlight["highlight_id"])
        got, want = _letters(under), _letters(highlight["text"])
        assert Levenshtein.distance(got, want) <= max(1, len(want) // 100), (got, want)


def test_phone_header_is_one_row_with_the_claims_readable(
    browser: Any, service: LiveService
) -> None:
    result = _citation(service, CLAIMED)
    first = result["highlights"][0]["highlight_id"]
    with _opened(browser, service.url + result["viewer_link"], PHONE) as page:
        header = page.evaluate(HEADER)
        assert header["height"] / header["viewport"] <= HEADER_SHARE, header
        # One row: the title and every control shown are centred on the same line.
        assert header["rowSpread"] <= 4, header
        assert [c for c in ON_PHONE_ROW if not header["shown"][c]] == [], header
        assert [c for c in IN_MENU if header["shown"][c]] == [], header
        assert header["shown"]["toolbar-more"], header
        assert header["expanded"] == "false", header
        assert header["title"]["overflow"] == "ellipsis", header
        assert header["title"]["height"] < 1.5 * header["title"]["lineHeight"], header
        assert not header["keys"], "the key hint shows on a touch screen"
        # Nothing wider than the phone: the page scrolls sideways inside its column only.
        assert header["pageWidth"] <= header["windowWidth"], header
        # The claim: shown at a readable size, within the screen, its first line in view.
        claims = header["claims"]
        assert claims["shown"], claims
        assert claims["fontSize"] >= 13, claims
        assert claims["right"] <= header["windowWidth"], claims
        assert claims["box"]["top"] <= claims["firstLine"]["top"], claims
        assert claims["firstLine"]["bottom"] <= claims["box"]["bottom"], claims
        assert page.evaluate(IN_VIEW, first), "the first highlight is under the header"
        _assert_rects_on_words(page, result)
        _shot(page, "phone-390-claims")

        # The menu button opens the rest as a second row, and they work by touch.
        more = page.get_by_role("button", name="More controls")
        more.tap()
        expect(more).to_have_attribute("aria-expanded", "true")
        opened = page.evaluate(HEADER)
        # The controls it shows come before it in the document: focus goes to them, so the
        # next Tab does not leave the header.
        focused = page.evaluate("document.activeElement.id")
        assert focused in {"page-prev", "page-next", "zoom-out", "zoom-in", "zoom-fit"}, focused
        assert [c for c in IN_MENU if not opened["shown"][c]] == [], opened
        assert opened["pageWidth"] <= opened["windowWidth"], opened
        scale = page.evaluate("window.__viewer.scale")
        page.get_by_role("button", name="Zoom in").tap()
        page.wait_for_function(f"window.__viewer.scale > {scale}")
        _assert_rects_on_words(page, result)
        _shot(page, "phone-390-menu")
        page.get_by_role("button", name="Fit width").tap()
        more.tap()
        expect(more).to_have_attribute("aria-expanded", "false")
        closed = page.evaluate(HEADER)
        assert closed["height"] == pytest.approx(header["height"], abs=1), closed
        # The highlight buttons in the row step through the highlights.
        status = page.locator("#highlight-status")
        count = len(result["highlights"])
        page.get_by_role("button", name="Next highlight").tap()
        expect(status).to_contain_text(f"{min(2, count)} of {count}")


def test_desktop_header_keeps_every_control_and_the_key_hint(
    browser: Any, service: LiveService
) -> None:
    result = _citation(service, CLAIMED)
    with _opened(browser, service.url + result["viewer_link"], DESKTOP) as page:
        header = page.evaluate(HEADER)
        assert [c for c in ON_PHONE_ROW + IN_MENU if not header["shown"][c]] == [], header
        assert not header["shown"]["toolbar-more"], header
        assert header["keys"], "the key hint is gone from the desktop"
        _assert_rects_on_words(page, result)
        _shot(page, "desktop-1280-claims")
    # A touch screen as wide (a tablet, a touch laptop): the same controls, no key hint.
    with _opened(
        browser, service.url + result["viewer_link"], {**DESKTOP, "has_touch": True}
    ) as page:
        header = page.evaluate(HEADER)
        assert [c for c in ON_PHONE_ROW + IN_MENU if not header["shown"][c]] == [], header
        assert not header["keys"], "the key hint shows on a touch screen"


# The first page's canvas: how many of its pixels are ink (dark), of how many.
INK = """() => {
  const canvas = document.querySelector('.page[data-page-number="1"] canvas');
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let ink = 0;
  for (let i = 0; i < data.length; i += 4) if (data[i] < 100 && data[i + 3] > 0) ink += 1;
  return { ink, pixels: data.length / 4 };
}"""


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="Tesseract is not installed")
def test_a_fax_coded_scan_finds_its_wasm_decoders(browser: Any, service: LiveService) -> None:
    result = _citation(service, FAX)
    wasm: dict[str, tuple[int, str]] = {}
    with _opened(browser, service.url + result["viewer_link"], DESKTOP) as page:
        # The worker's requests are the page's too: the decoders' answers are seen here.
        page.on(
            "response",
            lambda r: (
                r.url.endswith(".wasm")
                and wasm.setdefault(r.url.rsplit("/", 1)[1], (r.status, r.headers["content-type"]))
            ),
        )
        page.reload()
        assert page.evaluate("window.__viewer.ready")["status"] == "ready"
        page.evaluate("window.__viewer.settled()")
        drawn = page.evaluate(MEASURE)["rects"]
        assert {r["id"] for r in drawn} == {h["highlight_id"] for h in result["highlights"]}
        ink = page.evaluate(INK)
        # A page of text is a few per cent ink: the scan was decoded, not left blank.
        assert 0.002 < ink["ink"] / ink["pixels"] < 0.2, ink
        _shot(page, "scan-fax-page1")
    # Only jbig2: the ICC grey asks for no qcms_bg.wasm, pdf.js's fetching being the page's.
    assert wasm == {"jbig2.wasm": (200, "application/wasm")}, wasm
