"""Claims from citation markers: which span of the answer each citation marker supports. Pure.

A chat answer says "Revenue rose 8% [1]. Net income fell to $2.1 billion [2]." The frontend's
``citation_id`` is the label inside its marker ("1", "2"). A marker closes the sentence (or the
clause) before it: the text from the previous marker of the same sentence, or from the sentence's
start, up to the marker. A marker
right after a sentence's terminator ("... 8%.[1] Net ...") closes that sentence. Markers next to
each other ("[1][2]", "[1, 2]") make one claim of each of their labels. Text after a sentence's
last marker ("8% [1] as demand grew.") belongs to no claim: the marker closed what came before.

Recognised forms: ``[1]``, ``[1, 2]``, ``[1-3]`` (numeric ranges), ``[1][2]``, ``[^1]``
(Markdown footnotes), ``【1】``, ``<sup>1</sup>`` and ``<sup>1,2</sup>``; labels need not be
numbers ("[a]", "[doc-3]"). Only labels that name one of the request's citations count, so
"[sic]" or "[2019]" in prose is not a marker unless a citation is called that. A citation may also
name its own marker text (``explicit``: citation id -> the literal marker, e.g. "(Source 3)"),
for frontends with another convention; a citation id that is itself a marker ("[1]") is one.

Offsets are Python string indices (Unicode code points) into the answer; ``text`` is always
``answer[start:end]``.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from app.selection.sentences import split_sentences

# One marker; group 1 holds its label list. Bounded label lengths keep every form linear.
_FORMS = re.compile(
    r"\[\^?[ \t]*([^\[\]\n]{1,60}?)[ \t]*\]"
    r"|【[ \t]*([^【】\n]{1,60}?)[ \t]*】"
    r"|<sup>[ \t]*([^<>\n]{1,60}?)[ \t]*</sup>",
    re.IGNORECASE,
)
_LABEL_SEPARATORS = re.compile(r"[ \t]*[,;，、][ \t]*|[ \t]+")
_RANGE = re.compile(r"(\d{1,4})[ \t]*[-–—][ \t]*(\d{1,4})")
_MAX_RANGE = 50
# What may separate two markers of one group: nothing, or white space.
_BETWEEN_MARKERS = re.compile(r"[ \t]*")


@dataclass(frozen=True)
class Marker:
    start: int  # the marker's own text: answer[start:end]
    end: int
    labels: tuple[str, ...]  # citation ids it names, in order, no repeats


@dataclass(frozen=True)
class Claim:
    start: int
    end: int
    text: str  # answer[start:end]: the claim without its markers, trimmed


def _labels(inside: str) -> list[str]:
    labels: list[str] = []
    for part in _LABEL_SEPARATORS.split(inside.strip()):
        if not part:
            continue
        span = _RANGE.fullmatch(part)
        if span and 0 <= int(span[2]) - int(span[1]) <= _MAX_RANGE:
            labels += [str(n) for n in range(int(span[1]), int(span[2]) + 1)]
        else:
            labels.append(part.lstrip("^"))
    return labels


def find_markers(
    answer: str, citation_ids: Collection[str], explicit: Mapping[str, str] | None = None
) -> list[Marker]:
    """The answer's markers that name a citation, in order, adjacent ones merged into one."""
    known = set(citation_ids)
    found: list[Marker] = []
    for match in _FORMS.finditer(answer):
        inside = next(g for g in match.groups() if g is not None)
        labels = [label for label in _labels(inside) if label in known]
        # "[1, 2]" where only "1" is cited still marks 1; "[see p. 4]" marks nothing.
        if labels:
            found.append(Marker(match.start(), match.end(), tuple(dict.fromkeys(labels))))
    # A frontend that sends the whole marker as the citation id ("[1]") means that text. One
    # literal may mark several citations (two chunks behind one "(Source A)").
    literals: dict[str, list[str]] = {}
    for cid in sorted(known):
        if _FORMS.fullmatch(cid):
            literals.setdefault(cid, []).append(cid)
    for cid, literal in (explicit or {}).items():
        if literal and cid in known and cid not in literals.get(literal, []):
            literals.setdefault(literal, []).append(cid)
    taken = bytearray(len(answer))  # 1 where a marker found so far stands
    for marker in found:
        taken[marker.start : marker.end] = b"\x01" * (marker.end - marker.start)
    for literal, labels in literals.items():
        at = answer.find(literal)
        while at != -1:
            end = at + len(literal)
            if not any(taken[at:end]) and _stands_alone(answer, at, end):
                found.append(Marker(at, end, tuple(labels)))
                taken[at:end] = b"\x01" * len(literal)
            at = answer.find(literal, end if end > at else at + 1)
    return _merge_adjacent(answer, sorted(found, key=lambda m: m.start))


