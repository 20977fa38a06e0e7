from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.core.fields import CHUNK_ID_MAX, DOCUMENT_ID_MAX
from app.db.base import Base


def _now() -> datetime:
    return datetime.now(UTC)


class Document(Base):
    __tablename__ = "document"

    id: Mapped[str] = mapped_column(String(DOCUMENT_ID_MAX), primary_key=True)
    title: Mapped[str] = mapped_column(String(500))
    # Relative to HIGHLIGHT_PDF_ROOT, with forward slashes; never absolute.
    source_path: Mapped[str] = mapped_column(String(1024))
    sha256: Mapped[str] = mapped_column(String(64))
    page_count: Mapped[int] = mapped_column(Integer)
    # A SourceFormat value (app/core/formats.py). For Office files source_path/sha256 are the
    # converted PDF's and original_* the uploaded file's; for text sources, the stored text's.
    source_format: Mapped[str] = mapped_column(String(16), default="pdf", server_default="pdf")
    original_name: Mapped[str | None] = mapped_column(String(500), default=None)
    original_sha256: Mapped[str | None] = mapped_column(String(64), default=None)
    original_path: Mapped[str | None] = mapped_column(String(1024), default=None)
    # A text source's blocks as JSON (documents/text_sources.py), made at upload; loaded only
    # when asked for (``repository.get_document(with_blocks=True)``): it can be large.
    text_blocks: Mapped[str | None] = mapped_column(Text, default=None, deferred=True)
    # A PDF's own text (pdfs/reading.py), its chunks placed in it at PUT (documents/placing.py);
    # null for a text source (its chunks tile its text) and for rows stored before placing.
    reading_text: Mapped[str | None] = mapped_column(Text, default=None, deferred=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)

    chunks: Mapped[list[Chunk]] = relationship(
        back_populates="document",
        order_by="Chunk.ordinal",
        cascade="all, delete-orphan",
        passive_deletes=True,
    )


class Chunk(Base):
    __tablename__ = "chunk"
    __table_args__ = (UniqueConstraint("document_id", "ordinal"),)

    id: Mapped[str] = mapped_column(String(CHUNK_ID_MAX), primary_key=True)
    document_id: Mapped[str] = mapped_column(
        ForeignKey("document.id", ondelete="CASCADE"), index=True
    )
    ordinal: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    page_start: Mapped[int] = mapped_column(Integer)
    page_end: Mapped[int] = mapped_column(Integer)
    # Character offsets of the chunk in its document's text: a text source's, or a PDF's own
    # text where the chunk was placed (null when it was not).
    source_start: Mapped[int | None] = mapped_column(Integer, default=None)
    source_end: Mapped[int | None] = mapped_column(Integer, default=None)
    # A PDF's chunk placed in its own text: that stretch of it (reading_text[source_start:
    # source_end]), which a batch cuts sentences from instead of the caller's text.
    own_text: Mapped[str | None] = mapped_column(Text, default=None)
    # How a PDF's chunk was placed (documents/placing.PlacementStatus) and the share of its
    # text found; the pages its caller gave (page_start/page_end are the pages found).
    placement: Mapped[str | None] = mapped_column(String(16), default=None)
    placed_share: Mapped[float | None] = mapped_column(Float, default=None)
    given_page_start: Mapped[int | None] = mapped_column(Integer, default=None)
    given_page_end: Mapped[int | None] = mapped_column(Integer, default=None)

    document: Mapped[Document] = relationship(back_populates="chunks")
