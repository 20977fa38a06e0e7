"""Markdown through the upload door (PUT /v2/documents/{id}/file) and GET /v2/documents/{id}/text,
on SQLite and PostgreSQL: a README that opens with HTML is read as Markdown when it says it is
one, a hard-wrapped line that starts with a number keeps it, no Markdown syntax reaches the
text, and the service answers /healthz while a Markdown bomb is read."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path

import httpx
import pytest

from tests.fixtures.app import app_client, make_settings
from tests.fixtures.markdown_bombs import BOMBS

# How real READMEs open (6 of the 66 the issue counted): a centred logo in HTML, then badges.
README = """<p align="center">
  <img alt="Ferry timetable logo" src="https://example.com/logo.png" width="120">
</p>
<p align="center"><em>When the ferries leave</em></p>

[![build](https://ci.example.com/badge.svg)](https://ci.example.com/ferry) [![PyPI version](https://img.example.com/pypi/ferry.svg)](https://pypi.example.com/ferry)

# Ferry timetable

Ferries leave **every hour** from the [north pier](https://example.com/pier).

| Route | Minutes |
|-------|---------|
| North | 40      |
"""


async def put(client: httpx.AsyncClient, body: str, filename: str, media: str) -> httpx.Response:
    return await client.put(
        "/v2/documents/readme/file",
        params={"filename": filename, "chunk": "true"},
        content=body.encode(),
        headers={"content-type": media},
    )


@pytest.mark.parametrize(
    ("filename", "media"),
    [("README.md", "application/octet-stream"), ("README", "text/markdown")],
)
async def test_a_readme_that_opens_with_html_is_read_as_markdown(
    database_url: str, pdf_root: Path, filename: str, media: str
) -> None:
    async with app_client(make_settings(database_url, pdf_root)) as client:
        uploaded = await put(client, README, filename, media)
        served = (await client.get("/v2/documents/readme/text")).json()
    assert uploaded.status_code == 201, uploaded.text
    assert uploaded.json()["source_format"] == "markdown"
    assert served["source_format"] == "markdown"
    assert served["title"] == "Ferry timetable"
    text = served["text"]
    assert text.split("\n\n") == [
        "Ferry timetable logo",
        "When the ferries leave",
        "build PyPI version",
        "Ferry timetable",
        "Ferries leave every hour from the north pier.",
        "Route\tMinutes",
        "North\t40",
    ]
    for syntax in ("[![", "](", "<p", "<img", "**", "|", "# "):
        assert syntax not in text
    kinds = [(b["kind"], b["level"]) for b in served["blocks"]]
    assert kinds == [
        ("paragraph", 0),
        ("paragraph", 0),
        ("paragraph", 0),
        ("heading", 1),
        ("paragraph", 0),
        ("row", 0),
        ("row", 0),
    ]


async def test_the_same_readme_named_as_text_is_html(database_url: str, pdf_root: Path) -> None:
    # Without the name or the type saying Markdown, markup at its start makes it HTML, as before.
    async with app_client(make_settings(database_url, pdf_root)) as client:
        uploaded = await put(client, README, "README.txt", "application/octet-stream")
    assert uploaded.json()["source_format"] == "html"


async def test_a_wrapped_line_that_starts_with_a_number_keeps_it(
    database_url: str, pdf_root: Path
) -> None:
    body = "Revenue grew 4% in fiscal\n2023. Margins fell.\n\n1. First item\n2. Second item\n"
    async with app_client(make_settings(database_url, pdf_root)) as client:
        await put(client, body, "report.md", "text/markdown")
        served = (await client.get("/v2/documents/readme/text")).json()
    assert (
        served["text"]
        == "Revenue grew 4% in fiscal 2023. Margins fell.\n\nFirst item\n\nSecond item"
    )
    assert [b["kind"] for b in served["blocks"]] == ["paragraph", "item", "item"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_health_answers_while_a_markdown_bomb_is_read(
    database_url: str, pdf_root: Path
) -> None:
    """The bomb is read in a thread, in pure Python, so the event loop keeps answering: health
    probes sent one after the other while it uploads are never held up for long against the
    upload's own duration (a ratio, not a time limit). An extraction holding the GIL in one C
    call (the old regexes) leaves one gap as long as itself: tried with such a stand-in, the
    longest gap was 0.93 of the upload; this extraction's, 0.06."""
    bomb = BOMBS["_a "](512_000)
    async with app_client(make_settings(database_url, pdf_root)) as client:
        await client.get("/healthz")  # the app warm
        started = time.perf_counter()
        upload = asyncio.create_task(put(client, bomb, "bomb.md", "text/markdown"))
        answers = [started]
        while not upload.done():
            probe = await client.get("/healthz")
            assert probe.status_code == 200
            answers.append(time.perf_counter())
        response = await upload
        answers.append(time.perf_counter())
    assert response.status_code == 201, response.text
    took = answers[-1] - started
    longest = max(later - earlier for earlier, later in itertools.pairwise(answers))
    assert len(answers) > 10
    assert longest < took / 4, f"/healthz waited {longest:.2f} s of an upload of {took:.2f} s"
