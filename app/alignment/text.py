"""Text normalisation shared by the PDF index and the quotes, with a map back to the source.

Matching happens on a "skeleton" of the text: only letters and digits survive, case-folded,
NFKC-compatible (ligatures such as U+FB01 become "fi", full-width forms become ASCII) and
without diacritics; "&" is spelt "and", as quoters and PDFs swap them. Whitespace, hyphens,
dashes, quotes and other punctuation are dropped entirely rather than unified, because PDFs
disagree with quoters about all of them: a line-end hyphen ("align-\\nment") and a compound
hyphen ("self-evident") both vanish, missing or extra inter-word spaces (common with tight
kerning or letter-spaced headings) stop mattering, and CJK text, which has no spaces anyway,
joins across line breaks without special cases.

Hangul is kept as jamo (NFD): a syllable block and the same syllable spelled as two or three
conjoining jamo (how macOS and some tokenisers hand Korean over) must compare equal, and the
per-character folding here never sees the neighbours needed to compose jamo into a block.
"""

from __future__ import annotations

import re
import unicodedata
from array import array
from dataclasses import dataclass
from functools import lru_cache
from itertools import compress

from app.core.scripts import CJK

# "...", ". . .", "…" (NFKC turns U+2026 into "..."), and bracketed "[...]" elisions.
# Linear on any input: no match is tried from inside a run of white space (one from the run's
# first character was, with the same outcome: a match cannot end inside such a run), and "\s*+"
# never gives back white space, which could only meet a "." or "…" it cannot be. Without that,
# 40k spaces took half a minute.
_ELLIPSIS = re.compile(
    r"(?!(?<=\s)\s)"
    r"(?:[\[(]?\s*+(?:\.\s*+){3,}[\])]?|[\[(]?\s*+[\u2026\u22ef\u2025]\s*+[\])]?)"
)


_HANGUL = re.compile("[\uac00-\ud7af]")
# What PDF text extraction can yield that no database stores or no JSON encodes: C0 controls but
# tab and newline (a 10-K's checkbox glyph comes out of PyMuPDF as U+0000), and lone surrogates.
_UNSTORABLE = re.compile("[\x00-\x08\x0b-\x1f]|[\ud800-\udfff]")


def clean_extracted(text: str) -> str:
    """Text from a PDF made storable: controls become spaces, lone surrogates U+FFFD. One code
    point for one, so offsets into the extracted text stay offsets into the cleaned text."""
    return _UNSTORABLE.sub(lambda m: " " if m.group() < "\ud800" else "\ufffd", text)


# Symbols read as a word: "R&D", "Procter & Gamble" and "Terms and Conditions" are quoted
# either way round, and a dropped "&" left "and" on the page unmatched (a short quote such
# as "Profit & Loss" was not found at all). Spelt out, they compare equal, and the origin map
# sends all three letters back to the one symbol on the page.
_SPOKEN = {"&": "and"}


@lru_cache(maxsize=65536)
def normalize_char(char: str) -> str:
    """The skeleton of one source character: "" for separators/punctuation, 1+ chars otherwise."""
    if char.isascii():
        # Fast path: the overwhelming majority of PDF text.
        return char.lower() if char.isalnum() else _SPOKEN.get(char, "")
    folded = unicodedata.normalize("NFKC", char).casefold()
    if folded in _SPOKEN:  # full-width and small forms of the symbols
        return _SPOKEN[folded]
    decomposed = unicodedata.normalize("NFKD", folded)
    kept = "".join(c for c in decomposed if c.isalnum() and not unicodedata.combining(c))
    composed = unicodedata.normalize("NFKC", kept)
    return unicodedata.normalize("NFD", composed) if _HANGUL.search(composed) else composed


@dataclass(frozen=True, slots=True)
class Normalized:
    """A skeleton string and, for each of its characters, the index of the source character."""

    text: str
    origin: array[int]

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """Source half-open range covering skeleton characters ``[start, end)`` (non-empty)."""
        return self.origin[start], self.origin[end - 1] + 1

    def source_runs(self, start: int, end: int) -> list[tuple[int, int]]:
        """Source ranges of skeleton characters ``[start, end)``: one here, since the skeleton
        follows the source; a reordered reading (``readings.py``) may need several."""
        return [self.source_span(start, end)]


# Code points the translation tables below keep, as normalize_char's cache does: text made of
# every code point there is must not grow them past a few MB.
_TABLE_SIZE = 65536


class _Skeletons(dict[int, str]):
    """``str.translate`` table: code point -> ``normalize_char`` of it, filled on first sight."""

    def __missing__(self, code: int) -> str:
        skeleton = normalize_char(chr(code))
        if len(self) < _TABLE_SIZE:
            self[code] = skeleton
        return skeleton


class _Widths(dict[int, str]):
    """``str.translate`` table: code point -> chr(length of its skeleton)."""

    def __missing__(self, code: int) -> str:
        width = chr(len(_SKELETONS[code]))
        if len(self) < _TABLE_SIZE:
            self[code] = width
        return width


_SKELETONS = _Skeletons()
_WIDTHS = _Widths()
_WIDE = re.compile("[\x02-\U0010ffff]")


def normalize(source: str) -> Normalized:
    # Two translations in C instead of a Python step per character (a book holds 650,000):
    # the skeleton itself, and each character's skeleton length, which gives the origin map.
    # Sizes above 1 (ligatures, some compatibility forms) are rare and repeated one by one.
    text = source.translate(_SKELETONS)
    sizes = source.translate(_WIDTHS)
    widths = sizes.encode("latin-1")
    origin: array[int] = array("i")
    last = 0
    for wide in _WIDE.finditer(sizes):
        at = wide.start()
        origin.extend(compress(range(last, at), widths[last:at]))
        origin.extend([at] * ord(wide.group()))
        last = at + 1
    origin.extend(compress(range(last, len(source)), widths[last:]))
    return Normalized(text, origin)


def normalize_text(source: str) -> str:
    """Skeleton only (no offset map), for quotes."""
    return source.translate(_SKELETONS)


def split_elision(quote: str) -> list[str]:
    """Split a quote at ellipses into its non-empty skeleton parts ("a ... b" -> ["a", "b"])."""
    pieces = (normalize_text(piece) for piece in _ELLIPSIS.split(quote))
    return [piece for piece in pieces if piece]


def information(skeleton: str) -> float:
    """Rough "Latin-letter equivalents" in a skeleton: one CJK character says about as much as
    three letters, so length thresholds must weigh them up."""
    cjk = len(CJK.findall(skeleton))
    return (len(skeleton) - cjk) + 3.0 * cjk
