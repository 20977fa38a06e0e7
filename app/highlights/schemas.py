"""API models of POST /v2/highlights/batch."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.core.fields import (
    CHUNK_ID_MAX,
    CITATION_ID_MAX,
    ResponseModel,
    StorableText,
    VisibleText,
)
from app.core.formats import SourceFormat

# Hard ceilings in the schema; Settings may set lower limits, enforced by the service.
MAX_QUERY_CHARS = 4_000
MAX_ANSWER_CHARS = 20_000
MAX_CITATIONS = 50
MARKER_MAX = 64


# How a batch chose its sentences: by the LLM, or by word overlap (no LLM, or it failed).
Method = Literal["llm", "lexical"]


class CitationIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    chunk_id: StorableText = Field(min_length=1, max_length=CHUNK_ID_MAX)
    citation_id: StorableText | None = Field(
        default=None,
        max_length=CITATION_ID_MAX,
        description="The frontend's own id, echoed back; also the label of this citation's "
        "markers in the answer ([1], [1, 2], [1-3], [1][2], [^1], 【1】, <sup>1</sup>), which "
        "tie it to the claims it supports.",
    )
    marker: VisibleText | None = Field(
        default=None,
        max_length=MARKER_MAX,
        description="The literal text that marks this citation in the answer, for a marker "
        'convention other than the recognised ones (e.g. "(Source 3)"). Default: the '
        "recognised forms around citation_id.",
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

    query: StorableText = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    answer: StorableText = Field(min_length=1, max_length=MAX_ANSWER_CHARS)
    citations: list[CitationIn] = Field(min_length=1, max_length=MAX_CITATIONS)


class CitationStatus(StrEnum):
    highlighted = "highlighted"
    no_match = "no_match"
    fallback = "fallback"


class Support(StrEnum):
    """Does the cited chunk support what it is cited for (its claim, or the whole answer)?"""

    supported = "supported"
    partial = "partial"  # some of it: a figure's inputs, one item of a list, one of two facts
    unsupported = "unsupported"  # nothing in the chunk does; nothing is highlighted


class Reason(StrEnum):
    """Why a citation is not (or not by the LLM) highlighted. Machine-readable; ``message`` says
    the same for people."""

    chunk_not_found = "chunk_not_found"
    chunk_not_in_pdf = "chunk_not_in_pdf"  # its text was not found in its PDF when stored
    pdf_unavailable = "pdf_unavailable"  # the storage has no such file or object
    storage_unavailable = "storage_unavailable"  # the storage could not be asked; ask again
    pdf_changed = "pdf_changed"
    no_text_layer = "no_text_layer"
    index_pending = "index_pending"  # the PDF's text layer still being read into its index
    text_layer_pending = "text_layer_pending"  # scanned pages still being read by OCR
    pdf_too_complex = "pdf_too_complex"
    not_located = "not_located"
    unsupported = "unsupported"  # nothing in the chunk supports what it is cited for
    no_sentences = "no_sentences"
    llm_disabled = "llm_disabled"
    llm_pending = "llm_pending"  # only in provisional stream events
    llm_unavailable = "llm_unavailable"
    llm_busy = "llm_busy"  # this replica had its limit of LLM calls in flight
    llm_rejected = "llm_rejected"
    llm_truncated = "llm_truncated"
    llm_invalid_output = "llm_invalid_output"


class Rect(ResponseModel):
    """One line of a highlight, in PDF points, origin top-left of the page as displayed (crop box,
    after the page's /Rotate)."""

    page: int
    x0: float
    y0: float
    x1: float
    y1: float


class NormalizedRect(ResponseModel):
    """The same rectangle in fractions (0-1) of its own page's displayed width and height, for
    viewers that lay pages out at any size."""

    page: int
    x0: float = Field(ge=0, le=1)
    y0: float = Field(ge=0, le=1)
    x1: float = Field(ge=0, le=1)
    y1: float = Field(ge=0, le=1)


SOURCE_FORMAT = (
    "pdf, or the Office format (docx, pptx, xlsx, odt, odp, ods, rtf, or the legacy doc, ppt, "
    "xls) it was converted to PDF from (the rectangles are on the converted PDF's pages), or "
    "html, markdown or text"
)
ORIGINAL_NAME = (
    "The name of the file the document was made from (an Office file's, before conversion), "
    "for showing beside the PDF; null when it was sent without one."
)
SUPPORT_SCORE = (
    "How much of what the citation is cited for the chunk shows, 0-1: by word overlap, the "
    "share of the claim's telling words and figures its highlighted sentences show (weighed by "
    "how rare each is in the document); from the LLM, 1 supported, 0.5 partial, 0 unsupported. "
    "Not the highlights' score, which is placement confidence."
)


class Claim(ResponseModel):
    """A span of the answer that a citation's marker closes: the sentence or clause before it.
    Offsets are Unicode code points into the request's answer (Python string indices); JavaScript
    strings index UTF-16 code units, hence ``utf16_start`` / ``utf16_end`` (they differ only after
    a character outside the Basic Multilingual Plane, such as an emoji)."""

    start: int
    end: int
    utf16_start: int
    utf16_end: int
    text: str = Field(description="answer[start:end]: the claim without its marker.")
    support: Support | None = Field(
        default=None,
        description="Whether the chunk supports this claim; null when the chunk has no text "
        "to judge.",
    )
    support_score: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description=SUPPORT_SCORE,
    )


