"""The README's run command, as a user runs it: `highlight-service demo` in a fresh folder, then
the README's example request over real HTTP; and the README's example (and docs/api.md's, in
full) is that request and the answer the service gives it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import PROJECT_ROOT
from tests.fixtures.live import LiveService, live_service, poll

# Starts server processes, a browser or other programs: `make test-fast` leaves it out.
pytestmark = pytest.mark.slow

README = PROJECT_ROOT / "README.md"
API_DOC = PROJECT_ROOT / "docs" / "api.md"
EXAMPLES = PROJECT_ROOT / "frontend-contract" / "examples"
READY = "highlight-service ready on "


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[LiveService]:
    # The defaults put the database and PDFs under ./var of the working folder.
    with live_service(tmp_path, {}, "demo") as service:
        yield service
    assert (tmp_path / "var" / "highlight.db").is_file()


def test_demo_answers_the_readme_example(demo: LiveService) -> None:
    request = json.loads((EXAMPLES / "batch-request.json").read_text())
    response = httpx.post(f"{demo.url}/v2/highlights/batch", json=request, timeout=30)
    assert response.status_code == 200
    data = response.json()
    assert (data["status"], data["method"]) == ("partial", "lexical")
    assert [r["status"] for r in data["results"]] == ["highlighted", "highlighted", "fallback"]
    pdf = httpx.get(f"{demo.url}{data['results'][0]['link'].split('#')[0]}", timeout=10)
    assert pdf.status_code == 200
    assert pdf.content.startswith(b"%PDF")


def test_demo_start_up_says_what_a_person_needs_and_nothing_more(
    demo: LiveService, tmp_path: Path
) -> None:
    """Once: the migration, the sample's chunk ids (what the example cites), and one ready line
    with the address, the database's kind and name, the LLM and auth. No alembic or uvicorn
    chatter, no URL-encoded database URI, no server path."""
    assert poll(lambda: READY in demo.output(), 10)
    # JSON lines: stderr is not a terminal here (HIGHLIGHT_LOG_FORMAT=auto).
    records = [json.loads(line) for line in demo.output().splitlines() if line.startswith("{")]
    ready = next(i for i, r in enumerate(records) if r["message"].startswith(READY))
    # OCR's warning when Tesseract is missing is a warning a person needs; anything else counts.
    said = [r["message"] for r in records[: ready + 1] if "OCR is off" not in r["message"]]
    assert said == [
        "database SQLite highlight.db migrated to 0005 (0001, 0002, 0003, 0004, 0005)",
        "sample document sample-assembly-2025-11-20 ingested: chunks "
        "['sample-assembly-2025-11-20-c0000', 'sample-assembly-2025-11-20-c0001']",
        f"highlight-service ready on {demo.url} (database SQLite highlight.db, "
        "LLM none (sentences chosen by word overlap), auth off)",
    ]
    output = demo.output()
    for noise in ("alembic", "Uvicorn running", "%3A", "file:", str(tmp_path)):
        assert noise not in output, noise


def json_blocks(section: str) -> list[str]:
    return re.findall(r"```json\n(.*?)```", section, re.S)


def test_the_readme_example_is_the_request_the_curl_sends_and_its_answer() -> None:
    """The README shows the file its curl sends and an excerpt of the answer recorded from the
    service; docs/api.md shows both whole (tests/test_contract.py checks that recording against
    a live answer), pretty-printed as the README's `python3 -m json.tool` prints it."""
    text = README.read_text()
    assert "-d @frontend-contract/examples/batch-request.json | python3 -m json.tool" in text
    section = text[text.index("## The example") :]
    request_file = json.loads((EXAMPLES / "batch-request.json").read_text())
    recorded = json.loads((EXAMPLES / "batch-response.json").read_text())
    printed = json.dumps(recorded, indent=4).splitlines()
    assert json.loads(json_blocks(section)[0]) == request_file

    # The excerpt: runs of the printed answer's lines, in order, between "..." lines.
    (excerpt,) = re.findall(r"```jsonc\n(.*?)```", section, re.S)
    runs = re.split(r"^\s*\.\.\.\n", excerpt, flags=re.M)
    assert len(runs) > 1, "the excerpt marks what it leaves out with ..."
    at = 0
    for run in runs:
        lines = run.splitlines()
        found = next(
            (i for i in range(at, len(printed)) if printed[i : i + len(lines)] == lines), None
        )
        assert found is not None, f"not in the recorded answer (in order):\n{run}"
        at = found + len(lines)

    api = API_DOC.read_text()
    request, response = json_blocks(api[api.index("## The example request") :])[:2]
    assert json.loads(request) == request_file
    assert response == json.dumps(recorded, indent=4) + "\n"
