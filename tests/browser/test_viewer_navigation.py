"""The reference viewer's toolbar and keys in a real browser, against the real service: a link
without a document says what to fix; "Page N of M" follows the scroll and jumps to a typed page;
zoom re-lays the pages with every rectangle still on its words; n/p step through the highlights
across pages; every control is reached with Tab and has a name. One service for the module and
one page load per test (two for the failures), so the file stays quick.

Screenshots (nav-*.png) are kept under bench/results/viewer/, as test_viewer.py's are; the
README's picture of the viewer is made here too (HIGHLIGHT_UPDATE_EXAMPLES=1 copies it over
frontend-contract/viewer-screenshot.png).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pymupdf
import pytest
from rapidfuzz.distance import Levenshtein

from tests.api.helpers import CHUNK_MAIN
from tests.browser.test_viewer import (
    GENERATED,
    MEASURE,
    SCREENSHOTS,
    _citation,
    _env,
    _letters,
    _yellow_box,
)
from tests.conftest import PROJECT_ROOT
from tests.fixtures.live import LiveService, ingest_with_cli, live_service

# Starts a server process and a browser: `make test-fast` leaves it out.
pytestmark = pytest.mark.slow

VIEWPORT = {"width": 1000, "height": 800}
README_VIEWPORT = {"width": 1000, "height": 1200}
README_SCREENSHOT = PROJECT_ROOT / "frontend-contract" / "viewer-screenshot.png"

# Three sentences of the sample's first chunk: one on page 1, one across the page break, one on
# page 2. One citation of them gives a viewer link with three highlights.
THREE_SENTENCES = (
    "The Minister for Water said that the Bill extends piped water to forty thousand households "
    "in the northern counties by 2027 [1]. Eleven bids were received and three firms were "
    "short-listed after a technical evaluation by the procurement committee [1]. Road deaths "
    "rose by 8 per cent in 2024, to 4,690 people [1]."
)

# The page the reader sees most of below the sticky header, measured here without the viewer's
# own arithmetic; and where a highlight's first rect is, and which rects are marked current.
VIEW = """(id) => {
  const top = document.querySelector("header").getBoundingClientRect().bottom;
  let page = 0, most = -1;
  for (const el of document.querySelectorAll(".page")) {
    const r = el.getBoundingClientRect();
    const seen = Math.min(r.bottom, innerHeight) - Math.max(r.top, top);
    if (seen > most + 0.5) [page, most] = [Number(el.dataset.pageNumber), seen];
  }
  const first = id && document.querySelector(`.hl-rect[data-highlight-id="${id}"]`);
  const box = first && first.getBoundingClientRect();
  const pageBox = document.querySelector(".page").getBoundingClientRect();
  return {
    mostVisible: page,
    indicator: Number(document.getElementById("page-input").value),
    currentPage: window.__viewer.currentPage,
    scale: window.__viewer.scale,
    currentHighlight: window.__viewer.currentHighlight,
    pageWidth: pageBox.width,
    headerBottom: top,
    scrollY: window.scrollY,
    inView: box ? box.top >= top && box.bottom <= innerHeight : null,
    current: [...document.querySelectorAll(".hl-rect.current")].map((el) => el.dataset.highlightId),
  };
}"""

PAGE_TOP = """(n) => document.querySelector(`.page[data-page-number="${n}"]`)
  .getBoundingClientRect().top"""

# Resolves once the window has not scrolled for a few frames: keyboard scrolling is animated.
SCROLL_STILL = """() => new Promise((done) => {
  let last = -1, still = 0;
  const tick = () => {
    if (window.scrollY === last) still += 1; else [last, still] = [window.scrollY, 0];
    if (still >= 5) done(true); else requestAnimationFrame(tick);
  };
  tick();
})"""


def expect(target: Any) -> Any:
    """Playwright's retrying assertions, imported late like the browser itself (conftest.py)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(target)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, sample_pdf: Path) -> Iterator[LiveService]:
    work = tmp_path_factory.mktemp("navigation")
    env = _env(work)
    ingest_with_cli(env, sample_pdf, "sample")
    with live_service(work, env, "serve") as running:
        yield running


@pytest.fixture(scope="module")
def three(service: LiveService) -> dict[str, Any]:
    """A citation with three highlights: page 1, pages 1-2, page 2, in document order."""
    batch = {
        "query": "What did the House hear?",
        "answer": THREE_SENTENCES,
        "citations": [{"chunk_id": CHUNK_MAIN, "citation_id": "1"}],
    }
    response = httpx.post(f"{service.url}/v2/highlights/batch", json=batch, timeout=60)
    assert response.status_code == 200, response.text
    (result,) = response.json()["results"]
    pages = [sorted({r["page"] for r in h["rects"]}) for h in result["highlights"]]
    assert pages == [[1], [1, 2], [2]], pages
    return dict(result)


