"""Tables of the highlights domain: highlights by id (for the viewer and page previews), and the
result cache (a repeated batch answers without asking the LLM again)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.core.fields import CHUNK_ID_MAX
from app.db.base import Base


def _now() -> datetime:
    return datetime.now(UTC)


class StoredHighlight(Base):
    __tablename__ = "highlight"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    document_id: Mapped[str] = mapped_column(
        ForeignKey("document.id", ondelete="CASCADE"), index=True
    )
    # The PDF content the rectangles belong to; the id is derived from it too.
    document_sha256: Mapped[str] = mapped_column(String(64))
    chunk_id: Mapped[str] = mapped_column(String(CHUNK_ID_MAX))
    page: Mapped[int] = mapped_column(Integer)
    data: Mapped[str] = mapped_column(Text)  # the Highlight, as JSON
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


class CachedResult(Base):
    __tablename__ = "result_cache"

    # sha256 of everything the answer depends on (highlights/cache.py).
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    response: Mapped[str] = mapped_column(Text)  # HighlightBatchResponse without links, as JSON
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now, index=True)
