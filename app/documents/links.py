"""Links to a document's PDF, as batch results carry them (``…/pdf#page=N``)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote, quote_plus, urlencode

from app.core.security import TokenRegistry

# A viewer link shows the claims its citation is cited for (the viewer's "Cited for" block), but
# the answer is the caller's and may be long, and URLs over a few KB are cut or refused by
# address bars, proxies (nginx's default limit for a request line is 8 KB), chat apps and link
# shorteners. So a link carries at most VIEWER_CLAIMS claims, each at most VIEWER_CLAIM_CHARS
# characters and VIEWER_CLAIM_BYTES bytes once url-encoded (a CJK character takes 9): a longer
# one is cut and ends with "…". At most about 2.7 KB of claims per link, in any script.
VIEWER_CLAIMS = 3
VIEWER_CLAIM_CHARS = 300
VIEWER_CLAIM_BYTES = 900


def viewer_claim(text: str) -> str:
    """A claim as a viewer link carries it: white space collapsed, cut to VIEWER_CLAIM_CHARS
    characters and VIEWER_CLAIM_BYTES encoded bytes (the last character "…" when cut)."""
    text = " ".join(text.split())
    cut = text[:VIEWER_CLAIM_CHARS]
    while len(quote_plus(cut)) > VIEWER_CLAIM_BYTES:
        cut = cut[: len(cut) * 3 // 4]
    if cut == text:
        return text
    return cut[:-1].rstrip() + "…"


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

    def viewer(
        self,
        document_id: str,
        highlight_ids: list[str],
        claims: Iterable[str] = (),
        supports: Sequence[str | None] = (),
        text: bool = False,
    ) -> str:
        """The reference viewer with these highlights (signed like the PDF link when auth is on,
        so it opens in a reader's browser), showing the first VIEWER_CLAIMS ``claims`` above the
        page, each with its verdict when ``supports`` gives one ("Supports: …", "Partly
        supports: …"); a citation without claims may give one verdict for the whole answer.
        Claims and verdicts come after the highlights and before the signature, which covers the
        document and expiry only (what the link grants): they are display-only text, so they
        need no signing, and an edited one changes only what the page says."""
        given = list(claims)
        verdicts = list(supports) + [None] * max(0, len(given) - len(supports))
        pairs = [(viewer_claim(c), v) for c, v in zip(given, verdicts, strict=False)]
        shown = [(c, v) for c, v in pairs if c][:VIEWER_CLAIMS]
        if not given and supports and supports[0]:
            told = [supports[0]]  # the whole answer's
        else:
            told = [v for _, v in shown if v] if all(v for _, v in shown) else []
        query = [
            ("document_id", document_id),
            # A web or text source: the viewer shows its text (GET …/text), not a PDF.
            *([("view", "text")] if text else []),
            *(("highlight", h) for h in highlight_ids),
            *(("claim", c) for c, _ in shown),
            *(("support", v) for v in told),
        ]
        signed = self.signed_query(document_id)
        extra = f"&{signed[1:]}" if signed else ""
        return f"{self.base_url}/viewer?{urlencode(query)}{extra}"

    def document_pdf(self, document_id: str) -> str:
        """The PDF as a document's record names it: for callers holding a token, so unsigned."""
        return self._pdf_path(document_id)

    def pdf_file(self, document_id: str) -> str:
        """The PDF as a batch result's ``pdf_url`` names it: signed when auth is on (a reader's
        browser opens it), without a page."""
        return f"{self._pdf_path(document_id)}{self.signed_query(document_id)}"

    def pdf(self, document_id: str, page: int) -> str:
        return f"{self.pdf_file(document_id)}#page={page}"

    def pinned_pdf(self, document_id: str, sha256: str) -> str:
        """The PDF only if it still is the content ``sha256`` (409 ``pdf_changed`` otherwise):
        what a viewer loads to draw stored highlights, whose rectangles belong to that
        content."""
        signed = self.signed_query(document_id)
        return f"{self._pdf_path(document_id)}?sha256={sha256}{'&' + signed[1:] if signed else ''}"

    def text(self, document_id: str) -> str:
        """A web or text source's text (GET /v2/documents/{id}/text), signed like the PDF."""
        path = f"{self.base_url}/v2/documents/{quote(document_id, safe='')}/text"
        return f"{path}{self.signed_query(document_id)}"

    def _pdf_path(self, document_id: str) -> str:
        return f"{self.base_url}/v2/documents/{quote(document_id, safe='')}/pdf"
