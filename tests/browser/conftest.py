"""A real browser for the reference viewer: Debian's Chromium driven by Playwright (its own
browser download does not work here). CI installs Chromium and sets HIGHLIGHT_REQUIRE_BROWSER=1,
so there the tests fail instead of skipping when it is missing."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    # Without these Chromium keeps reaching for Google's servers, which this network refuses.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _unavailable(reason: str) -> None:
    if os.environ.get("HIGHLIGHT_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (HIGHLIGHT_REQUIRE_BROWSER=1)")
    pytest.skip(f"{reason}: install Debian's chromium to run the browser tests")


# Module scope: Playwright's sync API keeps an event loop running in this thread while it is
# open, and the async tests that run after this module need the thread to themselves.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        _unavailable(f"no Chromium at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()
