"""Where Latin-script sentences end: which "." "!" "?" "…" (with the quotes and brackets that
close after them) end a sentence. Pure; lazy and linear.

A terminator followed by white space is a candidate; the rules are pySBD's golden rules read as
decisions on the words around it (``app.selection.abbreviations`` holds the knowledge):

- a lower-case word after it never starts a sentence: "Yahoo! in", "'This is great.' she said",
  "(... as an engineer.) at the University", "Ltd. sont ici", "... well";
- an ellipsis in brackets is an elision ("Bohr [...] used"), and one of spaced dots (". . .")
  is a pause, unless a fourth dot ends the sentence before a capital ("a period . . . . Next");
  a word's full stop before such dots and a capital ends its sentence ("compounds. . . . The");
- a full stop after an abbreviation that stands before a name ("Mr.", "Mt.", "Hon.") or, for any
  abbreviation, before a number or a bracket ("p. 55", "No. 4") ends nothing; after other
  abbreviations a capital starts a sentence ("Jane and co. They should know");
- after an initialism ("U.S.", "a.m.") a capital starts a sentence only if it is a word that
  starts sentences ("the U.S. How about you?" against "the U.S. Government"), and so after the
  pronoun "I." ("you and I. Did you"); other single capitals are initials ("Jonas E. Smith"),
  and a single lower-case letter abbreviates ("z. B.", "u. Ä.");
- a day's number before a German month ("vom 12. Juni"), "N°." before a number, a list item's
  number (``app.selection.enumerations``) and a name ending in "!" ("Yahoo!") end nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from app.selection.abbreviations import (
    ABBREVIATIONS,
    EXCLAMATION_WORDS,
    NUMBER,
    ORDINAL_MONTHS,
    PREPOSITIVE,
    SENTENCE_STARTERS,
)
from app.selection.enumerations import Marker

# What closes after a terminator: quotes (German closes with “ and ‘), brackets, CJK brackets.
CLOSERS = "\"'”’“‘»)]}」』）】"
# Linear on any input: a match never starts inside a run of terminators (the run's first
# character was tried already, with the same outcome), and the possessive "++" and "*+" never give
# back what they took, which could not help (a terminator is not white space, », or a closer).
# French sets a (narrow) space before the closing guillemet: « oui. »
LATIN_END = re.compile(
    r"(?<![.!?…])([.!?…]++)(?:[ \u00a0\u202f]*+»)?[" + re.escape(CLOSERS) + r"]*+(?=\s|$)"
)
_WORD_CHAR = re.compile(r"[\w.]")
# The next word after white space, at most this long (what the rules read of it).
_NEXT_WORD = re.compile(r"\s*+(\S{1,40})")
# An initialism: letters, one or two at a time, with full stops ("U.S", "a.m", "LL.AA.II.RR").
_INITIALISM = re.compile(r"(?:[^\W\d_]{1,2}\.)+[^\W\d_]{1,2}")
_ELLIPSIS = ("...", "…")


def _word_before(text: str, dot: int) -> str:
    """The run of word characters and dots that ends at ``dot`` (or at a newline just before it),
    read backwards from ``dot``: costs the word's length, and the words of two candidates never
    overlap (white space follows each), so a text's checks read each character at most once."""
    end = dot - 1 if dot and text[dot - 1] == "\n" else dot
    start = end
    while start and _WORD_CHAR.match(text, start - 1):
        start -= 1
    return text[start:end]


def _bare(word: str) -> str:
    """The next word without the quotes and brackets that open before it."""
    return word.lstrip("\"'“‘„«([").rstrip(".,;:!?\"'”’»)]")


