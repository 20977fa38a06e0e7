"""The import layering of ARCHITECTURE.md holds (import-linter's contracts in pyproject.toml),
and the check is real: the upward import ``documents -> highlights`` that the layering replaced
(the upsert deleting stale highlights itself) breaks it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# Runs lint-imports: another program, so `make test-fast` leaves it out (make check runs it).
pytestmark = pytest.mark.slow


def _lint(app_root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(app_root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=app_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_layers_hold() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def _with_line(tmp_path: Path, module: str, line: str) -> Path:
    copy = tmp_path / "tree"
    shutil.copytree(ROOT / "app", copy / "app", ignore=shutil.ignore_patterns("static"))
    path = copy / "app" / module
    text = path.read_text()
    marker = "from __future__ import annotations\n"
    path.write_text(text.replace(marker, marker + line + "\n", 1))
    return copy


def test_an_upward_import_breaks_them(tmp_path: Path) -> None:
    tree = _with_line(
        tmp_path, "documents/service.py", "from app.highlights import repository as highlights"
    )
    result = _lint(tree)
    assert result.returncode != 0
    assert "app.documents.service -> app.highlights.repository" in result.stdout


def test_a_pure_package_importing_the_app_breaks_them(tmp_path: Path) -> None:
    tree = _with_line(tmp_path, "selection/terms.py", "from app.core.config import Settings")
    result = _lint(tree)
    assert result.returncode != 0
    assert "app.selection.terms -> app.core.config" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "breach"),
    [
        # The issue's own example: metrics are state and I/O, not text matching.
        ("alignment/locate.py", "from app.core import metrics", "app.alignment.locate -> app.core"),
        ("alignment/text.py", "import subprocess", "app.alignment.text -> subprocess"),
        ("alignment/index.py", "from pathlib import Path", "app.alignment.index -> pathlib"),
        ("alignment/matcher.py", "import threading", "app.alignment.matcher -> threading"),
        ("alignment/geometry.py", "import pymupdf", "app.alignment.geometry -> pymupdf"),
        ("selection/support.py", "import os", "app.selection.support -> os"),
        (
            "alignment/furniture.py",
            "from app.pdfs import index_cache",
            "app.alignment.furniture -> app.pdfs.index_cache",
        ),
    ],
)
def test_io_in_a_pure_package_breaks_them(
    tmp_path: Path, module: str, line: str, breach: str
) -> None:
    result = _lint(_with_line(tmp_path, module, line))
    assert result.returncode != 0, result.stdout
    assert breach in result.stdout, result.stdout


def test_routes_take_the_parts_they_use() -> None:
    """Routes get their part of the service (HighlightsDep, DocumentsDep, ...) from
    app/api/deps.py, never the whole app state: only deps.py, and routing.py's raw-body guard
    (which runs before FastAPI solves dependencies), reach into ``app.state``."""
    reaching = [
        path.name
        for path in sorted((ROOT / "app" / "api").glob("*.py"))
        if path.name not in {"deps.py", "routing.py"}
        and any(
            word in path.read_text()
            for word in ("get_services", "app.state", "Services", "StateDep", "SessionDep")
        )
    ]
    assert reaching == []
