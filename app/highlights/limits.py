"""A batch's limits, all read from ``Settings`` here."""

from __future__ import annotations

from dataclasses import dataclass, fields

from app.core.config import Settings


@dataclass(frozen=True)
class Limits:
    """A batch's limits, all from ``Settings`` (``from_settings``; no defaults restated here, so
    a limit added to the settings and forgotten here fails to type-check instead of running on
    a default)."""

    max_citations: int
    max_query_chars: int
    max_answer_chars: int
    max_sentences_per_chunk: int
    max_highlights_per_chunk: int
    batch_deadline_s: float
    result_cache_ttl_s: float
    # LLM calls in flight at once from this process, and how long a batch waits for a slot.
    llm_max_in_flight: int
    llm_queue_timeout_s: float
    # How long a PDF whose index is being built may hold a batch (indexing.IndexWait).
    index_wait_s: float
    index_wait_page_s: float
    index_wait_max_s: float

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(**{f.name: getattr(settings, f.name) for f in fields(cls)})
