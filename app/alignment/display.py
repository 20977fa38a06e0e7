"""The display form of a highlight's text: what a chat UI quotes. Pure.

Stored text keeps what the PDF's text layer says, so that offsets into the chunk stay true:
"parlia- mentary" (a word hyphenated at a line end, the break turned into a space), "\ufb01nal"
(a ligature glyph), runs of spaces and line breaks. A reader quoting it wants "parliamentary",
"final", one space. The display form:

- joins a word hyphenated at a line end: a hyphen (or soft hyphen) after a letter, then white
  space that holds a line break or was one (a hyphen then one space, between lower-case letters),
  then a lower-case letter. A hyphen after a prefix that keeps it in English ("self-", "non-",
  "well-", "anti-", "ex-", "co-") stays, as "self-evident" would, and so does a suspended
  hyphen ("short- and long-term");
- writes ligatures as their letters (NFKC of the Alphabetic Presentation Forms only: NFKC of the
  whole text would also turn a Chinese "，" into ",");
- drops soft hyphens elsewhere, and collapses white space to one space, or to none between two
  CJK characters (CJK lines join without a space).
"""

from __future__ import annotations

import re
import unicodedata

from app.core.scripts import CJK_TEXT_RANGES

_KEPT_PREFIXES = frozenset({"self", "non", "well", "anti", "ex", "co", "cross", "half", "pre"})
_HYPHENS = "-\u2010\u00ad"
# A hyphenated word broken at a line end, as stored: "parlia-\nmentary" or "parlia- mentary".
# Tried from word starts only, the word taken whole ("\w++"): tried from inside words, a run of
# 20,000 letters cost 3 s (each start scanned the rest of the run).
_LINE_END_HYPHEN = re.compile(
    rf"(?<!\w)(\w++)[{_HYPHENS}](?:[ \t]*\r?\n[ \t]*|(?<=[a-z][{_HYPHENS}])[ \t]+)"
    # Not a suspended hyphen: "short- and long-term", "pre- or post-war".
    r"(?!(?:and|or|nor|to|und|oder|et|ou)\b)(?=[a-z])"
)
_LIGATURES = re.compile("[\ufb00-\ufb4f]")
# CJK characters and their punctuation ("，", "。", "「"): no space between them.
_SPACE_BETWEEN_CJK = re.compile(rf"(?<=[{CJK_TEXT_RANGES}])\s+(?=[{CJK_TEXT_RANGES}])")
_SPACES = re.compile(r"\s+")


def _join(match: re.Match[str]) -> str:
    word = match.group(1)
    return f"{word}-" if word.lower() in _KEPT_PREFIXES else word


def display_text(text: str) -> str:
    """``text`` as a reader would quote it (see the module docstring). Settled: the display form
    of a display form is itself."""
    shown = _once(text)
    # Dropping soft hyphens and collapsing space can leave a line-end hyphen the first pass did
    # not see ("a-\u00ad b"); every pass that changes anything shortens the text.
    while (again := _once(shown)) != shown:
        shown = again
    return shown


def _once(text: str) -> str:
    # Ligatures first: "e\ufb00-\n\ufb01ciency" joins as letters do.
    joined = _LIGATURES.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)
    joined = _LINE_END_HYPHEN.sub(_join, joined)
    joined = joined.replace("\u00ad", "")
    joined = _SPACE_BETWEEN_CJK.sub("", joined)
    return _SPACES.sub(" ", joined).strip()
