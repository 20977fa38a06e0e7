"""API models of the documents domain."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.alignment.text import clean_extracted
from app.core.fields import CHUNK_ID_MAX, ID_PATTERN, MAX_INT32, ResponseModel, StorableText
from app.core.formats import SourceFormat
from app.documents.placing import PlacementStatus
from app.pdfs.storage import source_path_problem


class ChunkIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=CHUNK_ID_MAX, pattern=ID_PATTERN)
    text: str = Field(
        min_length=1,
        max_length=100_000,
        description="The chunk's text as your pipeline extracted it. Control characters but tab "
        "and newline (an extractor's U+0000 for a tick box) are stored as spaces, a lone "
        "surrogate as U+FFFD.",
    )
    page_start: int | None = Field(
        default=None,
        ge=0,
        le=MAX_INT32,
        description="First page the chunk's text is on: a hint. A PDF's chunk is placed in the "
        "PDF's own text when it is stored, and the pages it is found on are kept; missing, they "
        "are found; off by a constant for the document (0-based pages), corrected.",
    )
    page_end: int | None = Field(
        default=None, ge=0, le=MAX_INT32, description="Last page, inclusive: a hint too."
    )
    ordinal: int | None = Field(
        default=None,
        ge=0,
        le=MAX_INT32,
        description="Position in the document; defaults to list order.",
    )

    @field_validator("text", mode="before")
    @classmethod
    def _storable_text(cls, value: object) -> object:
        # A chunk's text is a PDF extractor's output, and extractors emit what no database
        # stores: pypdf reads a 10-K's tick boxes as U+0000. Cleaned as the service cleans its
        # own extraction (controls but tab and newline become spaces, lone surrogates U+FFFD, one
        # for one), so a LangChain chunk of that page is stored rather than refused whole.
        return clean_extracted(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _pages_in_order(self) -> ChunkIn:
        # One page given stands for both.
        if self.page_start is None:
            self.page_start = self.page_end
        elif self.page_end is None:
            self.page_end = self.page_start
        if self.page_start is not None and self.page_end is not None:
            if self.page_end < self.page_start:
                raise ValueError(
                    f"page_end ({self.page_end}) is before page_start ({self.page_start})"
                )
        return self


class DocumentUpsert(BaseModel):
    """A document and all its chunks, as an upstream RAG ingestion pushes them. The PDF must
    already be in the service's PDF storage at ``source_path``: uploaded with
    ``PUT /v2/documents/{id}/pdf`` (which answers the ``source_path`` to send), or put there by
    the pipeline (under HIGHLIGHT_PDF_ROOT, or in the object store of HIGHLIGHT_STORAGE_URL)."""

    model_config = ConfigDict(extra="forbid")

    title: StorableText | None = Field(default=None, max_length=500)
    source_path: StorableText = Field(
        min_length=1,
        max_length=1024,
        description="Path of the PDF relative to the PDF root (its key in the object store).",
    )
    chunks: list[ChunkIn] = Field(min_length=1, max_length=20_000)

    @field_validator("source_path")
    @classmethod
    def _usable_path(cls, value: str) -> str:
        problem = source_path_problem(value)
        if problem:
            raise ValueError(problem)
        return value


class ChunkOut(ResponseModel):
    id: str
    ordinal: int
    page_start: int = Field(description="First page the chunk is on (where it was found).")
    page_end: int
    text: str | None = None
    placement: PlacementStatus | None = Field(
        default=None,
        description="A PDF's chunk, placed in the PDF's own text when it was stored: placed "
        "(found whole), partial (part of it found: placed_share says how much; its sentences "
        "are that part's), not_found (its text is not in the PDF: its citations answer "
        "no_match / chunk_not_in_pdf), unchecked (the PDF's text could not be read then: it is "
        "answered from its own text and given pages). Null for a web or text source and for "
        "chunks stored before placing.",
    )
    placed_share: float | None = Field(
        default=None, description="Share of the chunk's text (letters and digits) found, 0-1."
    )
    given_page_start: int | None = Field(
        default=None, description="The pages the caller sent (null: none)."
    )
    given_page_end: int | None = None
    pages_corrected: bool = Field(
        default=False,
        description="The pages kept differ from the pages sent (found elsewhere, or 0-based).",
    )


class PlacementSummary(ResponseModel):
    """What placing a PUT's chunks in their PDF found, in all."""

    placed: int
    partial: int
    not_found: int
    unchecked: int
    pages_corrected: int
    page_offset: int | None = Field(
        description="The constant the given pages were off by, when most chunks agree on one "
        "(-1: the pages were 0-based); null when none or no pages were given."
    )
    unchecked_reason: str | None = Field(
        description="Why the chunks could not be placed (the PDF's text could not be read)."
    )


