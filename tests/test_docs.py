"""The documentation holds what a test can hold: the README stays a front door, every link and
every cited file exists, every bench script is in bench/README.md, every setting and every metric
is documented. Fast: reads files only."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from app.core import metrics
from app.core.config import Settings
from tests.conftest import PROJECT_ROOT

README = PROJECT_ROOT / "README.md"
DOCS = PROJECT_ROOT / "docs"
PAGES = [README, PROJECT_ROOT / "ARCHITECTURE.md", *sorted(DOCS.glob("*.md"))]
CONTRACT = PROJECT_ROOT / "frontend-contract"
LINKED = [
    README,
    *sorted(DOCS.glob("*.md")),
    PROJECT_ROOT / "bench" / "README.md",
    CONTRACT / "README.md",
]
TOP_LEVEL = {p.name for p in PROJECT_ROOT.iterdir() if p.is_dir()}
# What the benches and tests write, git-ignored: cited as where to look, never in the repository.
OUTPUTS = ("bench/results",)

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
# A path in backquotes, e.g. `app/pdfs/ocr.py`, `tests/api/test_scanned.py::test_x`, `bench/`.
CITED = re.compile(r"`((?:app|bench|scripts|tests)/[\w./-]*)(?:::(\w+))?")
# ARCHITECTURE.md names app modules from inside app/: `highlights/service.py`, `pdfs/ocr.py`.
SHORT = re.compile(r"`(\w+)/([\w/]+\.py)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


def test_the_readme_is_a_front_door() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the reference goes to docs/"


@pytest.mark.parametrize("page", LINKED, ids=lambda p: str(p.relative_to(PROJECT_ROOT)))
def test_every_relative_link_points_to_a_file_and_heading_that_exist(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{page.name}: {broken}"


def _cited(page: Path) -> set[tuple[str, str | None]]:
    text = page.read_text()
    found = {(path.rstrip("/."), test) for path, test in CITED.findall(text)}
    if page.name == "ARCHITECTURE.md":
        found |= {
            (f"app/{package}/{rest}", None)
            for package, rest in SHORT.findall(text)
            if package not in TOP_LEVEL
        }
    return {(path, test) for path, test in found if not path.startswith(OUTPUTS)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(PROJECT_ROOT)))
def test_every_cited_file_exists(page: Path) -> None:
    missing = []
    for path, test in sorted(_cited(page), key=str):
        file = PROJECT_ROOT / path
        if not file.exists():
            missing.append(path)
        elif test and not re.search(rf"def {test}\b", file.read_text()):
            missing.append(f"{path}::{test}")
    assert not missing, f"{page.name} cites what is not in the repository: {missing}"


def test_every_bench_script_is_in_the_bench_readme() -> None:
    text = (PROJECT_ROOT / "bench" / "README.md").read_text()
    missing = [p.name for p in sorted((PROJECT_ROOT / "bench").glob("*.py")) if p.name not in text]
    assert not missing, f"bench/README.md does not name {missing}"


def test_every_setting_is_in_the_configuration_page() -> None:
    text = (DOCS / "configuration.md").read_text()
    missing = [
        f"HIGHLIGHT_{name.upper()}"
        for name in Settings.model_fields
        if f"`HIGHLIGHT_{name.upper()}`" not in text
    ]
    assert not missing, f"docs/configuration.md has no row for {missing}"


def test_every_metric_is_in_the_operating_page() -> None:
    text = (DOCS / "operating.md").read_text()
    names = [
        value._name
        for value in vars(metrics).values()
        if hasattr(value, "_name") and hasattr(value, "_documentation")
    ]
    assert names
    missing = [name for name in names if f"`{name}" not in text]
    assert not missing, f"docs/operating.md does not list {missing}"