class TextQuoteSelector(ResponseModel):
    """W3C Web Annotation TextQuoteSelector (https://www.w3.org/TR/annotation-model/
    #text-quote-selector) over the document's text (GET /v2/documents/{id}/text)."""

    type: Literal["TextQuoteSelector"] = "TextQuoteSelector"
    exact: str = Field(description="The highlighted text, as in the document's text.")
    prefix: str = Field(
        description="The text just before it: 32 characters, or more until prefix + exact + "
        "suffix occurs once in the document's text (fewer at its start)."
    )
    suffix: str = Field(
        description="The text just after it: as many characters as the prefix was given "
        "(fewer at the text's end, so it may be shorter or longer than the prefix)."
    )


class TextPositionSelector(ResponseModel):
    """W3C Web Annotation TextPositionSelector (https://www.w3.org/TR/annotation-model/
    #text-position-selector): Unicode code point offsets into the document's text, end
    exclusive."""

    type: Literal["TextPositionSelector"] = "TextPositionSelector"
    start: int = Field(ge=0)
    end: int = Field(ge=0)


Selector = Annotated[TextQuoteSelector | TextPositionSelector, Field(discriminator="type")]


class Highlight(ResponseModel):
    highlight_id: str = Field(
        description="Stable id: the same document content, chunk and sentence offsets always "
        "give the same id (GET /v2/highlights/{highlight_id}, the viewer and page previews "
        "take it)."
    )
    sentence_id: int = Field(description="1-based number of the sentence in the chunk.")
    text: str = Field(
        description="The sentence as stored in the chunk, with the PDF's line-break hyphens and "
        "ligatures (start and end index this text)."
    )
    display_text: str = Field(
        default="",
        description="The sentence as a person would quote it: a word hyphenated at a line end "
        "joined, a compound's own hyphen kept (year-over-year), ligatures spelled out (NFKC), "
        "white space collapsed.",
    )
    start: int = Field(description="Character offset of the sentence in the chunk text.")
    end: int
    page: int = Field(description="Page the highlight starts on, 1-based.")
    page_width: float = Field(description="Width of that page as displayed, PDF points.")
    page_height: float
    score: float = Field(
        description="Placement confidence, 0-100: how closely the PDF's text at the rectangles "
        "matches the sentence. It does not measure support: that is the citation's (and each "
        "claim's) support and support_score."
    )
    claims: list[int] = Field(
        default_factory=list,
        description="Indexes into the citation's claims of the claims this sentence was chosen "
        "for; empty when the citation has no claims (it supports the answer as a whole). Only "
        "in a batch answer: a highlight fetched by id belongs to no one answer.",
    )
    rects: list[Rect] = Field(description="One rectangle per line, in reading order.")
    boxes: list[Rect] = Field(
        default_factory=list,
        description="One rectangle per page enclosing the highlight's lines on it, for viewers "
        "that draw a single block.",
    )
    normalized_rects: list[NormalizedRect]
    selectors: list[Selector] = Field(
        default_factory=list,
        description="The sentence in the document's text (GET /v2/documents/{id}/text: a web "
        "or text source's text, a PDF's chunk texts joined by a blank line in order) as W3C Web "
        "Annotation selectors: a TextQuoteSelector, then a TextPositionSelector. Empty only "
        "for a highlight stored before selectors existed, fetched by id.",
    )
    text_fragment: str | None = Field(
        default=None,
        description="For a web page (an HTML source): a URL text fragment "
        "(#:~:text=prefix-,start,end,-suffix) to append to the page's own URL, which a browser "
        "scrolls to and marks. Null for other sources.",
    )


