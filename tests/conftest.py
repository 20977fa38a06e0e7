"""Shared fixtures: the real-PDF corpus (optional), the generated sample PDF, real SQLite and
PostgreSQL databases migrated by Alembic, and the scripted OpenAI-compatible LLM server."""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app.core import tracing
from app.db.migrate import upgrade
from app.pdfs.sample import write_sample_pdf
from tests.fixtures.llm_server import ScriptedLLM

# The S3-compatible test server (moto) and a bucket per test: s3_server, s3_bucket.
pytest_plugins = ["tests.fixtures.s3"]
PROJECT_ROOT = Path(__file__).resolve().parents[1]
# The team's real-PDF corpus sits beside the checkout; a user's clone will not have it.
SHARED_PDFS = PROJECT_ROOT.parent / "shared" / "pdfs"
PG_DSN = os.environ.get("HIGHLIGHT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")


@pytest.fixture(scope="session")
def shared_pdfs() -> Path:
    if not (SHARED_PDFS / "MANIFEST.tsv").is_file():
        pytest.skip(
            f"real-PDF corpus not found at {SHARED_PDFS} (only the team's machines have it)"
        )
    return SHARED_PDFS


@pytest.fixture(scope="session")
def sample_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_sample_pdf(tmp_path_factory.mktemp("sample") / "sample-assembly.pdf")


@pytest.fixture
def pdf_root(tmp_path: Path, sample_pdf: Path) -> Path:
    root = tmp_path / "pdfs"
    (root / "sample").mkdir(parents=True)
    shutil.copyfile(sample_pdf, root / "sample" / "sample-assembly.pdf")
    return root


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("db") / "template.db"
    upgrade(f"sqlite+aiosqlite:///{path}")
    return path


def _run_sync(coro: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine to completion from sync code that may itself sit inside an event loop."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, coro).result()


async def _pg_execute(dsn: str, sql: str) -> None:
    conn = await asyncpg.connect(dsn, timeout=3)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A fresh database on the local PostgreSQL server, migrated once for the session."""
    name = f"highlight_test_{uuid.uuid4().hex[:10]}"
    try:
        _run_sync(_pg_execute(PG_DSN, f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        pytest.skip(f"no PostgreSQL server reachable at {PG_DSN}: {exc}")
    base = PG_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    url = f"{base}/{name}"
    upgrade(url)
    yield url
    _run_sync(_pg_execute(PG_DSN, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """Every test that takes this runs twice: on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        path = tmp_path / "highlight.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite+aiosqlite:///{path}"
        return
    url = request.getfixturevalue("postgres_url")
    await _pg_execute(
        url.replace("+asyncpg", ""), "TRUNCATE chunk, document, highlight, result_cache"
    )
    yield url


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    server = ScriptedLLM().start()
    yield server
    server.stop()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Tracing on for one test, its spans kept in memory (the SDK's own in-memory exporter)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_provider(provider)
    yield exporter
    tracing.disable()
