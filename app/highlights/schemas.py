"""API models of POST /v2/highlights/batch."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# Hard ceilings in the schema; Settings may set lower limits, enforced by the service.
MAX_QUERY_CHARS = 4_000
MAX_ANSWER_CHARS = 20_000
MAX_CITATIONS = 50


class CitationIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    chunk_id: str = Field(min_length=1, max_length=256)
    citation_id: str | None = Field(
        default=None, max_length=128, description="The frontend's own id, echoed back."
    )


class HighlightBatchRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "query": "What did the minister say about the budget?",
                    "answer": "She said the budget deficit fell to 2.1 per cent.",
                    "citations": [{"chunk_id": "hansard-2025-11-20-c0003", "citation_id": "1"}],
                }
            ]
        },
    )

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    answer: str = Field(min_length=1, max_length=MAX_ANSWER_CHARS)
    citations: list[CitationIn] = Field(min_length=1, max_length=MAX_CITATIONS)


class CitationStatus(StrEnum):
    highlighted = "highlighted"
    no_match = "no_match"
    fallback = "fallback"


class Reason(StrEnum):
    """Why a citation is not (or not by the LLM) highlighted. Machine-readable; ``message`` says
    the same for people."""

    chunk_not_found = "chunk_not_found"
    pdf_unavailable = "pdf_unavailable"
    pdf_changed = "pdf_changed"
    no_text_layer = "no_text_layer"
    not_located = "not_located"
    no_relevant_sentences = "no_relevant_sentences"
    no_sentences = "no_sentences"
    llm_disabled = "llm_disabled"
    llm_unavailable = "llm_unavailable"
    llm_rejected = "llm_rejected"
    llm_truncated = "llm_truncated"
    llm_invalid_output = "llm_invalid_output"


class Rect(BaseModel):
    """One line of a highlight, in PDF points, origin top-left of the page's crop box."""

    page: int
    x0: float
    y0: float
    x1: float
    y1: float


class Highlight(BaseModel):
    sentence_id: int = Field(description="1-based number of the sentence in the chunk.")
    text: str = Field(description="The sentence as stored in the chunk.")
    start: int = Field(description="Character offset of the sentence in the chunk text.")
    end: int
    page: int = Field(description="Page the highlight starts on, 1-based.")
    page_width: float = Field(description="Width of that page's crop box, PDF points.")
    page_height: float
    score: float = Field(description="Alignment confidence, 0-100.")
    rects: list[Rect]


class CitationResult(BaseModel):
    citation_id: str | None
    chunk_id: str
    document_id: str | None
    status: CitationStatus
    reason: Reason | None = Field(
        description="Set whenever the citation is not highlighted, or was highlighted by the "
        "lexical selector because the LLM was not used."
    )
    message: str | None = None
    page_start: int | None = None
    page_end: int | None = None
    link: str | None = Field(
        description="Plain PDF link at the best page (…/pdf#page=N); null only for unknown chunks."
    )
    highlights: list[Highlight] = Field(default_factory=list)


class HighlightBatchResponse(BaseModel):
    status: Literal["complete", "partial", "fallback"] = Field(
        description="complete: every citation highlighted; partial: some; fallback: none."
    )
    method: Literal["llm", "lexical"]
    llm_tier: str | None = Field(description="Which structured-output tier served the LLM call.")
    results: list[CitationResult]
