"""API models of the documents domain."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.core.fields import CHUNK_ID_MAX, ID_PATTERN, MAX_INT32, StorableText
from app.documents.storage import source_path_problem


class ChunkIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=CHUNK_ID_MAX, pattern=ID_PATTERN)
    text: StorableText = Field(min_length=1, max_length=100_000)
    page_start: int = Field(
        ge=1, le=MAX_INT32, description="First page the chunk's text is on, 1-based."
    )
    page_end: int = Field(ge=1, le=MAX_INT32, description="Last page, 1-based, inclusive.")
    ordinal: int | None = Field(
        default=None,
        ge=0,
        le=MAX_INT32,
        description="Position in the document; defaults to list order.",
    )

    @model_validator(mode="after")
    def _pages_in_order(self) -> ChunkIn:
        if self.page_end < self.page_start:
            raise ValueError(f"page_end ({self.page_end}) is before page_start ({self.page_start})")
        return self


class DocumentUpsert(BaseModel):
    """A document and all its chunks, as an upstream RAG ingestion pushes them. The PDF must
    already be under the service's PDF root (HIGHLIGHT_PDF_ROOT) at ``source_path``."""

    model_config = ConfigDict(extra="forbid")

    title: StorableText | None = Field(default=None, max_length=500)
    source_path: StorableText = Field(
        min_length=1, max_length=1024, description="Path of the PDF relative to the PDF root."
    )
    chunks: list[ChunkIn] = Field(min_length=1, max_length=20_000)

    @field_validator("source_path")
    @classmethod
    def _usable_path(cls, value: str) -> str:
        problem = source_path_problem(value)
        if problem:
            raise ValueError(problem)
        return value


class ChunkOut(BaseModel):
    id: str
    ordinal: int
    page_start: int
    page_end: int
    text: str | None = None


class DocumentOut(BaseModel):
    id: str
    title: str
    source_path: str
    sha256: str
    page_count: int
    pdf_url: str
    chunks: list[ChunkOut]


class DocumentUpsertResult(DocumentOut):
    created: bool
    changed: bool = Field(description="False when the request matched what was stored.")
