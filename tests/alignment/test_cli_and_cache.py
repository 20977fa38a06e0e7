"""The JSON-lines command and the index cache."""

from __future__ import annotations

import io
import json
import pickle
from pathlib import Path

from app.alignment.index import DocumentIndex, IndexCache, build_index
from app.alignment.locate import locate
from app.alignment.locate_cli import run
from app.documents.storage import sha256_of_file

from .conftest import REPEATED


def test_cli_answers_every_line(sample_pdf: Path) -> None:
    lines = [
        json.dumps({"id": 1, "quote": REPEATED, "pages": [3, 4]}),
        "not json",
        json.dumps({"id": "x", "quote": 5}),
        json.dumps({"id": 3, "quote": "a", "pages": [1]}),
        "",
        json.dumps({"id": 4, "quote": "Nothing like this appears anywhere in the sample file."}),
    ]
    stdout = io.StringIO()
    assert run(sample_pdf, io.StringIO("\n".join(lines) + "\n"), stdout) == 0
    out = [json.loads(line) for line in stdout.getvalue().splitlines()]
    assert [o["status"] for o in out] == ["found", "error", "error", "error", "no_match"]
    assert [o["id"] for o in out] == [1, None, "x", 3, 4]
    assert out[0]["score"] == 100.0
    assert out[0]["matched_text"].startswith("Meeting adjourned")
    assert {r["page"] for r in out[0]["rects"]} == {4}
    assert set(out[0]["rects"][0]) == {"page", "x0", "y0", "x1", "y1"}
    assert out[4]["rects"] == []
    assert all("message" in o for o in out[1:4])


def test_cli_missing_pdf(tmp_path: Path) -> None:
    assert run(tmp_path / "missing.pdf", io.StringIO(""), io.StringIO()) == 1


def test_index_pickles(sample_index: DocumentIndex) -> None:
    clone = pickle.loads(pickle.dumps(sample_index))
    assert locate(clone, REPEATED) == locate(sample_index, REPEATED)


def test_cache_memory_and_disk(sample_pdf: Path, tmp_path: Path) -> None:
    builds: list[int] = []

    def build() -> DocumentIndex:
        builds.append(1)
        return build_index(sample_pdf.read_bytes())

    sha = sha256_of_file(sample_pdf)
    cache = IndexCache(cache_dir=tmp_path, max_entries=2)
    first = cache.get(sha, build)
    assert cache.get(sha, build) is first
    assert len(builds) == 1
    assert len(list(tmp_path.glob("*.pickle"))) == 1
    from_disk = IndexCache(cache_dir=tmp_path).get(sha, build)
    assert len(builds) == 1
    assert from_disk is not first
    assert from_disk.chars == first.chars
    assert IndexCache().get(sha, build).page_count == 4
    assert len(builds) == 2
