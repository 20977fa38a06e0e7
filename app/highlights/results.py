"""What a citation's result says when it is not highlighted (reasons' messages), a citation of
an unknown chunk, the batch's status, and links. A stored chunk's result is built by its record
(cited.py).

Results are built without links: links (``link``, ``pdf_url``, ``viewer_link``) depend on who
asks (signatures when auth is on, the public base URL) and are added last (``with_links``), so a
cached answer serves every caller, and one cached before a link field existed gets it too.
"""

from __future__ import annotations

from typing import Literal

from app.core.formats import TEXT
from app.documents.links import PdfLinks
from app.highlights.schemas import (
    CitationResult,
    CitationStatus,
    HighlightBatchResponse,
    Reason,
)
from app.pdfs.indexing import Pending

MESSAGES: dict[Reason, str] = {
    Reason.chunk_not_found: "No chunk with this id is stored; it may not have been ingested yet.",
    Reason.pdf_unavailable: "The document's PDF could not be opened; showing the page link only.",
    Reason.storage_unavailable: (
        "The store holding the document's PDF could not be reached; showing the page link "
        "only. The document is not gone: asking again later will highlight it."
    ),
    Reason.pdf_changed: "The PDF changed since it was ingested; re-ingest the document.",
    Reason.no_text_layer: (
        "The cited pages have no text layer and were not read by OCR (OCR off or not installed, "
        "past the document's OCR page budget, or nothing legible)."
    ),
    Reason.index_pending: (
        "The document's text index is still being built from its text layer; showing the page "
        "link only. Asking again shortly will highlight it."
    ),
    Reason.text_layer_pending: (
        "The document's scanned pages are still being read by OCR (it takes a while); showing "
        "the page link only. Asking again in a minute will highlight it."
    ),
    Reason.pdf_too_complex: (
        "The PDF needs more memory or time to read than this service allows one document; "
        "showing the page link only."
    ),
    Reason.not_located: "The supporting sentences could not be found reliably on the PDF pages.",
    Reason.unsupported: (
        "Nothing in this chunk supports what it is cited for, so nothing is highlighted; the "
        "page link still opens the cited pages."
    ),
    Reason.no_sentences: "The chunk has no text to highlight.",
    Reason.chunk_not_in_pdf: (
        "This chunk's text was not found in its document's PDF when it was stored (another "
        "file's text, or text the PDF does not print), and neither were the sentences chosen "
        "from it, so nothing is highlighted or judged; the page link opens the pages it was "
        "stored with."
    ),
    Reason.llm_disabled: "No LLM is configured; sentences were chosen by word overlap.",
    Reason.llm_pending: "Chosen by word overlap while the LLM answers; an update follows.",
    Reason.llm_unavailable: "The LLM could not be reached; sentences were chosen by word overlap.",
    Reason.llm_busy: (
        "The LLM was busy with other requests; sentences were chosen by word overlap. Asking "
        "again later may use it."
    ),
    Reason.llm_rejected: "The LLM refused the request; sentences were chosen by word overlap.",
    Reason.llm_truncated: "The LLM's reply was cut off; sentences were chosen by word overlap.",
    Reason.llm_invalid_output: (
        "The LLM's reply was unusable; sentences were chosen by word overlap."
    ),
}


def pending_message(pending: Pending, stalled: bool = False) -> str:
    """What a citation of a PDF whose index is not built yet says: which part is pending (the
    text layer, or OCR) and how far it is."""
    if stalled:
        return (
            "The document's text index could not be built in time because the service is busy; "
            "showing the page link only. The next request builds it again."
        )
    pages = f"{pending.pages}-page " if pending.pages is not None else ""
    if pending.stage == "ocr":
        return (
            f"The document's scanned pages are still being read by OCR ({pending.read} of "
            f"{pending.scanned} read); showing the page link only. Asking again in a minute "
            "will highlight it."
        )
    if pending.stage == "text":
        return (
            f"The text index of this {pages}document is still being built from its text layer "
            "(no OCR needed); showing the page link only. Asking again shortly will highlight it."
        )
    return (
        f"The text index of this {pages}document is still being built (its pages are being "
        "checked for scans); showing the page link only. Asking again shortly will highlight it."
    )


def not_found(chunk_id: str, citation_id: str | None) -> CitationResult:
    return CitationResult(
        citation_id=citation_id,
        chunk_id=chunk_id,
        document_id=None,
        status=CitationStatus.fallback,
        reason=Reason.chunk_not_found,
        message=MESSAGES[Reason.chunk_not_found],
        link=None,
        pdf_url=None,
    )


BatchStatus = Literal["complete", "partial", "fallback"]


def batch_status(results: list[CitationResult]) -> BatchStatus:
    highlighted = sum(r.status == CitationStatus.highlighted for r in results)
    if highlighted == len(results):
        return "complete"
    return "partial" if highlighted else "fallback"


def pdf_links_of(result: CitationResult, links: PdfLinks) -> tuple[str | None, str | None]:
    """``pdf_url`` and ``link`` (the same URL at the best page), both null for an unknown
    chunk. One signature for both: a second would expire a second later across a clock tick."""
    if result.document_id is None:
        return None, None
    page = result.highlights[0].page if result.highlights else result.page_start or 1
    pdf_url = links.pdf_file(result.document_id)
    return pdf_url, f"{pdf_url}#page={page}"


def viewer_link_of(result: CitationResult, links: PdfLinks) -> str | None:
    if result.document_id is None or not result.highlights:
        return None
    text = result.source_format in TEXT
    supports = (
        [c.support.value if c.support else None for c in result.claims]
        if result.claims
        else [result.support.value if result.support else None]
    )
    return links.viewer(
        result.document_id,
        [h.highlight_id for h in result.highlights],
        [c.text for c in result.claims],
        supports,
        text=text,
    )


def with_links(response: HighlightBatchResponse, links: PdfLinks) -> HighlightBatchResponse:
    results = []
    for r in response.results:
        viewer = viewer_link_of(r, links)
        pdf_url, link = pdf_links_of(r, links)
        if r.document_id is not None and r.source_format in TEXT:
            # No PDF: the link opens the viewer on the text (marked when there are highlights).
            pdf_url, link = None, viewer or links.viewer(r.document_id, [], text=True)
        update = {"pdf_url": pdf_url, "link": link, "viewer_link": viewer}
        results.append(r.model_copy(update=update))
    return response.model_copy(update={"results": results})
