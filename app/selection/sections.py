"""Headings, and the sections of a chunk under them. Pure.

A report's bullet or table row often does not name its subject: under "Regional Operations",
"• Net revenues of $3.8 billion ..., an increase of 12%" is about the regional operations only
because of the heading above it. So the lexical selector credits a heading's terms to the
sentences of its section, and never offers the heading itself: alone it shows the reader
nothing, yet a two-word heading that repeats the answer's words would outscore the bullets it
introduces.

A heading is a short line (at most ``MAX_HEADING_TERMS`` terms) that does not end like a sentence
or a clause (". ! ? ; ," and their CJK forms) and states no figure other than a date ("Fiscal 2023
Outlook" is a heading, "Page 4 of 15" and "December 31," are not). A run of such lines (a title,
"(In thousands)", a column caption) is one heading; a section runs from it to the next heading of
the chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from app.core.scripts import CJK

MAX_HEADING_TERMS = 10
_CLOSERS = "\"'\u201d\u2019\u00bb)]}\u300d\u300f\uff09\u3011 "
_ENDINGS = ".!?;,\u2026\u3002\uff01\uff1f\uff1b\uff0c"


@dataclass(frozen=True)
class Line:
    """What the section reading needs of a sentence: its text, terms and claimed figures."""

    text: str
    terms: set[str]
    figures: set[str]
    dates: set[str] = field(default_factory=set)


def is_heading(line: Line) -> bool:
    stripped = line.text.rstrip(_CLOSERS)
    # CJK text is read in character bigrams, about two to a word: a CJK title of ten words
    # ("勞動基準法第二十八條條文修正草案對照表") holds some twenty terms.
    most = 2 * MAX_HEADING_TERMS if CJK.search(line.text) else MAX_HEADING_TERMS
    return (
        bool(line.terms)
        and len(line.terms) <= most
        and not line.figures
        and not stripped.endswith(tuple(_ENDINGS))
    )


def sections(lines: Sequence[Line]) -> tuple[list[bool], list[set[str]]]:
    """For each line of a chunk: whether it is (part of) a heading, and the terms of the heading
    above it (empty for a heading, or before the chunk's first heading)."""
    headings = [is_heading(line) for line in lines]
    context: list[set[str]] = []
    current: set[str] = set()
    for i, (line, heading) in enumerate(zip(lines, headings, strict=True)):
        if heading:
            # A heading right after another extends it; after a body line it starts anew.
            current = (current if i and headings[i - 1] else set()) | line.terms
            context.append(set())
        else:
            context.append(current)
    return headings, context
