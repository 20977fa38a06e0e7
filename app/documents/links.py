"""Links to a document's PDF, as batch results carry them (``…/pdf#page=N``)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode

from app.core.security import TokenRegistry


@dataclass(frozen=True)
class PdfLinks:
    """``base_url`` (HIGHLIGHT_PUBLIC_BASE_URL) makes links absolute (behind a proxy that mounts
    the service under a path, that path is part of it); with ``tokens`` enabled links carry a
    signature. Links always name routes the service has, whichever path the caller used."""

    tokens: TokenRegistry | None = None
    ttl_s: int = 24 * 3600
    base_url: str = ""
    clock: Callable[[], float] = field(default=time.time, compare=False)

    def signed_query(self, document_id: str) -> str:
        """``?expires=…&signature=…`` when auth is on, else empty. The link is valid ``ttl_s``
        from now, the expiry rounded up to the next whole second. Links are made per response,
        after the result cache, so a cached answer still gets fresh links."""
        if self.tokens is None or not self.tokens.enabled:
            return ""
        expires = math.ceil(self.clock()) + self.ttl_s
        return f"?expires={expires}&signature={self.tokens.link_signature(document_id, expires)}"

    def viewer(self, document_id: str, highlight_ids: list[str]) -> str:
        """The reference viewer with these highlights (signed like the PDF link when auth is on,
        so it opens in a reader's browser)."""
        query = [("document_id", document_id), *(("highlight", h) for h in highlight_ids)]
        signed = self.signed_query(document_id)
        extra = f"&{signed[1:]}" if signed else ""
        return f"{self.base_url}/viewer?{urlencode(query)}{extra}"

    def pdf(self, document_id: str, page: int) -> str:
        return f"{self._pdf_path(document_id)}{self.signed_query(document_id)}#page={page}"

    def pinned_pdf(self, document_id: str, sha256: str) -> str:
        """The PDF only if it still is the content ``sha256`` (409 ``pdf_changed`` otherwise):
        what a viewer loads to draw stored highlights, whose rectangles belong to that
        content."""
        signed = self.signed_query(document_id)
        return f"{self._pdf_path(document_id)}?sha256={sha256}{'&' + signed[1:] if signed else ''}"

    def _pdf_path(self, document_id: str) -> str:
        return f"{self.base_url}/v2/documents/{quote(document_id, safe='')}/pdf"
