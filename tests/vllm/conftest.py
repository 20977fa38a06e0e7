"""Fixtures for the integration tests against a real vLLM server (CPU build, tiny random model).

Run them with ``.venv/bin/python -m pytest -m vllm tests/vllm``; the default run deselects them.

Which server is used:

* ``HIGHLIGHT_TEST_VLLM_URL`` set (e.g. ``http://127.0.0.1:8011/v1``): that server, never started
  or stopped here. ``HIGHLIGHT_TEST_VLLM_MODEL`` names its model (default ``tiny-llama``) and
  ``HIGHLIGHT_TEST_VLLM_LOG`` its log file, if the tests can read it.
* otherwise a server already started by ``scripts/vllm.sh start`` is reused (and left running);
* otherwise ``scripts/vllm.sh start`` starts one on ``HIGHLIGHT_TEST_VLLM_PORT`` (default 8011),
  which installs the virtualenv and builds the model first if needed, and stops it at the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from packaging.version import Version

PROJECT_ROOT = Path(__file__).resolve().parents[2]
VLLM_SH = PROJECT_ROOT / "scripts" / "vllm.sh"
DEFAULT_MODEL = "tiny-llama"
DEFAULT_PORT = "8011"
THIS_DIR = Path(__file__).resolve().parent
# The oldest vLLM the service supports (docs/llm.md, scripts/vllm.sh's VLLM_FLOOR).
VLLM_FLOOR = Version("0.32")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Safety net: a test in this directory that forgot `pytestmark = pytest.mark.vllm` must still be
    # deselected by the default `-m 'not vllm'` run (tryfirst: before the mark plugin filters).
    for item in items:
        if THIS_DIR in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.vllm)


@dataclass(frozen=True)
class VllmServer:
    base_url: str  # OpenAI base URL, ending in /v1
    model: str
    log_path: Path | None  # None when an external server's log is not known
    started_here: bool

    def max_model_len(self) -> int:
        """The served model's context (vLLM lists it at /v1/models): `make vllm` serves 16k for
        its token bench, a developer's `scripts/vllm.sh start` 2k."""
        with urllib.request.urlopen(self.base_url + "/models", timeout=10) as reply:
            models = json.load(reply)["data"]
        return int(next(m for m in models if m["id"] == self.model)["max_model_len"])

    def log_size(self) -> int:
        """Current end of the log; pass it to `log_since` to read what one test caused."""
        if self.log_path is None or not self.log_path.exists():
            return 0
        return self.log_path.stat().st_size

    def log_since(self, offset: int) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        with self.log_path.open("rb") as log:
            log.seek(offset)
            return log.read().decode("utf-8", errors="replace")

    def wait_for_log(self, text: str, offset: int = 0, timeout: float = 10.0) -> str:
        """The log since `offset` once it contains `text` (the server writes it asynchronously,
        possibly after answering); fails the test after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            log = self.log_since(offset)
            if text in log:
                return log
            if time.monotonic() > deadline:
                pytest.fail(f"{text!r} not in {self.log_path} after {timeout} s:\n{log[-2000:]}")
            time.sleep(0.1)


def _vllm_sh(*args: str) -> subprocess.CompletedProcess[str]:
    # stderr (progress, timings, log tail on failure) goes to the terminal; stdout is the answer.
    return subprocess.run(
        ["bash", str(VLLM_SH), *args], stdout=subprocess.PIPE, text=True, check=False
    )


def require_supported_version(base_url: str) -> None:
    """Fail the suite against a vLLM older than the floor: its findings would not hold for the
    service (vLLM serves its version at /version, beside /v1)."""
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/version", timeout=10) as reply:
        version = json.load(reply)["version"]
    if Version(version).release < VLLM_FLOOR.release:
        pytest.fail(f"vLLM {version} at {base_url} is older than the supported {VLLM_FLOOR}")


@pytest.fixture(scope="session")
def vllm_server() -> Iterator[VllmServer]:
    external = os.environ.get("HIGHLIGHT_TEST_VLLM_URL")
    if external:
        require_supported_version(external.rstrip("/"))
        log = os.environ.get("HIGHLIGHT_TEST_VLLM_LOG")
        yield VllmServer(
            base_url=external.rstrip("/"),
            model=os.environ.get("HIGHLIGHT_TEST_VLLM_MODEL", DEFAULT_MODEL),
            log_path=Path(log) if log else None,
            started_here=False,
        )
        return

    log_path = Path(_vllm_sh("log").stdout.strip())
    status = _vllm_sh("status")
    started_here = status.returncode != 0
    if started_here:
        port = os.environ.get("HIGHLIGHT_TEST_VLLM_PORT", DEFAULT_PORT)
        start = _vllm_sh("start", port)
        if start.returncode != 0:
            pytest.fail(f"scripts/vllm.sh start {port} failed (see its output above)")
        base_url = start.stdout.strip().splitlines()[-1]
    else:
        # Reused server may still be starting up; `start` with its own port waits for it.
        base_url = _vllm_sh("url").stdout.strip()
        port = base_url.rsplit(":", 1)[1].split("/")[0]
        if _vllm_sh("start", port).returncode != 0:
            pytest.fail("the running vLLM server (scripts/vllm.sh status) does not answer")
    try:
        require_supported_version(base_url)
        yield VllmServer(
            base_url=base_url, model=DEFAULT_MODEL, log_path=log_path, started_here=started_here
        )
    finally:
        if started_here:
            _vllm_sh("stop")


@pytest.fixture(scope="session")
def schema_validator() -> Any:
    """``validate(instance, schema)`` with a real Draft 2020-12 validator (jsonschema, a dev
    dependency), not a hand-written one."""

    def validate(instance: Any, schema: dict[str, Any]) -> None:
        jsonschema.Draft202012Validator(schema).validate(instance)

    return validate
