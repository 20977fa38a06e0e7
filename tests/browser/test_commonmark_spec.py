"""The CommonMark spec (0.31.2, 652 examples) as a test of the text the service serves of
Markdown: each example uploaded through the API as ``example.md``, its text read back from
``GET /v2/documents/{id}/text``, against what Chromium shows of the spec's expected HTML
(``tests/fixtures/commonmark.py`` says what is compared and why). At least 98% must be equal;
the failures are printed. By this same measure the old hand-written rules served 420 of them
(64.4%); markdown-it-py, with the HTML reader for HTML blocks, serves all 652.

One SQLite database (the extraction does not depend on the database; the API's tests run both),
the in-process ASGI client, all examples in one browser page."""

from __future__ import annotations

import asyncio
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.fixtures import commonmark
from tests.fixtures.app import app_client, make_settings

EQUAL_AT_LEAST = 0.98


def _served(database_url: str, pdf_root: Path, markdowns: list[str]) -> list[str]:
    async def run() -> list[str]:
        async with app_client(make_settings(database_url, pdf_root)) as client:
            return await commonmark.served_texts(client, markdowns)

    # Playwright's sync API keeps an event loop running in this thread: the app runs in another.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, run()).result()


def test_the_served_text_of_the_commonmark_examples_is_what_a_browser_shows(
    browser: Any, sqlite_template: Path, tmp_path: Path
) -> None:
    examples = commonmark.examples()
    assert len(examples) == 652
    page = browser.new_page()
    shown = commonmark.shown_texts(page, [e.html for e in examples])
    page.close()
    database = tmp_path / "highlight.db"
    shutil.copyfile(sqlite_template, database)
    served = _served(
        f"sqlite+aiosqlite:///{database}", tmp_path / "pdfs", [e.markdown for e in examples]
    )
    outcomes = commonmark.compare(examples, served, shown)
    equal = sum(o.equal for o in outcomes)
    report = commonmark.report(outcomes)
    sys.stdout.write(report + "\n")  # shown with -s or -rP, and in the failure below
    assert equal >= EQUAL_AT_LEAST * len(examples), report
    # The harness reads what a browser shows: a code block's tabs, as written.
    assert shown[0] == "foo\tbaz\t\tbim\n"
