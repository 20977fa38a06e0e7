"""Per-citation results from what was chosen and where it was found, and the batch's status.

Results are built without links: links depend on who asks (signatures when
auth is on, the public base URL) and are added last (``with_links``), so a cached answer serves
every caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.documents.links import PdfLinks
from app.highlights.choosing import Choice, Chosen
from app.highlights.locating import ChunkLocation
from app.highlights.schemas import (
    CitationResult,
    CitationStatus,
    HighlightBatchResponse,
    Reason,
)
from app.selection.sentences import Sentence

MESSAGES: dict[Reason, str] = {
    Reason.chunk_not_found: "No chunk with this id is stored; it may not have been ingested yet.",
    Reason.pdf_unavailable: "The document's PDF could not be opened; showing the page link only.",
    Reason.pdf_changed: "The PDF changed since it was ingested; re-ingest the document.",
    Reason.no_text_layer: "The cited pages have no text layer (a scan without OCR).",
    Reason.pdf_too_complex: (
        "The PDF needs more memory or time to read than this service allows one document; "
        "showing the page link only."
    ),
    Reason.not_located: "The supporting sentences could not be found reliably on the PDF pages.",
    Reason.no_relevant_sentences: "No sentence of this chunk was judged to support the answer.",
    Reason.no_sentences: "The chunk has no text to highlight.",
    Reason.llm_disabled: "No LLM is configured; sentences were chosen by word overlap.",
    Reason.llm_pending: "Chosen by word overlap while the LLM answers; an update follows.",
    Reason.llm_unavailable: "The LLM could not be reached; sentences were chosen by word overlap.",
    Reason.llm_rejected: "The LLM refused the request; sentences were chosen by word overlap.",
    Reason.llm_truncated: "The LLM's reply was cut off; sentences were chosen by word overlap.",
    Reason.llm_invalid_output: (
        "The LLM's reply was unusable; sentences were chosen by word overlap."
    ),
}


@dataclass(frozen=True)
class StoredChunk:
    id: str
    document_id: str
    document_title: str
    text: str
    page_start: int
    page_end: int
    source_path: str
    sha256: str


def not_found(chunk_id: str, citation_id: str | None) -> CitationResult:
    return CitationResult(
        citation_id=citation_id,
        chunk_id=chunk_id,
        document_id=None,
        status=CitationStatus.fallback,
        reason=Reason.chunk_not_found,
        message=MESSAGES[Reason.chunk_not_found],
        link=None,
    )


def citation_result(
    chunk: StoredChunk,
    citation_id: str | None,
    sentences: list[Sentence],
    choice: Choice,
    location: ChunkLocation,
    note: str | None = None,
) -> CitationResult:
    highlights = location.highlights
    status, reason = CitationStatus.highlighted, choice.reason
    if not highlights:
        status = CitationStatus.no_match
        if location.error is not None:
            status, reason = CitationStatus.fallback, location.error
        elif not sentences:
            reason = Reason.no_sentences
        elif not choice.sentence_ids:
            # After an LLM failure the empty choice is the weaker selector's: name the cause.
            reason = choice.reason or Reason.no_relevant_sentences
        else:
            reason = Reason.not_located
    message = MESSAGES[reason] if reason else None
    if reason is not None and reason == choice.reason and note:
        message = note
    if not highlights and reason == choice.reason and reason is not None:
        message = f"{message} None of them echoes the answer."
    return CitationResult(
        citation_id=citation_id,
        chunk_id=chunk.id,
        document_id=chunk.document_id,
        document_title=chunk.document_title,
        status=status,
        reason=reason,
        message=message,
        page_start=chunk.page_start,
        page_end=chunk.page_end,
        link=None,
        highlights=highlights,
    )


def result_for(
    chunk_id: str,
    citation_id: str | None,
    chunks: dict[str, StoredChunk],
    sentences: dict[str, list[Sentence]],
    chosen: Chosen,
    located: dict[str, ChunkLocation],
) -> CitationResult:
    chunk = chunks.get(chunk_id)
    if chunk is None:
        return not_found(chunk_id, citation_id)
    choice = chosen.per_chunk.get(chunk_id, Choice([], None))
    return citation_result(
        chunk, citation_id, sentences[chunk_id], choice, located[chunk_id], chosen.note
    )


BatchStatus = Literal["complete", "partial", "fallback"]


def batch_status(results: list[CitationResult]) -> BatchStatus:
    highlighted = sum(r.status == CitationStatus.highlighted for r in results)
    if highlighted == len(results):
        return "complete"
    return "partial" if highlighted else "fallback"


def link_of(result: CitationResult, links: PdfLinks) -> str | None:
    if result.document_id is None:
        return None
    page = result.highlights[0].page if result.highlights else result.page_start or 1
    return links.pdf(result.document_id, page)


def viewer_link_of(result: CitationResult, links: PdfLinks) -> str | None:
    if result.document_id is None or not result.highlights:
        return None
    return links.viewer(result.document_id, [h.highlight_id for h in result.highlights])


def with_links(response: HighlightBatchResponse, links: PdfLinks) -> HighlightBatchResponse:
    results = [
        r.model_copy(update={"link": link_of(r, links), "viewer_link": viewer_link_of(r, links)})
        for r in response.results
    ]
    return response.model_copy(update={"results": results})