@contextmanager
def _opened(browser: Any, url: str, viewport: dict[str, int] = VIEWPORT) -> Iterator[Any]:
    """The viewer at ``url``, loaded without an error; it must throw none while the test runs."""
    page = browser.new_page(viewport=viewport)
    thrown: list[str] = []
    page.on("pageerror", lambda e: thrown.append(str(e)))
    try:
        page.goto(url)
        state = page.evaluate("window.__viewer.ready")
        assert state["status"] == "ready", state
        assert state["errors"] == [], state["errors"]
        yield page
        assert thrown == []
    finally:
        page.close()


def _shot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"nav-{name}.png"))


def _view(page: Any, highlight_id: str | None = None) -> dict[str, Any]:
    page.evaluate(SCROLL_STILL)
    return dict(page.evaluate(VIEW, highlight_id))


def _assert_rects_on_words(page: Any, result: dict[str, Any]) -> None:
    """The text-layer characters under each highlight's rects are its sentence (test_viewer's
    measure), at whatever zoom the pages are laid out now."""
    page.evaluate("window.__viewer.settled()")
    drawn = page.evaluate(MEASURE)["rects"]
    for highlight in result["highlights"]:
        under = "".join(r["text"] for r in drawn if r["id"] == highlight["highlight_id"])
        got, want = _letters(under), _letters(highlight["text"])
        assert Levenshtein.distance(got, want) <= max(1, len(want) // 100), (got, want)


def test_viewer_without_a_document_says_what_to_fix(browser: Any, service: LiveService) -> None:
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(f"{service.url}/viewer")
        state = page.evaluate("window.__viewer.ready")
        assert state["status"] == "error", state
        assert [e["code"] for e in state["errors"]] == ["bad_request"], state
        expect(page.get_by_role("heading", level=1)).to_have_text("No document to show")
        alert = page.get_by_role("alert")
        expect(alert).to_be_visible()
        expect(alert).to_contain_text("no document_id")
        expect(alert).to_contain_text("viewer_link")
        assert "loading" not in page.locator("body").inner_text().lower()
        assert "loading" not in page.title().lower()
        expect(page.locator("#toolbar")).to_be_hidden()
        assert page.evaluate("document.body.dataset.status") == "error"
        _shot(page, "no-document")
        # A document the service does not have fails the same way, naming it.
        page.goto(f"{service.url}/viewer?document_id=no-such-document")
        assert page.evaluate("window.__viewer.ready")["status"] == "error"
        expect(page.get_by_role("heading", level=1)).to_have_text(
            "Could not show “no-such-document”"
        )
        expect(page.get_by_role("alert")).to_be_visible()
        assert "loading" not in page.locator("body").inner_text().lower()
    finally:
        page.close()


def test_page_indicator_follows_the_scroll_and_jumps_to_a_typed_page(
    browser: Any, service: LiveService
) -> None:
    with _opened(browser, f"{service.url}/viewer?document_id=sample") as page:
        number = page.get_by_role("spinbutton", name="Page number")
        previous = page.get_by_role("button", name="Previous page", exact=True)
        following = page.get_by_role("button", name="Next page", exact=True)
        expect(number).to_have_value("1")
        expect(page.locator("#page-count")).to_have_text("of 3")
        expect(previous).to_be_disabled()
        expect(following).to_be_enabled()
        assert page.locator(".page-label").all_inner_texts() == ["Page 1", "Page 2", "Page 3"]
        # Nothing to step through without highlights.
        expect(page.get_by_role("button", name="Next highlight")).to_be_disabled()
        expect(page.get_by_role("button", name="Previous highlight")).to_be_disabled()
        expect(page.locator("#highlight-status")).to_have_text("No highlights")

        # The browser's own scrolling (PageDown): the indicator is the page most in view.
        seen = []
        for _ in range(4):
            page.keyboard.press("PageDown")
            view = _view(page)
            assert view["indicator"] == view["currentPage"] == view["mostVisible"], view
            seen.append(view["indicator"])
        assert seen == sorted(seen), seen
        assert seen[0] == 1, seen
        assert 2 in seen, seen

        number.focus()
        page.keyboard.press("Control+A")
        page.keyboard.type("3")
        page.keyboard.press("Enter")
        expect(number).to_have_value("3")
        expect(following).to_be_disabled()
        expect(previous).to_be_enabled()
        view = _view(page)
        assert view["currentPage"] == 3, view
        # Page 3 starts just below the sticky header, not under it.
        top = page.evaluate(PAGE_TOP, 3)
        assert top - view["headerBottom"] == pytest.approx(8, abs=2), (top, view)
        _shot(page, "page-3")

        # Out of the number field (the next-page button is disabled, so Tab goes on to zoom),
        # the keys step between pages.
        page.keyboard.press("Tab")
        expect(page.get_by_role("button", name="Zoom out")).to_be_focused()
        page.keyboard.press("k")
        expect(number).to_have_value("2")
        page.keyboard.press("j")
        expect(number).to_have_value("3")
        previous.click()
        expect(number).to_have_value("2")
        assert page.evaluate(PAGE_TOP, 2) == pytest.approx(top, abs=1)
        page.keyboard.press("Home")
        view = _view(page)
        assert view["scrollY"] == 0, view
        assert view["indicator"] == view["mostVisible"] == 1, view
        expect(previous).to_be_disabled()


def test_zoom_relays_the_pages_with_the_rects_on_their_words(
    browser: Any, service: LiveService, three: dict[str, Any]
) -> None:
    first = three["highlights"][0]["highlight_id"]
    with _opened(browser, service.url + three["viewer_link"]) as page:
        start = _view(page, first)
        # The default zoom is unchanged: the widest page fits the column (1000 px less padding).
        assert start["pageWidth"] == pytest.approx(VIEWPORT["width"] - 32, abs=1), start
        assert start["inView"], start
        level = page.locator("#zoom-level")
        fitted = level.inner_text()

        page.keyboard.press("+")
        page.keyboard.press("=")  # "+" without Shift on most keyboards
        view = _view(page, first)
        assert view["scale"] > start["scale"] * 1.3, view
        assert view["pageWidth"] == pytest.approx(595 * view["scale"], abs=1), view
        assert view["inView"], "the zoom lost the reader's place"
        expect(level).not_to_have_text(fitted)
        _assert_rects_on_words(page, three)
        _shot(page, "zoom-in")

        zoom_out = page.get_by_role("button", name="Zoom out")
        for _ in range(5):
            zoom_out.click()
        view = _view(page, first)
        assert view["scale"] < start["scale"] / 2, view
        assert view["pageWidth"] == pytest.approx(595 * view["scale"], abs=1), view
        assert view["inView"], view
        _assert_rects_on_words(page, three)
        _shot(page, "zoom-out")

        page.keyboard.press("0")
        view = _view(page, first)
        assert view["scale"] == pytest.approx(start["scale"]), view
        assert view["pageWidth"] == pytest.approx(start["pageWidth"]), view
        expect(level).to_have_text(fitted)
        _assert_rects_on_words(page, three)
        _shot(page, "zoom-fit")


def test_n_and_p_step_through_highlights_across_pages(
    browser: Any, service: LiveService, three: dict[str, Any]
) -> None:
    ids = [h["highlight_id"] for h in three["highlights"]]
    with _opened(browser, service.url + three["viewer_link"]) as page:
        status = page.locator("#highlight-status")
        expect(status).to_have_text("Highlight 1 of 3")
        assert set(_view(page, ids[0])["current"]) == {ids[0]}

        page.keyboard.press("n")
        expect(status).to_have_text("Highlight 2 of 3")
        view = _view(page, ids[1])
        assert view["inView"], view
        # The sentence across the page break is one stop, marked on both pages.
        assert view["current"] == [ids[1], ids[1]], view
        _shot(page, "highlight-2")

        page.keyboard.press("n")
        expect(status).to_have_text("Highlight 3 of 3")
        view = _view(page, ids[2])
        assert view["inView"], view
        assert set(view["current"]) == {ids[2]}, view
        assert view["currentPage"] == 2, view
        assert not _view(page, ids[0])["inView"], "the viewer did not scroll to page 2"
        _shot(page, "highlight-3")

        page.keyboard.press("p")
        expect(status).to_have_text("Highlight 2 of 3")
        view = _view(page, ids[1])
        assert view["inView"], view
        assert set(view["current"]) == {ids[1]}, view

        # The buttons do the same, and the last highlight is followed by the first.
        following = page.get_by_role("button", name="Next highlight")
        following.click()
        following.click()
        expect(status).to_have_text("Highlight 1 of 3")
        assert _view(page, ids[0])["inView"]


# In tab order, with the key each one answers to (aria-keyshortcuts) and the key its tooltip
# names. The plus key is "+" with Shift on most keyboards, "=" without: the attribute names "="
# since "+" is its separator of modifiers.
CONTROLS = [
    ("button", "Previous page", "k", "k"),
    ("spinbutton", "Page number", None, None),
    ("button", "Next page", "j", "j"),
    ("button", "Zoom out", "-", "−"),
    ("button", "Zoom in", "=", "+"),
    ("button", "Fit width", "0", "0"),
    ("button", "Previous highlight", "p", "p"),
    ("button", "Next highlight", "n", "n"),
]


def test_every_control_is_reached_with_tab_and_has_a_name(
    browser: Any, service: LiveService, three: dict[str, Any]
) -> None:
    with _opened(browser, service.url + three["viewer_link"]) as page:
        # On page 2 no control is disabled (disabled ones are rightly out of the tab order).
        page.keyboard.press("n")
        page.keyboard.press("n")
        expect(page.get_by_role("spinbutton", name="Page number")).to_have_value("2")
        for role, name, key, shown in CONTROLS:
            page.keyboard.press("Tab")
            control = page.get_by_role(role, name=name, exact=True)
            expect(control).to_be_focused()
            outline = control.evaluate("(el) => getComputedStyle(el).outlineStyle")
            assert outline != "none", f"{name} shows no focus"
            assert control.get_attribute("aria-keyshortcuts") == key, name
            if shown is not None:
                assert f"({shown})" in (control.get_attribute("title") or ""), name
        # The keys are written out beside the controls too, for those who never hover.
        keys = page.locator(".keys kbd").all_inner_texts()
        assert keys == ["n", "p", "j", "k", "+", "−", "0"], keys


# The page-break highlight's rects and the two pages, in window coordinates.
SPAN = """(id) => {
  const rects = [...document.querySelectorAll(`.hl-rect[data-highlight-id="${id}"]`)];
  const boxes = rects.map((el) => el.getBoundingClientRect());
  const [page1, page2] = [1, 2].map((n) =>
    document.querySelector(`.page[data-page-number="${n}"]`).getBoundingClientRect());
  return {
    top: document.querySelector("header").getBoundingClientRect().bottom,
    bottom: innerHeight,
    y0: Math.min(...boxes.map((b) => b.top)),
    y1: Math.max(...boxes.map((b) => b.bottom)),
    pages: rects.map((el) => el.dataset.page),
    page1: page1.toJSON(),
    page2: page2.toJSON(),
  };
}"""


def test_readme_screenshot_shows_a_sentence_across_the_page_break(
    browser: Any, service: LiveService
) -> None:
    """The README's picture: the page-break sentence, the end of page 1 and the start of page 2
    in one view, with the toolbar; zoomed out step by step until both parts fit."""
    result = _citation(service, GENERATED[0])
    highlight = result["highlights"][0]
    assert {r["page"] for r in highlight["rects"]} == {1, 2}
    path = SCREENSHOTS / "readme-page-break.png"
    with _opened(browser, service.url + result["viewer_link"], README_VIEWPORT) as page:
        for _ in range(4):
            got = page.evaluate(SPAN, highlight["highlight_id"])
            if got["y1"] - got["y0"] < (got["bottom"] - got["top"]) * 0.9:
                break
            page.keyboard.press("-")
        else:
            pytest.fail(f"the page break never fits the window: {got}")
        # The sentence, both its parts and the break between them, mid-window.
        middle = (got["top"] + got["bottom"]) / 2
        page.evaluate("(dy) => window.scrollBy(0, dy)", (got["y0"] + got["y1"]) / 2 - middle)
        page.evaluate(SCROLL_STILL)
        page.evaluate("window.__viewer.settled()")
        got = page.evaluate(SPAN, highlight["highlight_id"])
        assert got["pages"] == ["1", "2"], got
        assert got["top"] <= got["y0"], got
        assert got["y1"] <= got["bottom"], got
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        png = page.screenshot(path=str(path))
    assert len(png) < 300_000, len(png)
    # The highlight colour on both sides of the break, in the picture itself.
    pixels = pymupdf.Pixmap(png)
    for box in (got["page1"], got["page2"]):
        region = pymupdf.IRect(
            int(box["left"]),
            int(max(box["top"], got["top"])),
            int(box["right"]),
            int(min(box["bottom"], got["bottom"])),
        )
        assert _yellow_box(pixels, region) is not None, region
    if os.environ.get("HIGHLIGHT_UPDATE_EXAMPLES") == "1":
        shutil.copyfile(path, README_SCREENSHOT)
