"""W3C Web Annotation selectors over a document's text, and URL text fragments. Pure; no I/O.

A highlight is a span ``text[start:end]`` of its document's text (GET /v2/documents/{id}/text).
``quote_selector`` describes it as a TextQuoteSelector (https://www.w3.org/TR/annotation-model/
#text-quote-selector): the exact text with a prefix and a suffix of ``CONTEXT`` characters,
widened until prefix + exact + suffix occurs once in the text, so ``resolve_quote`` finds the
span again without the offsets. Offsets are Unicode code points (Python string indices), as the
model's TextPositionSelector counts them.

``text_fragment`` is the same span as a URL text fragment (https://wicg.github.io/scroll-to-text-
fragment/): ``#:~:text=[prefix-,]start[,end][,-suffix]``. A browser matches each term inside one
block of the rendered page, on word boundaries and whitespace collapsed, so the terms are whole
words of one line of the text (a paragraph, a heading, an item, a table cell), with '-', '&',
',' and everything outside the unreserved URL characters percent-encoded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

CONTEXT = 32
# A sentence of at most this many words is one textStart; longer ones are its first and last
# FRAGMENT_WORDS words (shorter URLs, and robust to a word the page renders differently inside).
SHORT_SENTENCE_WORDS = 8
FRAGMENT_WORDS = 4
CONTEXT_WORDS = 3


@dataclass(frozen=True)
class TextQuote:
    exact: str
    prefix: str
    suffix: str


def _once(text: str, needle: str) -> bool:
    first = text.find(needle)
    return first >= 0 and text.find(needle, first + 1) < 0


def quote_selector(text: str, start: int, end: int, context: int = CONTEXT) -> TextQuote:
    """The quote of ``text[start:end]``, its prefix and suffix at least ``context`` characters
    (fewer at the text's ends) and doubled until the three together are unique in ``text``."""
    if not 0 <= start <= end <= len(text):
        raise ValueError(f"span {start}:{end} is outside a text of {len(text)} characters")
    exact = text[start:end]
    width = max(1, context)
    while True:
        prefix = text[max(0, start - width) : start]
        suffix = text[end : end + width]
        whole = start - width <= 0 and end + width >= len(text)
        if whole or _once(text, prefix + exact + suffix):
            return TextQuote(exact, prefix, suffix)
        width *= 2


def resolve_quote(text: str, quote: TextQuote) -> tuple[int, int] | None:
    """Where the quote is in ``text``: the first place prefix + exact + suffix occur, or None.
    A quote made by ``quote_selector`` from this text occurs exactly once."""
    found = text.find(quote.prefix + quote.exact + quote.suffix)
    if found < 0:
        return None
    start = found + len(quote.prefix)
    return start, start + len(quote.exact)


def encode_fragment_term(term: str) -> str:
    """A text directive's term: percent-encoded, '-' included (it marks a prefix or suffix)."""
    return quote(term, safe="").replace("-", "%2D")


# A browser finds each term within one block; a line end or a table cell's tab ends one here.
_BLOCK_END = re.compile(r"[\n\t]")


def _line_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    before = [m.end() for m in _BLOCK_END.finditer(text, max(0, start - 4096), start)]
    after = _BLOCK_END.search(text, end)
    return (before[-1] if before else max(0, start - 4096)), (after.start() if after else len(text))


def text_fragment(text: str, start: int, end: int) -> str | None:
    """``#:~:text=...`` for ``text[start:end]``; None when the span has no words."""
    lines = [line.split() for line in _BLOCK_END.split(text[start:end])]
    lines = [words for words in lines if words]
    if not lines:
        return None
    words = [w for line in lines for w in line]
    if len(lines) == 1 and len(words) <= SHORT_SENTENCE_WORDS:
        terms = [" ".join(words)]
    else:
        first = lines[0][:FRAGMENT_WORDS]
        last = lines[-1][-FRAGMENT_WORDS:]
        if len(lines) == 1:  # more words than both terms together: they do not overlap
            last = lines[0][-min(FRAGMENT_WORDS, len(lines[0]) - len(first)) :]
        terms = [" ".join(first), " ".join(last)]
    line_start, line_end = _line_bounds(text, start, end)
    before = text[line_start:start].split()[-CONTEXT_WORDS:]
    after = text[end:line_end].split()[:CONTEXT_WORDS]
    parts = [encode_fragment_term(t) for t in terms]
    if before:
        parts.insert(0, encode_fragment_term(" ".join(before)) + "-")
    if after:
        parts.append("-" + encode_fragment_term(" ".join(after)))
    return "#:~:text=" + ",".join(parts)
