"""The README's run command, as a user runs it: `highlight-service demo` in a fresh folder, then
the README's example request over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import PROJECT_ROOT
from tests.fixtures.live import live_service

# Starts server processes, a browser or other programs: `make test-fast` leaves it out.
pytestmark = pytest.mark.slow


@pytest.fixture
def demo_server(tmp_path: Path) -> Iterator[str]:
    # The defaults put the database and PDFs under ./var of the working folder.
    with live_service(tmp_path, {}, "demo") as service:
        yield service.url
    assert (tmp_path / "var" / "highlight.db").is_file()


def test_demo_answers_the_readme_example(demo_server: str) -> None:
    request = json.loads(
        (PROJECT_ROOT / "frontend-contract/examples/batch-request.json").read_text()
    )
    response = httpx.post(f"{demo_server}/v2/highlights/batch", json=request, timeout=30)
    assert response.status_code == 200
    data = response.json()
    assert (data["status"], data["method"]) == ("partial", "lexical")
    assert [r["status"] for r in data["results"]] == ["highlighted", "highlighted", "fallback"]
    pdf = httpx.get(f"{demo_server}{data['results'][0]['link'].split('#')[0]}", timeout=10)
    assert pdf.status_code == 200
    assert pdf.content.startswith(b"%PDF")