def _period_ends(text: str, dot: int, following: str) -> bool:
    """Does the full stop at ``dot``, with nothing closing after it, end its sentence before
    ``following`` (the next word, whose first character is not lower case)?"""
    if dot and text[dot - 1] == "°" and following[0].isdigit():
        return False  # "N°. 1026"
    word = _word_before(text, dot)
    lower = word.lower().strip(".")
    if not lower:
        return True
    if lower in PREPOSITIVE:
        return False
    if "." in lower and _INITIALISM.fullmatch(lower):
        return _bare(following) in SENTENCE_STARTERS
    if len(lower) == 1 and lower.isalpha():
        if dot >= 3 and text[dot - 2] == "-" and text[dot - 3].isalnum():
            return True  # the end of a form's name, not an initial: "on Form 10-Q. You can"
        return word == "I" and _bare(following) in SENTENCE_STARTERS
    if lower in ABBREVIATIONS or lower in NUMBER:
        if word.isupper() and _bare(following).isupper():
            return False  # a title in capitals: "ACTIVISION BLIZZARD, INC. AND SUBSIDIARIES"
        return not (following[0].isdigit() or following[0] in "([")
    if lower.isdigit() and len(lower) <= 2 and _bare(following) in ORDINAL_MONTHS:
        return False  # "vom 12. Juni"
    return True


class _Items:
    """A text's list items, read lazily as the candidates move forward through the text."""

    def __init__(self, found: Iterator[Marker]) -> None:
        self._items = found
        self._next: Marker | None = next(self._items, None)

    def is_number_dot(self, at: int) -> bool:
        while self._next is not None and self._next.end <= at:
            self._next = next(self._items, None)
        return self._next is not None and self._next.dot == at


def _dots_chain(text: str, dot: int) -> int:
    """The position after the last dot of a chain of dots separated by single spaces that starts
    at ``dot`` (". . . ."), and how far it reaches: each dot of a chain is read once."""
    end = dot + 1
    while text.startswith(" .", end):
        end += 2
    return end


def latin_ends(text: str, found: Iterator[Marker]) -> Iterator[int]:
    """Where sentences end, in order: the position after each ending terminator and what closes
    after it. ``found``: the text's list items (``enumerations.items``, which the caller reads
    too: one scan for both)."""
    numbers = _Items(found)
    skip_to = 0  # past a chain of spaced dots already decided
    plain_to = 0  # dots up to here run into a word: each is read as any other (not rescanned)
    for match in LATIN_END.finditer(text):
        start, end = match.start(), match.end()
        if start < skip_to:
            continue
        run = match.group(1)
        closing = text[start + len(run) : end]
        following = _NEXT_WORD.match(text, end)
        if following is None:
            yield end  # the text's end
            continue
        nxt = following.group(1)
        if run == "." and not closing and start >= plain_to and text.startswith(" .", start + 1):
            chain_end = _dots_chain(text, start)
            chain = _chain_cut(text, start, chain_end)
            if chain is _NOT_A_CHAIN:
                plain_to = chain_end
            else:
                skip_to = chain_end
                if chain is not None:
                    yield chain
                continue
        if nxt[0].islower():
            continue  # a sentence never starts in lower case
        if run in _ELLIPSIS and start and text[start - 1] in "[(" and closing[:1] in "])":
            continue  # "[...]": words left out of a quotation
        if run == "." and numbers.is_number_dot(start):
            continue
        if run == "." and not closing and not _period_ends(text, start, nxt):
            continue
        if run.endswith("!") and _word_before(text, start) + "!" in EXCLAMATION_WORDS:
            continue
        yield end


_NOT_A_CHAIN = -1


def _chain_cut(text: str, first: int, chain_end: int) -> int | None:
    """Where a chain of spaced dots ends a sentence, if it does. Read on from the chain's end:
    its closers, then the next word. A chain of three set off by spaces is a pause ("weakened
    . . . was", "is . . . I didn't"); of four, the last ends the sentence before a capital ("a
    period . . . . Next"); a word's own full stop before a chain ends the sentence before a
    capital ("compounds. . . . The"), the chain starting the next. ``_NOT_A_CHAIN`` when the
    dots run into a word (". .NET"): the first full stop is then read as any other."""
    after = chain_end
    while after < len(text) and text[after] in CLOSERS:
        after += 1
    if after < len(text) and not text[after].isspace():
        return _NOT_A_CHAIN
    following = _NEXT_WORD.match(text, after)
    if following is None:
        return after  # the text's end
    if not following.group(1)[0].isupper():
        return None
    dots = (chain_end - first + 1) // 2
    attached = first > 0 and not text[first - 1].isspace()
    if attached:
        return first + 1
    return after if dots >= 4 else None
