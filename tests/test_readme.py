"""The README's run command, as a user runs it: `highlight-service demo` in a fresh folder, then
the README's example request over real HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import PROJECT_ROOT


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def demo_server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIGHLIGHT_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "demo", "--port", str(port)],
        cwd=tmp_path,  # the defaults put the database and PDFs under ./var
        env={**env, "PYTHONPATH": str(PROJECT_ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(
                    f"demo exited early:\n{process.stdout.read() if process.stdout else ''}"
                )
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.3)
        else:
            pytest.fail("demo did not answer /healthz within 60 s")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)
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
