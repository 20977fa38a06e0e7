"""A batch's limits come from Settings in one place (``Limits.from_settings``), with no defaults
restated beside them: every limit is the configured value."""

from __future__ import annotations

from dataclasses import MISSING, fields

from app.core.config import Settings
from app.highlights.limits import Limits


def test_every_limit_is_the_configured_value() -> None:
    overrides = {
        "max_citations": 7,
        "max_query_chars": 501,
        "max_answer_chars": 9001,
        "max_sentences_per_chunk": 33,
        "max_highlights_per_chunk": 2,
        "batch_deadline_s": 12.5,
        "result_cache_ttl_s": 60.0,
        "llm_max_in_flight": 3,
        "llm_queue_timeout_s": 0.5,
        "index_wait_s": 4.0,
        "index_wait_page_s": 0.02,
        "index_wait_max_s": 40.0,
    }
    # Every field of Limits is named here, so a new limit needs a line (and a Settings field).
    assert {f.name for f in fields(Limits)} == set(overrides)
    limits = Limits.from_settings(Settings(**overrides))  # type: ignore[arg-type]
    assert {f.name: getattr(limits, f.name) for f in fields(Limits)} == overrides


def test_limits_have_no_defaults_of_their_own() -> None:
    assert all(f.default is MISSING and f.default_factory is MISSING for f in fields(Limits))
