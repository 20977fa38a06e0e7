"""Shared fixtures: the real-PDF corpus (optional), the generated sample PDF, real SQLite and
PostgreSQL databases migrated by Alembic, and the scripted OpenAI-compatible LLM server."""

from __future__ import annotations

import asyncio
import fcntl
import multiprocessing.process
import os
import platform
import shutil
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Coroutine, Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
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

# The S3-compatible test server (moto) and a bucket per test: s3_server, s3_bucket; legacy
# Office files made by LibreOffice once per session: legacy_files, protected_legacy_files.
pytest_plugins = ["tests.fixtures.s3", "tests.fixtures.legacy_office"]
# Fixtures that start other programs: a test taking one is slow (make test-fast leaves it out).
OTHER_PROGRAMS = {"browser", "s3_server", "s3_bucket", "legacy_files", "protected_legacy_files"}
PROJECT_ROOT = Path(__file__).resolve().parents[1]
# The team's real-PDF corpus sits beside the checkout; a user's clone will not have it.
SHARED_PDFS = PROJECT_ROOT.parent / "shared" / "pdfs"
PG_DSN = os.environ.get("HIGHLIGHT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")
API_TESTS = PROJECT_ROOT / "tests" / "api"


# The README's test command runs the tests in parallel (pytest-xdist, addopts in pyproject.toml).
# What keeps them apart: every test's files under its own tmp_path, every server on a free port,
# every session (each xdist worker is one) its own PostgreSQL database (postgres_url), every S3
# test its own bucket. What they still share is the machine's PostgreSQL server: a test marked
# pg_restart restarts it, so it holds this machine-wide lock exclusively while every other
# PostgreSQL test (marked postgres) holds it shared. A PostgreSQL test never waits for anything
# else while it holds the lock, so no two tests can wait for each other.
PG_LOCK = Path(tempfile.gettempdir()) / (
    "highlight-tests-postgres-" + "".join(c if c.isalnum() else "_" for c in PG_DSN) + ".lock"
)


_pg_lock_held = False


@contextmanager
def postgres_lock(exclusive: bool = False) -> Iterator[None]:
    """Hold PG_LOCK (shared, or ``exclusive``); within a hold already taken, nothing more."""
    global _pg_lock_held
    if _pg_lock_held:
        yield
        return
    with PG_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        _pg_lock_held = True
        try:
            yield
        finally:
            _pg_lock_held = False
            fcntl.flock(lock, fcntl.LOCK_UN)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """-n auto (addopts): the vLLM suite runs in this process, against its one server."""
    if "vllm" in (config.option.markexpr or "").replace("not vllm", ""):
        return 0
    return None  # xdist's own count: one worker per core


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        # Whatever takes the session's database needs the server: run and lock it as such.
        if "postgres_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)
        # A browser, moto's S3 server, LibreOffice: other programs, so slow (make test-fast).
        if OTHER_PROGRAMS & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
        # The API's tests run the app with its PDF worker processes (make test-fast leaves the
        # folder out as a whole).
        if item.path.is_relative_to(API_TESTS):
            item.add_marker(pytest.mark.slow)
        # Tests sharing a module's fixture (a browser, Tesseract's reading of a scan) run on one
        # xdist worker (--dist loadgroup), which builds it once.
        fixtures = getattr(item, "_fixtureinfo", None)
        if fixtures is not None and any(
            defs[-1].scope in ("module", "class") for defs in fixtures.name2fixturedefs.values()
        ):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[Any]:
    if item.get_closest_marker("pg_restart"):
        with postgres_lock(exclusive=True):
            return (yield)
    if item.get_closest_marker("postgres"):
        with postgres_lock():
            return (yield)
    return (yield)


# A test that starts another program (a subprocess, Tesseract, a process pool's workers, a
# server, a browser) must be marked slow: `make test-fast` leaves those out and stays fast. This
# watches (audit events) what each unmarked test starts and fails it, naming the program. The
# app's start-up asks Tesseract for its languages (`tesseract --list-langs`, milliseconds): that
# one is allowed.
_PROCESS_EVENTS = {"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.system"}
_started: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _started is None or event not in _PROCESS_EVENTS:
        return
    if event == "subprocess.Popen":
        argv = [args[1]] if isinstance(args[1], str | bytes) else list(args[1] or [])
        words = [os.fsdecode(a) for a in argv]
        if len(words) == 2 and words[1] == "--list-langs" and "tesseract" in words[0]:
            return
        _started.append(" ".join(words)[:120])
    elif event == "os.posix_spawn":
        _started.append(" ".join(os.fsdecode(a) for a in args[1])[:120])
    else:
        _started.append(event)


sys.addaudithook(_audit)
_start_process = multiprocessing.process.BaseProcess.start


def _start_watched(process: multiprocessing.process.BaseProcess) -> None:
    # multiprocessing's spawn and forkserver start their processes without an audit event.
    if _started is not None:
        _started.append(f"a multiprocessing process ({process.name})")
    _start_process(process)


multiprocessing.process.BaseProcess.start = _start_watched  # type: ignore[method-assign,assignment]
# The OpenAI client's headers ask for the processor, which the standard library reads once from
# `uname -p`: read it now, not in whichever test makes the first client.
platform.processor()


def _watch(item: pytest.Item) -> bool:
    return not (item.get_closest_marker("slow") or item.get_closest_marker("vllm"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None]:
    global _started
    _started = [] if _watch(item) else None
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    global _started
    try:
        result = yield
    finally:
        started, _started = _started, None
    if started:
        shown = "; ".join(dict.fromkeys(started))
        pytest.fail(
            f"{item.nodeid} started another program ({shown}) but is not marked slow: "
            "mark it @pytest.mark.slow (make test-fast leaves such tests out)",
            pytrace=False,
        )
    return result


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
    base = PG_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    url = f"{base}/{name}"
    # Its own lock too: the last test that uses it may be done when it is dropped.
    with postgres_lock():
        try:
            _run_sync(_pg_execute(PG_DSN, f'CREATE DATABASE "{name}"'))
        except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
            pytest.skip(f"no PostgreSQL server reachable at {PG_DSN}: {exc}")
        upgrade(url)
    yield url
    with postgres_lock():
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
