"""The FinanceBench filings of ``../shared/pdfs/qa``, ingested once for every bench that reads them.

``selection_eval.py``, ``claims_eval.py`` and ``support_eval.py`` all cite chunks of the same 22
filings. Each ingest of them (index build, chunking, in the bounded PDF workers) takes minutes,
so ``scripts/bench.sh`` gives the three benches one work folder (``--work DIR``): the first
ingests into ``DIR/s.db`` with the text indexes cached in ``DIR/index``, and the others find the
stamp (``DIR/ingested.json``: each PDF's size and modification time, and a hash of the code that
cuts chunks) and read the chunks back without ingesting again. A changed PDF or chunker makes the
stamp stale, and the next bench ingests again.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from selection_metrics import ChunkText  # noqa: E402

from app.core.config import Settings  # noqa: E402
from app.db.migrate import upgrade  # noqa: E402
from app.services import ingest_file  # noqa: E402
from tests.fixtures.app import app_client, make_settings  # noqa: E402

SHARED = ROOT.parent / "shared" / "pdfs"
QA_FILES = ("financebench_dev.jsonl", "financebench_more.jsonl")
# What decides the chunks: when any of these changes, the stamp is stale.
_CHUNKING_CODE = (
    "app/documents",
    "app/alignment",
    "app/selection/sentences.py",
    "app/selection/rows.py",
)


def qa_rows(paths: list[Path] | None = None) -> list[dict[str, Any]]:
    """The QA rows of ``paths`` (default: both shared QA files that exist), in file order."""
    files = paths if paths is not None else [SHARED / "qa" / n for n in QA_FILES]
    return [
        json.loads(line)
        for path in files
        if path.is_file()
        for line in path.read_text().splitlines()
        if line.strip()
    ]


def work_settings(work: Path, **overrides: Any) -> Settings:
    """The benches' settings on ``work``: SQLite, stored copies, a shared index cache, and no
    result cache (a re-run on the same folder measures the code, not answers cached by an
    earlier version of it)."""
    values: dict[str, Any] = {"index_cache_dir": work / "index", "result_cache_ttl_s": 0}
    return make_settings(
        f"sqlite+aiosqlite:///{work / 's.db'}", work / "pdfs", **{**values, **overrides}
    )


def work_dir(given: Path | None, prefix: str) -> Path:
    if given is None:
        return Path(tempfile.mkdtemp(prefix=prefix))
    given.mkdir(parents=True, exist_ok=True)
    return given


def document_id(pdf_file: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", pdf_file.removesuffix(".pdf")).strip("-").lower()


def _code_hash() -> str:
    digest = hashlib.sha256()
    for part in _CHUNKING_CODE:
        path = ROOT / part
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            if file.is_file():
                digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def _stamp(pdfs: dict[str, Path]) -> dict[str, Any]:
    files = {name: [path.stat().st_size, int(path.stat().st_mtime)] for name, path in pdfs.items()}
    return {"code": _code_hash(), "files": files}


async def ingested(
    settings: Settings, work: Path, rows: list[dict[str, Any]]
) -> dict[str, list[ChunkText]]:
    """Each row's ``pdf_file`` -> its chunks, ingesting (with the CLI's code path) only what the
    work folder's stamp does not already hold."""
    pdfs = {
        r["pdf_file"]: SHARED / r["pdf_file"] for r in sorted(rows, key=lambda r: r["pdf_file"])
    }
    stamp_file = work / "ingested.json"
    stamp = _stamp(pdfs)
    known = json.loads(stamp_file.read_text()) if stamp_file.is_file() else {}
    upgrade(settings.database_url)
    fresh = known.get("code") == stamp["code"]
    for name, pdf in pdfs.items():
        if not fresh or known.get("files", {}).get(name) != stamp["files"][name]:
            await ingest_file(settings, pdf, document_id(name))
    merged = {
        "code": stamp["code"],
        "files": {**(known.get("files", {}) if fresh else {}), **stamp["files"]},
    }
    stamp_file.write_text(json.dumps(merged, indent=1))
    chunks: dict[str, list[ChunkText]] = {}
    async with app_client(settings) as client:
        for name in pdfs:
            response = await client.get(
                f"/v2/documents/{document_id(name)}", params={"include_text": True}
            )
            response.raise_for_status()
            chunks[name] = [
                ChunkText(c["id"], c["text"], c["page_start"], c["page_end"])
                for c in response.json()["chunks"]
            ]
    return chunks
