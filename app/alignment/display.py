"""The display form of a highlight's text: what a chat UI quotes. Pure.

Stored text keeps what the PDF's text layer says, so that offsets into the chunk stay true:
"parlia- mentary" (a word hyphenated at a line end, the break turned into a space), "\ufb01nal"
(a ligature glyph), runs of spaces and line breaks. A reader quoting it wants "parliamentary",
"final", one space. The display form:

- joins a word hyphenated at a line end: a hyphen (or soft hyphen) after a letter, then white
  space that holds a line break or was one (a hyphen then one space, between lower-case letters),
  then a lower-case letter, unless the evidence says the hyphen is a compound's own
  ("year-\\nover-year" must not read "yearover-year"). In order: a suspended hyphen ("short-
  and long-term") and one after digits stay; the context (the chunk) writing the joined word
  joins it, writing the pair with a hyphen inside a line keeps it; a prefix that keeps its
  hyphen in English ("self-", "non-", "well-") keeps it unless the dictionary knows the joined
  word ("ex-\\npected" is "expected", "self-\\nevident" stays); a break inside a longer
  compound ("year-\\nover-year", "year-over-\\nyear") keeps it, unless the dictionary knows the
  joined word; a dictionary that knows both halves and not the joined word ("long", "term", no
  "longterm") keeps it; anything else joins, as most line-end hyphens are the typesetter's;
- writes ligatures as their letters (NFKC of the Alphabetic Presentation Forms only: NFKC of the
  whole text would also turn a Chinese "，" into ",");
- drops soft hyphens elsewhere, and collapses white space to one space, or to none between two
  CJK characters (CJK lines join without a space).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Container
from dataclasses import dataclass
from functools import lru_cache

from app.core.scripts import CJK_TEXT_RANGES

_KEPT_PREFIXES = frozenset({"self", "non", "well", "anti", "ex", "co", "cross", "half", "pre"})
# Prefixes no word list has as words, which keep their hyphen where the joined word is not one
# ("multi-year", "cyber-attacks"; but "multi-\nple" is "multiple").
_BOUND_PREFIXES = frozenset({"multi", "cyber", "neuro", "socio"})
_HYPHENS = "-\u2010\u00ad"
# A hyphenated word broken at a line end, as stored: "parlia-\nmentary" or "parlia- mentary".
# Tried from word starts only, the word taken whole ("\w++"): tried from inside words, a run of
# 20,000 letters cost 3 s (each start scanned the rest of the run).
_LINE_END_HYPHEN = re.compile(
    rf"(?<!\w)(\w++)[{_HYPHENS}](?:[ \t]*\r?\n[ \t]*|(?<=[a-z][{_HYPHENS}])[ \t]+)"
    # Not a suspended hyphen: "short- and long-term", "pre- or post-war".
    r"(?!(?:and|or|nor|to|und|oder|et|ou)\b)(?=[a-z])"
)
# The word after the break, and whether a hyphen and a letter follow it ("over-year").
_CONTINUATION = re.compile(r"(\w+)([-\u2010]\w)?")
# A word or a compound written inside a line: "year-over-year", "revenue". A hyphen before
# white space (a line-end break) ends the token.
_TOKEN = re.compile(r"\w+(?:[-\u2010]\w+)*")
_LIGATURES = re.compile("[\ufb00-\ufb4f]")
# CJK characters and their punctuation ("，", "。", "「"): no space between them.
_SPACE_BETWEEN_CJK = re.compile(rf"(?<=[{CJK_TEXT_RANGES}])\s+(?=[{CJK_TEXT_RANGES}])")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Context:
    """What a text around the highlight says about its line-end hyphens: its words and the pairs
    it hyphenates inside a line, lower-case. A piece of a word broken at a line end is neither."""

    words: frozenset[str]
    pairs: frozenset[tuple[str, str]]


@lru_cache(maxsize=64)  # one chunk's text serves each of its highlights
def context_of(text: str) -> Context:
    # Lower-cased before it is read: offsets into the lower-case text index that text ("İ"
    # lower-cases to two characters).
    text = _LIGATURES.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text).lower()
    words: set[str] = set()
    pairs: set[tuple[str, str]] = set()
    for match in _TOKEN.finditer(text):
        parts = match.group().replace("\u2010", "-").split("-")
        pairs.update(zip(parts, parts[1:], strict=False))
        start, end = match.span()
        before = text[max(0, start - 64) : start].rstrip()[-1:]  # a window: O(1) per word
        if before and before in _HYPHENS and text[start - 1].isspace():
            parts = parts[1:]  # the second piece of a word broken at a line end
        after = text[end : end + 1]
        if after and after in _HYPHENS:
            parts = parts[:-1]  # the first piece
        words.update(parts)
    return Context(frozenset(words), frozenset(pairs))


_NO_CONTEXT = Context(frozenset(), frozenset())


def display_text(text: str, context: str = "", known: Container[str] = frozenset()) -> str:
    """``text`` as a reader would quote it (see the module docstring). ``context``: the text
    around it (its chunk), whose other spellings of a broken pair decide first; ``known``: a
    dictionary's lower-case words. Settled: the display form of a display form is itself."""

    def join(match: re.Match[str]) -> str:
        # The context is read only for a text that has a line-end hyphen (most have none).
        seen = context_of(context) if context else _NO_CONTEXT
        word = match.group(1)
        return f"{word}-" if _keeps_hyphen(match, seen, known) else word

    shown = _once(text, join)
    # Dropping soft hyphens and collapsing space can leave a line-end hyphen the first pass did
    # not see ("a-\u00ad b"); every pass that changes anything shortens the text.
    while (again := _once(shown, join)) != shown:
        shown = again
    return shown


def _keeps_hyphen(match: re.Match[str], seen: Context, known: Container[str]) -> bool:
    word = match.group(1).lower()
    if not word.isalpha():  # "2023-\nend" is no word "2023end"
        return True
    after = _CONTINUATION.match(match.string, match.end())
    if after is None:  # the pattern saw a letter there
        return word in _KEPT_PREFIXES
    rest = after.group(1).lower()
    joined = word + rest
    if joined in seen.words:
        return False
    if (word, rest) in seen.pairs:
        return True
    if word in _KEPT_PREFIXES:  # "self-\nevident" stays; "ex-\npected" is "expected"
        return joined not in known
    start = match.start()
    compound = after.group(2) or (
        start > 1 and match.string[start - 1] in "-\u2010" and match.string[start - 2].isalnum()
    )
    if compound:  # "year-\nover-year" or "year-over-\nyear": a compound's middle
        return joined not in known
    halves = (word in known or word in _BOUND_PREFIXES) and rest in known
    return halves and joined not in known


def _once(text: str, join: Callable[[re.Match[str]], str]) -> str:
    # Ligatures first: "e\ufb00-\n\ufb01ciency" joins as letters do.
    joined = _LIGATURES.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)
    joined = _LINE_END_HYPHEN.sub(join, joined)
    joined = joined.replace("\u00ad", "")
    joined = _SPACE_BETWEEN_CJK.sub("", joined)
    return _SPACES.sub(" ", joined).strip()
