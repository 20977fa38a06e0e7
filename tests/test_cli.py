"""The console script as a user runs it (a real subprocess), and the acceptance path on a real
PDF: `highlight-service ingest`, then a batch call answered over HTTP by an OpenAI-compatible
server that honours json_schema."""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.api.helpers import similarity, text_under
from tests.fixtures.app import app_client, make_settings
from tests.fixtures.llm_server import ScriptedLLM
from tests.fixtures.pdfs import write_image_only_copy, write_text_pdf

# Starts server processes, a browser or other programs: `make test-fast` leaves it out.
pytestmark = pytest.mark.slow

HANSARD = "kenya_na_hansard_20251120_P.pdf"


def run_cli(*args: str, env: dict[str, str], stdin: str | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        env={**os.environ, **env},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def cli_env(tmp_path: Path) -> dict[str, str]:
    return {
        "HIGHLIGHT_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}",
        "HIGHLIGHT_PDF_ROOT": str(tmp_path / "pdfs"),
        "HIGHLIGHT_INDEX_CACHE_DIR": str(tmp_path / "cache"),
        "HIGHLIGHT_LLM_PROVIDER": "none",
    }


def test_ingest_twice_changes_nothing_the_second_time(tmp_path: Path, sample_pdf: Path) -> None:
    env = cli_env(tmp_path)
    first = run_cli("ingest", str(sample_pdf), "--document-id", "s1", env=env)
    assert first.returncode == 0, first.stderr
    second = run_cli("ingest", str(sample_pdf), "--document-id", "s1", env=env)
    assert json.loads(first.stdout)["changed"] is True
    assert json.loads(second.stdout)["changed"] is False
    assert json.loads(second.stdout)["chunks"] == json.loads(first.stdout)["chunks"]
    # The text index was built at ingest time, into the cache the server reads.
    assert len(list((tmp_path / "cache").glob("*.idx"))) == 1


def test_ingest_takes_a_title_and_stores_its_copy_readable_like_any_other_file(
    tmp_path: Path, sample_pdf: Path
) -> None:
    env = cli_env(tmp_path)
    titled = run_cli(
        "ingest", str(sample_pdf), "--document-id", "s1", "--title", " Budget  Statement ", env=env
    )
    assert titled.returncode == 0, titled.stderr
    stored = json.loads(titled.stdout)
    assert stored["title"] == "Budget Statement"
    # Without --title, the PDF's own title.
    plain = json.loads(run_cli("ingest", str(sample_pdf), "--document-id", "s2", env=env).stdout)
    assert plain["title"] == "Sample Assembly - Official Report, Thursday 20 November 2025"
    blank = run_cli("ingest", str(sample_pdf), "--title", "  ", env=env)
    assert blank.returncode == 2
    assert "--title: a title is 1 to 500 characters of text" in blank.stderr

    # The copy under the PDF root (the file was outside it) and the index blob get the mode
    # every other file gets from the umask, as the database does, not mkstemp's 0600.
    mask = os.umask(0o022)
    os.umask(mask)
    copy = tmp_path / "pdfs" / stored["source_path"]
    (index_blob,) = (tmp_path / "cache").glob("*.idx")
    modes = {
        path.name: stat.S_IMODE(path.stat().st_mode)
        for path in (copy, index_blob, tmp_path / "cli.db")
    }
    assert set(modes.values()) == {0o666 & ~mask}, {k: oct(v) for k, v in modes.items()}


def test_ingest_of_a_missing_file_says_so(tmp_path: Path) -> None:
    result = run_cli("ingest", str(tmp_path / "nope.pdf"), env=cli_env(tmp_path))
    assert result.returncode == 1
    assert "no such file" in result.stderr


def test_bad_document_id_says_what_is_allowed(tmp_path: Path, sample_pdf: Path) -> None:
    result = run_cli("ingest", str(sample_pdf), "--document-id", "two words", env=cli_env(tmp_path))
    assert result.returncode == 1
    assert "document id 'two words' must be" in result.stderr


def test_bad_configuration_fails_fast_with_the_variable_name(tmp_path: Path) -> None:
    env = cli_env(tmp_path) | {"HIGHLIGHT_LLM_PROVIDER": "vllm", "HIGHLIGHT_LLM_BASE_URL": ""}
    result = run_cli("serve", env=env)
    assert result.returncode == 2
    assert "HIGHLIGHT_LLM_BASE_URL" in result.stderr
    # Refused before the database is touched.
    assert not (tmp_path / "cli.db").exists()


def test_a_half_set_llm_blocks_only_the_commands_that_use_it(
    tmp_path: Path, sample_pdf: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Provider and URL set, no key: ingest, locate and migrate never call the LLM and work;
    serve and demo refuse to start, naming the missing variable."""
    from tests.test_cli_help import ingest_example_fields

    env = cli_env(tmp_path) | {
        "HIGHLIGHT_LLM_PROVIDER": "openrouter",
        "HIGHLIGHT_LLM_BASE_URL": "https://openrouter.ai/api/v1",
        "HIGHLIGHT_LLM_MODEL": "openai/gpt-4o-mini",
    }
    assert run_cli("migrate", env=env).returncode == 0
    ingested = run_cli("ingest", str(sample_pdf), "--document-id", "s1", env=env)
    assert ingested.returncode == 0, ingested.stderr
    # The help's example shows every field ingest prints.
    assert set(json.loads(ingested.stdout)) == ingest_example_fields(capsys)
    located = run_cli(
        "locate",
        str(sample_pdf),
        env=env,
        stdin='{"id": 1, "quote": "Eleven bids were received"}\n',
    )
    assert located.returncode == 0, located.stderr
    assert json.loads(located.stdout)["status"] == "found"
    for command in ("serve", "demo"):
        refused = run_cli(command, "--port", "1", env=env)
        assert refused.returncode == 2, refused.stderr
        (line,) = refused.stderr.splitlines()
        assert line == (
            "configuration error: HIGHLIGHT_LLM_PROVIDER=openrouter needs HIGHLIGHT_LLM_API_KEY "
            "(or HIGHLIGHT_LLM_PROVIDER=none for the lexical selector)"
        )


def test_configuration_errors_never_print_any_part_of_a_secret(tmp_path: Path) -> None:
    key = "sk-or-v1-0123456789abcdefSECRETTAIL"
    env = cli_env(tmp_path) | {
        "HIGHLIGHT_LLM_PROVIDER": "openrouter",
        "HIGHLIGHT_LLM_API_KEY": key,
        "HIGHLIGHT_LLM_MODEL": "openai/gpt-4o-mini",
        "HIGHLIGHT_LLM_BASE_URL": "",
        "HIGHLIGHT_AUTH_WRITE_TOKENS": '["write-token-TOPSECRET"]',
    }
    result = run_cli("serve", env=env)
    assert result.returncode == 2
    assert "HIGHLIGHT_LLM_BASE_URL" in result.stderr
    output = result.stdout + result.stderr
    for secret in (key, "write-token-TOPSECRET"):
        pieces = {secret[i : i + 6] for i in range(len(secret) - 5)}
        assert not [p for p in pieces if p in output], output


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        (
            "HIGHLIGHT_AUTH_READ_TOKENS",
            '["read-token-TOPSECRET", oops',
            "HIGHLIGHT_AUTH_READ_TOKENS is not valid JSON (Expecting value at column 26); it "
            "must be a JSON list",
        ),
        (
            "HIGHLIGHT_DATABASE_URL",
            "postgres-ish://user:TOPSECRET@host/db",
            "HIGHLIGHT_DATABASE_URL: not a database URL this service can use",
        ),
    ],
    ids=["token list not JSON", "not a database URL"],
)
def test_an_unparsable_setting_is_a_one_line_configuration_error(
    tmp_path: Path, variable: str, value: str, said: str
) -> None:
    result = run_cli("serve", env=cli_env(tmp_path) | {variable: value})
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"configuration error: {said}"), line
    assert "TOPSECRET" not in result.stdout + result.stderr


def test_serve_with_an_unreachable_database_fails_in_one_line(tmp_path: Path) -> None:
    from tests.fixtures.live import free_port

    url = f"postgresql+asyncpg://highlight:pw-TOPSECRET@127.0.0.1:{free_port()}/highlight"
    env = cli_env(tmp_path) | {"HIGHLIGHT_DATABASE_URL": url}
    result = run_cli("serve", "--port", str(free_port()), env=env)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: cannot use the database at postgresql+asyncpg://highlight:***@")
    assert "check HIGHLIGHT_DATABASE_URL" in line
    assert "TOPSECRET" not in result.stdout + result.stderr


def test_a_start_up_that_fails_raises_its_error_without_logging_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """What `serve` reports in one line (main() prints it): the lifespan's own exception, not
    uvicorn's exit and the traceback it logs."""
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from app.server import serve
    from tests.fixtures.live import free_port

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> Any:
        raise ConnectionRefusedError(111, "Connect call failed")
        yield

    settings = make_settings("sqlite+aiosqlite:///unused.db", Path("unused"))
    with caplog.at_level(logging.INFO), pytest.raises(ConnectionRefusedError):
        serve(FastAPI(lifespan=lifespan), settings, "127.0.0.1", free_port())
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in logged] == ["Application startup failed. Exiting."]
    assert not any(r.exc_info for r in logged)


def test_locate_command_reads_and_writes_json_lines(tmp_path: Path, sample_pdf: Path) -> None:
    lines = [
        {"id": 1, "quote": "Eleven bids were received", "pages": [1, 2]},
        {"id": 2, "quote": "Nothing of the sort was ever said in this House today"},
    ]
    stdin = "\n".join(json.dumps(line) for line in lines) + "\n"
    result = run_cli("locate", str(sample_pdf), env=cli_env(tmp_path), stdin=stdin)
    assert result.returncode == 0, result.stderr
    found, missing = (json.loads(line) for line in result.stdout.splitlines())
    assert found["id"] == 1
    assert found["status"] == "found"
    assert found["rects"][0]["page"] == 1
    assert missing["status"] == "no_match"
    assert missing["rects"] == []


async def test_real_pdf_ingest_then_llm_batch_is_complete(
    tmp_path: Path, shared_pdfs: Path, scripted_llm: ScriptedLLM
) -> None:
    env = cli_env(tmp_path)
    ingested = run_cli("ingest", str(shared_pdfs / HANSARD), env=env)
    assert ingested.returncode == 0, ingested.stderr
    stored = json.loads(ingested.stdout)
    chunk_ids = stored["chunks"][3:6]
    # The "model" picks the first two sentences of every chunk.
    scripted_llm.chooser = lambda chunk_id, allowed, body: allowed[:2]
    settings = make_settings(
        env["HIGHLIGHT_DATABASE_URL"],
        Path(env["HIGHLIGHT_PDF_ROOT"]),
        llm_provider="openai",
        llm_base_url=scripted_llm.base_url,
        llm_model="gpt-test",
        llm_api_key="sk-test",
    )
    request = {
        "query": "What happened in the sitting?",
        "answer": "The House met and members spoke.",
        "citations": [{"chunk_id": c} for c in chunk_ids],
    }
    async with app_client(settings) as client:
        response = await client.post("/v2/highlights/batch", json=request)
    data = response.json()
    assert data["status"] == "complete", data
    assert data["method"] == "llm"
    pdf = Path(env["HIGHLIGHT_PDF_ROOT"]) / stored["source_path"]
    for result in data["results"]:
        assert [h["sentence_id"] for h in result["highlights"]] == [1, 2]
        for h in result["highlights"]:
            assert {r["page"] for r in h["rects"]} <= set(
                range(result["page_start"], result["page_end"] + 1)
            )
            assert similarity(text_under(pdf, h["rects"]), h["text"]) >= 85, h
    (sent,) = scripted_llm.requests
    assert "$defs" in sent["response_format"]["json_schema"]["schema"]
    assert "guided_json" not in sent


@pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="Tesseract is not installed (apt-get install tesseract-ocr tesseract-ocr-osd)",
)
def test_locate_reads_a_scanned_pdf_by_ocr_as_the_service_does(tmp_path: Path) -> None:
    """`locate` builds its index as ingest and batches do: a page without a text layer is read
    by Tesseract in the PDF workers, so a quote on it is found, not no_text_layer; a page range
    past the end is an error naming the page count."""
    text = write_text_pdf(
        tmp_path / "text.pdf",
        [
            "The committee received eleven bids for the new bridge over the river.",
            "Work on the northern approach will begin in the spring of next year.",
        ],
    )
    scan = write_image_only_copy(text, tmp_path / "scan.pdf", dpi=200)
    lines = [
        {"id": 1, "quote": "received eleven bids for the new bridge", "pages": [1, 1]},
        {"id": 2, "quote": "received eleven bids", "pages": [5, 6]},
    ]
    stdin = "\n".join(json.dumps(line) for line in lines) + "\n"
    result = run_cli("locate", str(scan), env=cli_env(tmp_path), stdin=stdin)
    assert result.returncode == 0, result.stderr
    found, past = (json.loads(line) for line in result.stdout.splitlines())
    assert found["status"] == "found", found
    assert found["rects"]
    assert all(rect["page"] == 1 for rect in found["rects"])
    assert past == {
        "id": 2,
        "status": "error",
        "message": "pages [5, 6] is past the end: the PDF has 1 page",
    }
