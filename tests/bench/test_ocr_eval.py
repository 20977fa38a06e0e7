"""bench/ocr_eval.py's core on one generated page: its scan, read by Tesseract, is found."""

from __future__ import annotations

import shutil
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

# The bench scripts import their siblings by bare name (they run as scripts); mypy checks
# app and tests, not bench, so these imports are untyped here.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from eval_quotes import Quote  # type: ignore[import-not-found]  # noqa: E402
from gen_irs import make_columns  # type: ignore[import-not-found]  # noqa: E402
from ocr_eval import TEXT, Doc, evaluate  # type: ignore[import-not-found]  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("tesseract") is None,
        reason="tesseract is not on PATH (apt-get install tesseract-ocr tesseract-ocr-eng)",
    ),
]


def test_scanned_page_quotes_are_found_where_the_text_was(tmp_path: Path) -> None:
    pdf = tmp_path / "gen_irs_columns.pdf"
    words, quotes = make_columns(pdf, seed=7, pages=2)
    on_page = [q for q in quotes if {w.page for w in q.words} == {1}][:12]
    # Page 2 is left blank in the copy: its sentences must not be found anywhere.
    elsewhere = [q for q in quotes if {w.page for w in q.words} == {2}][:6]
    negatives = [Quote(q.doc, "negative", q.text) for q in elsewhere]
    assert len(on_page) >= 10
    assert negatives
    doc = Doc(pdf.name, pdf, words, on_page + negatives, "eng", [1])

    with ProcessPoolExecutor(max_workers=1) as pool:
        runs = evaluate([doc], ["300"], tmp_path, pool)

    for variant in (TEXT, "300"):
        verdicts = runs[variant][pdf.name].verdicts
        hits = verdicts[: len(on_page)].count("hit") / len(on_page)
        assert hits >= 0.9, (variant, verdicts)
        assert "false_positive" not in verdicts[len(on_page) :], (variant, verdicts)
    run = runs["300"][pdf.name]
    assert run.auto_pages == [1]  # the scan is what "auto" mode reads, the blank page is not
    assert run.alignment is not None
    matched, dx, dy, p90 = run.alignment
    assert matched >= 0.95, run.alignment
    assert abs(dx) < 1, run.alignment
    assert abs(dy) < 1, run.alignment
    assert p90 < 3, run.alignment
