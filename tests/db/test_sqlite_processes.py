"""The default SQLite database shared by real processes, as the README uses it: a running `serve`
(or two) while `ingest` and `migrate` run from other processes, then SIGTERM.

What must hold: a document ingested beside the server is seen by it at once, every write the
server acknowledged (2xx) is in the file afterwards, every highlight id it answered can be
fetched, and `PRAGMA integrity_check` says ok. (On a44369f the server's file-identity
check opened and closed the database file at every pool checkout, which on POSIX drops all of the
process's fcntl locks on it; the CLI then believed it was alone, checkpointed and deleted the WAL
the server still used: "database disk image is malformed", acknowledged writes lost.)
"""

from __future__ import annotations

import signal
import sqlite3
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from tests.fixtures.live import LiveService, ingest_with_cli, live_service, run_cli
from tests.fixtures.load import SAMPLE_PDF, Load, wait_until
from tests.fixtures.pdfs import write_text_pdf

# Starts server processes, a browser or other programs: `make test-fast` leaves it out.
pytestmark = pytest.mark.slow


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "HIGHLIGHT_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'var' / 'highlight.db'}",
        "HIGHLIGHT_PDF_ROOT": str(tmp_path / "var" / "pdfs"),
        "HIGHLIGHT_INDEX_CACHE_DIR": str(tmp_path / "var" / "index-cache"),
    }


def _new_pdf(tmp_path: Path, n: int) -> Path:
    return write_text_pdf(
        tmp_path / f"report-{n}.pdf",
        [
            f"Report number {n} on the county ferry service.",
            f"The ferry carried {1000 + n} passengers in the year, the council said in its "
            f"annual report number {n}. Fares stayed the same.",
        ],
    )


def _stop(service: LiveService) -> None:
    service.process.send_signal(signal.SIGTERM)
    # uvicorn re-raises the signal it caught once it has shut down cleanly.
    assert service.process.wait(timeout=60) in (0, -signal.SIGTERM), service.output()


def _assert_all_kept(database: Path, loads: list[Load], ingested: list[str]) -> None:
    with sqlite3.connect(database) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        documents = {row[0] for row in db.execute("SELECT id FROM document")}
        highlights = {row[0] for row in db.execute("SELECT id FROM highlight")}
    for load in loads:
        lost = [d for d in load.acknowledged if d not in documents]
        assert not lost, f"{len(lost)} of {len(load.acknowledged)} acknowledged PUTs lost"
        dead = load.highlight_ids - highlights
        assert not dead, f"{len(dead)} answered highlight ids are not stored"
    assert set(ingested) <= documents


def _seen_at_once(url: str, document_id: str) -> None:
    document = httpx.get(f"{url}/v2/documents/{document_id}", timeout=30)
    assert document.status_code == 200, document.text
    chunk = document.json()["chunks"][0]["id"]
    body = {
        "query": "How many passengers did the ferry carry?",
        "answer": "The ferry carried many passengers [1].",
        "citations": [{"chunk_id": chunk, "citation_id": "1"}],
    }
    batch = httpx.post(f"{url}/v2/highlights/batch", json=body, timeout=30)
    assert batch.status_code == 200, batch.text
    assert batch.json()["results"][0]["status"] == "highlighted", batch.text


def test_ingest_and_migrate_beside_a_running_server_lose_nothing(tmp_path: Path) -> None:
    env = _env(tmp_path)
    ingested = []
    with live_service(tmp_path, env, "demo") as service:
        load = Load([service.url], "one")
        with load.running():
            for n in range(1, 4):
                ingest_with_cli(env, _new_pdf(tmp_path, n), f"report-{n}")
                ingested.append(f"report-{n}")
                _seen_at_once(service.url, f"report-{n}")
                run_cli(env, "migrate")
        assert load.requests > 20, "the load barely ran"
        assert not load.failures, load.failures[:5]
        _stop(service)
    _assert_all_kept(tmp_path / "var" / "highlight.db", [load], ingested)
    # The README's path goes on working: the sample ingests again (unchanged) without complaint.
    run_cli(env, "ingest", str(tmp_path / "var" / "pdfs" / SAMPLE_PDF), "--document-id",
            "sample-assembly-2025-11-20")  # fmt: skip


def test_one_of_two_servers_stopped_mid_load_loses_nothing(tmp_path: Path) -> None:
    env = _env(tmp_path)
    with ExitStack() as stack:
        first = stack.enter_context(live_service(tmp_path, env, "demo"))
        second = stack.enter_context(live_service(tmp_path, env, "serve"))
        both = Load([first.url, second.url], "both")
        with both.running(workers=4):
            wait_until(lambda: both.requests >= 20, "20 requests to the two servers")
            _stop(first)
            after = Load([second.url], "after")
            with after.running():
                ingest_with_cli(env, _new_pdf(tmp_path, 9), "report-9")
                _seen_at_once(second.url, "report-9")
                wait_until(lambda: after.requests >= 20, "20 requests to the survivor")
        # Requests to the stopped server fail (refused, or cut by its shutdown); none to the one
        # still running may.
        survivor = [f for f in both.failures + after.failures if f.startswith(f"{second.url}/")]
        assert not survivor, survivor[:5]
        _stop(second)
    _assert_all_kept(tmp_path / "var" / "highlight.db", [both, after], ["report-9"])
