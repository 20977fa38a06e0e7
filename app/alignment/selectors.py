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
# Scripts written without spaces: a "word" there is a whole line, so a run of them is cut after
# its clause punctuation too (still a word boundary), and terms are capped by characters.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(r"[^\s，、；：。！？]+[，、；：。！？]*|[，、；：。！？]+")
_NO_SPACE = re.compile(f"[{_CJK}]")
TERM_CHARS = 48
# (words per term, context words, context from the neighbouring block): tried in order until
# the browser's first match (``find_fragment``) is the span.
_WIDENINGS = ((FRAGMENT_WORDS, CONTEXT_WORDS, False), (FRAGMENT_WORDS, CONTEXT_WORDS, True),
              (8, 6, True), (16, 12, True))  # fmt: skip

Span = tuple[int, int]


def _tokens(text: str, lo: int, hi: int) -> list[Span]:
    """Words of ``text[lo:hi]`` (one block), a CJK run split after its clause punctuation."""
    out: list[Span] = []
    for word in re.finditer(r"\S+", text[lo:hi]):
        piece = word.group()
        if not _NO_SPACE.search(piece):
            out.append((lo + word.start(), lo + word.end()))
            continue
        out += [
            (lo + word.start() + m.start(), lo + word.start() + m.end())
            for m in _TOKEN.finditer(piece)
        ]
    return out


def _take(tokens: list[Span], count: int, from_end: bool, limit: int = TERM_CHARS) -> list[Span]:
    """At most ``count`` tokens from one end, within ``limit`` characters (always one)."""
    order = tokens[::-1] if from_end else tokens
    taken: list[Span] = []
    for token in order[:count]:
        lo, hi = (token[0], taken[0][1]) if from_end and taken else (order[0][0], token[1])
        if taken and hi - lo > limit:
            break
        taken.append(token)
    return sorted(taken)


def _term(text: str, tokens: list[Span]) -> str:
    return " ".join(text[tokens[0][0] : tokens[-1][1]].split())


def _blocks(text: str, start: int, end: int) -> list[Span]:
    bounds = [start] + [m.start() for m in _BLOCK_END.finditer(text, start, end)] + [end]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def _context(text: str, at: int, count: int, after: bool, cross: bool) -> str | None:
    """Up to ``count`` words beside ``at`` within its block or, ``cross``, the next block that
    has words (a browser skips block boundaries between a prefix and the start)."""
    pos = at
    while 0 <= pos <= len(text):
        if after:
            stop = _BLOCK_END.search(text, pos)
            lo, hi = pos, stop.start() if stop else len(text)
        else:
            stops = [m.end() for m in _BLOCK_END.finditer(text, max(0, pos - 4096), pos)]
            lo, hi = (stops[-1] if stops else max(0, pos - 4096)), pos
        tokens = _tokens(text, lo, hi)
        if tokens:
            taken = _take(tokens, count, from_end=not after)
            return _term(text, taken) if taken[-1][1] - taken[0][0] <= 2 * TERM_CHARS else None
        if not cross or (hi >= len(text) if after else lo <= 0):
            return None
        pos = hi + 1 if after else lo - 1
    return None


def _pattern(term: str) -> re.Pattern[str]:
    # Case-insensitive, whitespace collapsed within the block, on word boundaries (a script
    # without spaces has no boundaries to check here).
    body = r"[ \u00a0]+".join(re.escape(w) for w in term.split())
    head = r"(?<!\w)" if re.match(r"\w", term) and not _NO_SPACE.match(term) else ""
    tail = r"(?!\w)" if re.search(r"\w$", term) and not _NO_SPACE.search(term[-1]) else ""
    return re.compile(head + body + tail, re.IGNORECASE)


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def find_fragment(
    text: str,
    start: str,
    end: str | None = None,
    prefix: str | None = None,
    suffix: str | None = None,
) -> Span | None:
    """Where a browser's text directive lands in ``text``, as the scroll-to-text-fragment spec
    finds it: the first textStart (right after a prefix, across whitespace and block ends), then
    the first textEnd after it that the suffix follows. Stricter than a browser where unsure."""
    first, last = _pattern(start), _pattern(end) if end else None
    before, after = _pattern(prefix) if prefix else None, _pattern(suffix) if suffix else None
    pos = 0
    while True:
        if before is not None:
            lead = before.search(text, pos)
            if lead is None:
                return None
            pos = lead.start() + 1
            head = first.match(text, _skip_space(text, lead.end()))
            if head is None:
                continue
        else:
            head = first.search(text, pos)
            if head is None:
                return None
            pos = head.start() + 1
        tails = last.finditer(text, head.end()) if last is not None else iter([head])
        for tail in tails:
            if after is None or after.match(text, _skip_space(text, tail.end())):
                return head.start(), tail.end()
        if last is not None:
            return None


def _attempt(
    text: str, start: int, end: int, words: int, context: int, cross: bool
) -> list[str | None]:
    lines = [tokens for lo, hi in _blocks(text, start, end) if (tokens := _tokens(text, lo, hi))]
    flat = [t for line in lines for t in line]
    if (
        len(lines) == 1
        and len(flat) <= max(SHORT_SENTENCE_WORDS, words)
        and flat[-1][1] - flat[0][0] <= TERM_CHARS
    ):
        terms: list[str | None] = [_term(text, flat), None]
    else:
        first = _take(lines[0], words, from_end=False)
        rest = lines[-1] if len(lines) > 1 else lines[0][len(first) :]
        terms = [
            _term(text, first),
            _term(text, _take(rest, words, from_end=True)) if rest else None,
        ]
    return [
        *terms,
        _context(text, start, context, after=False, cross=cross),
        _context(text, end, context, after=True, cross=cross),
    ]


def text_fragment(text: str, start: int, end: int) -> str | None:
    """``#:~:text=...`` for ``text[start:end]``; None when the span has no words, or no
    fragment this module makes lands on it first (the same words in the same context earlier)."""
    tokens = [t for lo, hi in _blocks(text, start, end) for t in _tokens(text, lo, hi)]
    if not tokens:
        return None
    target = (tokens[0][0], tokens[-1][1])
    for words, context, cross in _WIDENINGS:
        first, last, before, after = _attempt(text, start, end, words, context, cross)
        assert first is not None
        if find_fragment(text, first, last, before, after) != target:
            continue
        parts = [encode_fragment_term(t) for t in (first, last) if t]
        if before:
            parts.insert(0, encode_fragment_term(before) + "-")
        if after:
            parts.append("-" + encode_fragment_term(after))
        return "#:~:text=" + ",".join(parts)
    return None