class CitationResult(ResponseModel):
    citation_id: str | None
    chunk_id: str
    document_id: str | None
    document_title: str | None = None
    # Defaults so that answers cached before the fields existed still parse.
    source_format: SourceFormat | None = Field(
        default=None,
        description="What the cited document was made from: "
        + SOURCE_FORMAT
        + "; null only for unknown chunks. A web or text source (html, markdown, text) has no "
        "PDF: its highlights have no rectangles (page 1, page size 0), their selectors place "
        "them in its text, pdf_url is null and link opens the viewer.",
    )
    original_name: str | None = Field(default=None, description=ORIGINAL_NAME)
    status: CitationStatus
    reason: Reason | None = Field(
        description="Set whenever the citation is not highlighted, or was highlighted by the "
        "lexical selector because the LLM was not used."
    )
    support: Support | None = Field(
        default=None,
        description="Whether the chunk supports what it is cited for: its claims (supported "
        "when it supports every one, unsupported when none, else partial), or the whole answer "
        "when it has none. unsupported: nothing is highlighted (status no_match, reason "
        "unsupported, or the LLM's failure when the word-overlap judge stood in). Null when it "
        "could not be judged: an unknown chunk, a chunk without text.",
    )
    support_score: float | None = Field(default=None, ge=0, le=1, description=SUPPORT_SCORE)
    message: str | None = None
    page_start: int | None = None
    page_end: int | None = None
    link: str | None = Field(
        description="Plain PDF link at the best page (…/pdf#page=N), absolute when the service "
        "has a public base URL; for a web or text source, the viewer showing its text with the "
        "highlights marked; null only for unknown chunks."
    )
    # A default only so that answers cached before the field existed still parse: links are
    # never cached, with_links fills this in on every answer.
    pdf_url: str | None = Field(
        default=None,
        description="The document's PDF to load in a viewer (PDF.js getDocument, "
        "react-pdf-highlighter's url): link without its #page=N fragment, so nothing has to "
        "be cut off a string. Relative (/v2/documents/{id}/pdf) unless the service has a "
        "public base URL (HIGHLIGHT_PUBLIC_BASE_URL), then absolute. With auth on it carries "
        "a signature (expires, signature) that lets a browser GET it without a token until "
        "it expires (HIGHLIGHT_AUTH_LINK_TTL_S); ask again for a fresh one. Null "
        "when link is null (an unknown chunk) and for a web or text source, which has no PDF.",
    )
    claims: list[Claim] = Field(
        default_factory=list,
        description="The spans of the answer this citation's markers close, in answer order; "
        "empty when none of its markers is in the answer (its highlights then support the "
        "answer as a whole).",
    )
    viewer_link: str | None = Field(
        default=None,
        description="The reference viewer (GET /viewer) showing this citation's highlights, "
        "with its first 3 claims above the page and its verdict on each, 'Supports: …' or "
        "'Partly supports: …' (claim and support parameters, each claim cut to 300 characters; "
        "display-only, outside the signature); null when there are no highlights.",
    )
    highlights: list[Highlight] = Field(
        default_factory=list,
        description="In reading order: by page, then by position in the chunk's text.",
    )


class HighlightBatchResponse(ResponseModel):
    status: Literal["complete", "partial", "fallback"] = Field(
        description="complete: every citation highlighted; partial: some; fallback: none."
    )
    method: Method
    llm_tier: str | None = Field(description="Which structured-output tier served the LLM call.")
    results: list[CitationResult]


class CitationEvent(ResponseModel):
    """Data of a ``citation`` event of POST /v2/highlights/stream."""

    index: int = Field(description="Position of the citation in the request's citations.")
    provisional: bool = Field(
        description="True: chosen by word overlap while the LLM answers (reason llm_pending); a "
        "non-provisional event for the same index follows."
    )
    citation: CitationResult


class BatchSummary(ResponseModel):
    """Data of the ``summary`` event, the last event of POST /v2/highlights/stream."""

    status: Literal["complete", "partial", "fallback"]
    method: Method
    llm_tier: str | None
    total: int
    highlighted: int
    cached: bool = Field(description="The answer came from the result cache.")


class StoredHighlightOut(ResponseModel):
    """A highlight by id, as the reference viewer and page previews use it."""

    highlight_id: str
    document_id: str
    document_title: str
    source_format: SourceFormat = Field(
        default=SourceFormat.pdf,
        description="What the document was made from: " + SOURCE_FORMAT + ".",
    )
    original_name: str | None = Field(default=None, description=ORIGINAL_NAME)
    chunk_id: str
    pdf_sha256: str = Field(
        description="SHA-256 of the PDF content the rectangles belong to (of a web or text "
        "source, of its stored text); the PDF at pdf_url is served only while it is this "
        "content."
    )
    pdf_url: str | None = Field(
        description="The document's PDF, pinned to pdf_sha256 (409 pdf_changed once the file "
        "or the document changed), signed when auth is on; null for a web or text source."
    )
    text_url: str | None = Field(
        default=None,
        description="A web or text source's text with its block structure "
        "(GET /v2/documents/{id}/text), signed when auth is on; null for a PDF.",
    )
    highlight: Highlight
