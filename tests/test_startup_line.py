"""The one line `serve` logs once it is up: what a person starting it needs (tests/test_readme.py
checks the demo's whole start-up as a user sees it)."""

from __future__ import annotations

import pytest

from app.core.config import Settings
from app.db.session import describe_database
from app.main import describe_service
from app.server_workers import workers_line


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("sqlite+aiosqlite:///./var/highlight.db", "SQLite highlight.db"),
        # What the engine is really built with: a URI of the absolute path, URL-encoded.
        (
            "sqlite+aiosqlite:///file%3A/srv/app/var/highlight.db?mode=rw&uri=true",
            "SQLite highlight.db",
        ),
        (
            "sqlite+aiosqlite:///file:/srv/app/var/highlight.db?mode=rw&uri=true",
            "SQLite highlight.db",
        ),
        ("sqlite+aiosqlite://", "SQLite in memory"),
        ("postgresql+asyncpg://user:TOPSECRET@db.internal:5432/highlight", "PostgreSQL highlight"),
    ],
)
def test_the_database_is_named_by_kind_and_name_only(url: str, said: str) -> None:
    assert describe_database(url) == said


def test_the_summary_names_the_llm_and_whether_auth_is_on() -> None:
    # Every setting the line reads is given: the environment may set any of them.
    plain = Settings(
        _env_file=None,
        database_url="sqlite+aiosqlite:///./var/highlight.db",
        llm_provider="none",
        auth_read_tokens=[],
        auth_write_tokens=[],
    )
    assert describe_service(plain) == (
        "database SQLite highlight.db, LLM none (sentences chosen by word overlap), auth off"
    )
    wired = Settings(
        _env_file=None,
        database_url="postgresql+asyncpg://u:TOPSECRET@db/highlight",
        llm_provider="vllm",
        llm_base_url="http://vllm:8000/v1",
        llm_model="Qwen/Qwen3-8B",
        auth_read_tokens=["read-TOPSECRET"],
        auth_write_tokens=[],
    )
    said = describe_service(wired)
    assert said == "database PostgreSQL highlight, LLM vllm (Qwen/Qwen3-8B), auth on"
    assert "TOPSECRET" not in said


def test_the_workers_line_names_the_workers_and_their_health_check_timeout() -> None:
    # The parent of `serve --workers N` says how long a worker may take to answer before it is
    # killed: a host that needs longer shows it here, beside the workers replaced in the log.
    settings = Settings(_env_file=None, worker_healthcheck_timeout_s=90)
    line = workers_line(
        "http://127.0.0.1:8000", 2, settings.worker_healthcheck_timeout_s, "auth off"
    )
    assert line == (
        "highlight-service listening on http://127.0.0.1:8000 with 2 worker processes, each "
        "replaced if it does not answer a health check within 90 s (auth off)"
    )
    # uvicorn's own 5 s killed every worker of a busy host before it had imported the app.
    assert Settings.model_fields["worker_healthcheck_timeout_s"].default == 60
