"""Importing the app loads none of the heavy libraries that only some paths use. Each worker
process of ``serve --workers N`` imports the app before it can answer the supervisor's first
health check (app/server_workers.py); the OpenAI client library alone was a third of that.

Which modules are loaded is read from ``sys.modules`` of a fresh interpreter, not timed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import PROJECT_ROOT

# Loaded where they are used, not by importing the app.
LAZY = {
    "openai": "the LLM client's library, once services.build_llm builds a client",
    "app.llm.client": "the LLM client, built only when an LLM is configured",
    "pymupdf": "PyMuPDF, in the PDF worker processes (preloaded by their forkserver)",
    "app.pdfs.extract": "the text index builder, run in the PDF workers",
    "alembic": "migrations: `migrate`, `serve` on start, /readyz's revisions",
    "mako": "alembic's templates",
    "sqlalchemy.dialects.postgresql": "the PostgreSQL dialect, by a PostgreSQL engine",
    "markdown_it": "the Markdown parser (60 ms), on the first Markdown file read",
}

pytestmark = pytest.mark.slow  # each case runs a fresh interpreter


def _loaded_after(code: str, **env: str) -> set[str]:
    """The modules loaded once ``code`` has run in a fresh interpreter (no HIGHLIGHT_ setting
    from this environment, ``env`` added)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HIGHLIGHT_")}
    result = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        cwd=PROJECT_ROOT,
        env={**clean, **env, "PYTHONPATH": str(PROJECT_ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


@pytest.mark.parametrize(
    "code",
    [
        "import app.main",
        # What a spawned worker imports before it can answer a health check.
        "import app.cli, app.main, app.server_workers",
    ],
)
def test_importing_the_app_loads_none_of_the_lazy_modules(code: str) -> None:
    loaded = _loaded_after(code)
    assert not loaded & LAZY.keys(), {name: LAZY[name] for name in loaded & LAZY.keys()}


def test_an_app_without_an_llm_never_loads_the_openai_library() -> None:
    loaded = _loaded_after(
        "from app.core.config import Settings\n"
        "from app.main import create_app\n"
        "from app.services import build_llm\n"
        "settings = Settings(_env_file=None, llm_provider='none')\n"
        "create_app(settings)\n"
        "assert build_llm(settings) is None"
    )
    assert "openai" not in loaded
    assert "pymupdf" not in loaded


def test_building_an_llm_client_loads_it() -> None:
    # The check above can see the library: building a client loads it.
    loaded = _loaded_after(
        "from app.core.config import Settings\n"
        "from app.services import build_llm\n"
        "build_llm(Settings(_env_file=None, llm_provider='vllm',"
        " llm_base_url='http://127.0.0.1:9/v1', llm_model='m'))"
    )
    assert {"openai", "app.llm.client"} <= loaded