def _stands_alone(answer: str, start: int, end: int) -> bool:
    """A literal marker that begins or ends with a letter or digit is not part of a word or
    number: "1" marks "... 8% 1." but not the 1 of "18%"."""
    before = answer[start - 1] if start else " "
    after = answer[end] if end < len(answer) else " "
    return not (
        (answer[start].isalnum() and before.isalnum())
        or (answer[end - 1].isalnum() and after.isalnum())
    )


def _merge_adjacent(answer: str, markers: list[Marker]) -> list[Marker]:
    merged: list[Marker] = []
    for marker in markers:
        last = merged[-1] if merged else None
        if last and _BETWEEN_MARKERS.fullmatch(answer, last.end, marker.start):
            labels = tuple(dict.fromkeys(last.labels + marker.labels))
            merged[-1] = Marker(last.start, marker.end, labels)
        else:
            merged.append(marker)
    return merged


def _blanked(answer: str, markers: list[Marker]) -> str:
    """The answer with every marker replaced by spaces, offsets kept: the sentence splitter then
    sees "rose 8%   . Net" and "8%.    Net", and splits both after the period."""
    chars = list(answer)
    for marker in markers:
        chars[marker.start : marker.end] = " " * (marker.end - marker.start)
    return "".join(chars)


def _trimmed(answer: str, start: int, end: int) -> tuple[int, int]:
    while start < end and (answer[start].isspace() or answer[start] in ",;:"):
        start += 1
    while end > start and answer[end - 1].isspace():
        end -= 1
    return start, end


def claims_by_citation(
    answer: str,
    citation_ids: Collection[str],
    explicit: Mapping[str, str] | None = None,
    limit: int | None = None,
) -> dict[str, list[Claim]]:
    """Each citation id's claims in answer order (no repeats; the first ``limit``); a citation
    whose marker is not in the answer maps to an empty list (its caller falls back to the whole
    answer)."""
    claims: dict[str, list[Claim]] = {cid: [] for cid in citation_ids}
    markers = find_markers(answer, citation_ids, explicit)
    if not markers:
        return claims
    blank = _blanked(answer, markers)
    sentences = Sentences(blank)
    seen: dict[str, set[Claim]] = {cid: set() for cid in citation_ids}
    for i, marker in enumerate(markers):
        span = sentences.closed_by(marker)
        if span is None:
            continue
        start, end = span
        # The clause: after the previous marker if it stands in this sentence (markers are in
        # order, so no other can), and up to this marker when it stands inside the sentence.
        if i and markers[i - 1].start >= start:
            start = markers[i - 1].end
        end = min(end, marker.start)
        start, end = _trimmed(answer, start, end)
        if not any(ch.isalnum() for ch in blank[start:end]):
            continue
        claim = Claim(start, end, answer[start:end])
        for label in marker.labels:
            if claim not in seen[label] and (limit is None or len(claims[label]) < limit):
                seen[label].add(claim)
                claims[label].append(claim)
    return claims


class Sentences:
    """The answer's sentences (markers blanked), and which one each marker closes, in
    logarithmic time: an answer of 20,000 characters may hold thousands of markers."""

    def __init__(self, blank: str) -> None:
        split = split_sentences(blank)
        self.spans = [(s.start, s.end) for s in split]
        self.starts = [s.start for s in split]
        # Where each sentence's first letter or digit is: a marker at or before it stands
        # before anything of the sentence.
        self.first_words = [
            next(at for at, ch in enumerate(s.text, s.start) if ch.isalnum()) for s in split
        ]

    def closed_by(self, marker: Marker) -> tuple[int, int] | None:
        """The sentence the marker closes: the one it stands in, unless nothing of that
        sentence comes before it (then it closes the previous one), or the last one before
        it; None before the first sentence."""
        j = bisect_right(self.starts, marker.start) - 1
        if j < 0:
            return None
        start, end = self.spans[j]
        if marker.start < end and marker.start <= self.first_words[j]:
            return self.spans[j - 1] if j > 0 else None
        return start, end
