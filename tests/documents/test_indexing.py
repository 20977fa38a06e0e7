"""Index builds the batch stopped waiting for: their outcome is kept for the next request."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

from app.alignment.index_cache import IndexCache, IndexPending
from app.documents.errors import PdfTooComplex
from app.documents.indexing import cached_index
from app.documents.workers import PdfWorkers, WorkerLimits
from tests.fixtures.hostile_pdfs import write_text_bomb_pdf

pytestmark = pytest.mark.slow  # starts PDF worker processes


def test_a_refusal_found_after_the_batch_stopped_waiting_is_remembered(tmp_path: Path) -> None:
    data = write_text_bomb_pdf(tmp_path / "bomb.pdf").read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    workers, cache = PdfWorkers(WorkerLimits(workers=1, timeout_s=30)), IndexCache()
    try:
        with pytest.raises(IndexPending):
            cached_index(workers, cache, lambda: data, sha, "bomb.pdf", wait_s=0)
        deadline = time.monotonic() + 60
        while cache.refusal(sha) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "cannot be processed" in (cache.refusal(sha) or "")
        started = time.monotonic()
        with pytest.raises(PdfTooComplex):
            cached_index(workers, cache, lambda: data, sha, "bomb.pdf", wait_s=0)
        assert time.monotonic() - started < 1  # refused at once, no second build
    finally:
        workers.close()