class DocumentOut(ResponseModel):
    id: str
    title: str
    source_path: str
    sha256: str
    page_count: int
    source_format: SourceFormat = Field(
        description="What the document was made from: pdf, an Office format (converted to "
        "PDF), html, markdown or text."
    )
    original_name: str | None = Field(
        description="The uploaded file's name when the document was made from a named file "
        "(an Office file's, before conversion); null otherwise."
    )
    pdf_url: str | None = Field(
        description="The document's PDF (GET /v2/documents/{id}/pdf); null for a web or text "
        "source (html, markdown, text), which has no PDF: its text is at "
        "GET /v2/documents/{id}/text."
    )
    chunks: list[ChunkOut]


class TextBlock(ResponseModel):
    kind: Literal["heading", "paragraph", "item", "quote", "code", "row"] = Field(
        description="How the viewer shows it: a heading (level 1-6), a paragraph, a list item, "
        "a block quote, preformatted text, or a table row (cells separated by a tab)."
    )
    level: int = Field(description="A heading's level, 1-6; 0 otherwise.")
    start: int = Field(description="Code point offset of the block in text.")
    end: int


class DocumentText(ResponseModel):
    """The text the highlights' selectors index: a web or text source's text (extracted from its
    file: for HTML the text a browser shows, for Markdown the rendered text), or a PDF's chunk
    texts; in both cases the chunks' texts joined by a blank line, in order."""

    document_id: str
    title: str
    source_format: SourceFormat
    sha256: str = Field(description="The document's content hash (pdf_sha256 of its highlights).")
    text: str
    blocks: list[TextBlock] = Field(
        description="The text's blocks in order, none overlapping; blank lines between them. A "
        "PDF's are its chunks."
    )


class DocumentUpsertResult(DocumentOut):
    created: bool
    changed: bool = Field(description="False when the request matched what was stored.")
    placement: PlacementSummary | None = Field(
        default=None, description="A PDF's chunks: how they were placed in its text."
    )


class PdfUploadResult(ResponseModel):
    """A stored PDF upload (or the PDF an Office file was converted to); with ``chunk=true``,
    also the document made of it."""

    document_id: str
    sha256: str = Field(description="SHA-256 of the PDF's bytes (hex).")
    source_path: str = Field(
        description="Where the PDF is stored, by its content: the source_path to send in "
        "PUT /v2/documents/{id}."
    )
    page_count: int
    title: str = Field(
        description="The PDF's own metadata title ('' when it has none, or only a converter's "
        "placeholder such as 'Microsoft Word - x.doc'); with chunk=true, the document's title."
    )
    newly_stored: bool = Field(
        description="False when the same content was already stored (nothing was rewritten)."
    )
    source_format: SourceFormat = Field(
        default=SourceFormat.pdf,
        description="What the file was, from its bytes: pdf, or the Office format it was "
        "converted to PDF from (sha256, source_path and page_count are then the PDF's).",
    )
    original_name: str | None = Field(
        default=None,
        description="The filename it was sent with (PUT …/file?filename=); null when none.",
    )
    created: bool | None = Field(
        default=None, description="chunk=true: whether the document was new."
    )
    changed: bool | None = Field(
        default=None,
        description="chunk=true: False when the document already was this PDF with these chunks.",
    )
    chunks: list[ChunkOut] | None = Field(
        default=None, description="chunk=true: the document's chunks (ids and pages)."
    )
