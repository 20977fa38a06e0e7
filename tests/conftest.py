"""Shared test fixtures: paths to the shared real-PDF corpus (optional) and the project root."""

from __future__ import annotations

from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
# The team's real-PDF corpus sits beside the checkout; a user's clone will not have it.
SHARED_PDFS = PROJECT_ROOT.parent / "shared" / "pdfs"


@pytest.fixture(scope="session")
def shared_pdfs() -> Path:
    if not (SHARED_PDFS / "MANIFEST.tsv").is_file():
        pytest.skip(f"real-PDF corpus not found at {SHARED_PDFS} (only the team's machines have it)")
    return SHARED_PDFS
