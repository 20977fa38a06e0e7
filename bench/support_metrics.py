"""Judging support, for bench/support_eval.py: table answers per row, and the negatives. Pure.

Built on ``selection_metrics`` (its tokens and its ``is_evidence``), and like it shares nothing
with the selector's own reading of text (no stemming, no row splitter, no value parsing).

**Key rows.** FinanceBench's answers that are computed from a statement (a ratio, a growth rate,
a balance) cite the whole statement page as evidence, so every row of it counted as evidence and
a highlight of fourteen rows scored as well as the row that holds the figure. The annotators'
``justification`` names what the answer was computed from: figures ("(37857 - 2388 - 8358) /
50171") and line items ("a single line item named: Total net sales"). A passage's *key rows* are
its lines that hold one of those figures or of the answer's own (not a year), or whose text
holds one of the named line items. A passage is *tabular* when at least half its lines end in a
figure and it has a key row; a question is a *metrics* question when one of its passages is
tabular, else a *text* question.

**Evidence for a tabular passage** is then a sentence that is evidence for the passage
(``is_evidence``; or, where the passage's words ran together, "Totalnetrevenue", the same on
letters and digits alone), holds one of its key rows (at least 60% of the row's tokens), and is
not a block: it holds at most ``BLOCK_FIGURES`` times as many figures as that row.

**Negatives.** For a question, a chunk of the same filing that holds none of the evidence: not on
an evidence page, under 10% of every passage's token 5-grams, none of the answer's figures (not
years), and no sentence the judge counts as evidence (the caller's ``holds_evidence``). *Near*:
the one sharing most words (four letters or more) with the question and the answer, the chunk a
retriever would wrongly cite (it may restate the answer in other words: a filing repeats
itself); *random*: ``RANDOM_NEGATIVES`` seeded draws among the rest.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from selection_metrics import HOLD_GRAM, ChunkText, Passage, _grams, is_evidence, tokens

BLOCK_FIGURES = 2
_LINE_ITEM = re.compile(r"line item named:\s*([^.]+)", re.IGNORECASE)
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_YEAR = re.compile(r"(?:19|20)\d\d")
KEY_SHARE = 0.6
NEGATIVE_HOLD = 0.10
RANDOM_NEGATIVES = 3


def _figures(text: str) -> set[str]:
    """Numbers of two digits or more, or percentages, without separators or trailing decimal
    zeros, no years."""
    out = set()
    for found in _NUMBER.finditer(text):
        number = found.group().replace(",", "")
        if "." in number:
            number = number.rstrip("0").rstrip(".")
        percent = text[found.end() : found.end() + 2].strip().startswith("%")
        if (len(number.replace(".", "")) >= 2 or percent) and not _YEAR.fullmatch(number):
            out.add(number)
    return out


def _ends_in_figure(line: str) -> bool:
    words = line.split()
    return bool(words) and bool(_NUMBER.search(words[-1]))


@dataclass(frozen=True)
class KeyRows:
    rows: tuple[tuple[str, ...], ...]  # each key row's tokens
    tabular: bool


def _rows(text: str) -> list[str]:
    """The passage's rows: FinanceBench's evidence text often has one table cell per line
    ("Gross profit", "2,725", "2,820"), so a line of figures joins the row its label began."""
    rows: list[str] = []
    for line in (line.strip() for line in text.splitlines()):
        if not line:
            continue
        if rows and not any(ch.isalpha() for ch in line):
            rows[-1] = f"{rows[-1]} {line}"
        else:
            rows.append(line)
    return rows


def key_rows(passage: Passage, answer: str, justification: str) -> KeyRows:
    lines = _rows(passage.text)
    wanted = _figures(answer) | _figures(justification)
    items = [m.strip().lower() for m in _LINE_ITEM.findall(justification)]
    keys = []
    for line in lines:
        line_figures = _figures(line)
        named = any(item and _squeezed(item) in _squeezed(line) for item in items)
        if (line_figures & wanted) or named:
            keys.append(tuple(tokens(line)))
    figured = sum(_ends_in_figure(line) for line in lines)
    tabular = bool(keys) and figured >= 0.5 * len(lines)
    return KeyRows(tuple(k for k in keys if k), tabular)


def _holds(sentence: Sequence[str], row: Sequence[str]) -> bool:
    have = Counter(sentence)
    need = Counter(row)
    if sum((have & need).values()) >= KEY_SHARE * len(row):
        return True
    # Words run together in the passage's row: compare letters and digits only.
    return _squeezed(" ".join(row)) in _squeezed(" ".join(sentence))


def _figure_count(words: Sequence[str]) -> int:
    return sum(w[0].isdigit() for w in words)


def _squeezed(text: str) -> str:
    """Letters and digits only, case-folded: FinanceBench's evidence text often runs a row's
    words together ("Totalnetrevenue", "Transaction-basedrevenue")."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def _squeezed_evidence(sentence: str, passage: Passage) -> bool:
    """``is_evidence`` for a passage whose words ran together: 60% of the sentence's 8-character
    pieces (letters and digits only) in the passage, and 60% of its figures."""
    mine, theirs = _squeezed(sentence), _squeezed(passage.text)
    grams = [mine[i : i + 8] for i in range(0, max(1, len(mine) - 7))]
    if len(mine) < 12 or not grams:
        return False
    figures = _figures(sentence)
    shown = sum(g in theirs for g in grams) / len(grams)
    figured = sum(f.replace(".", "") in theirs for f in figures) / len(figures) if figures else 1
    return shown >= KEY_SHARE and figured >= KEY_SHARE


def is_row_evidence(sentence: str, passage: Passage, keys: KeyRows) -> bool:
    """Evidence for a passage, judged per row when the passage is tabular (module docstring)."""
    if not (is_evidence(sentence, passage) or _squeezed_evidence(sentence, passage)):
        return False
    if not keys.tabular:
        return True
    words = tokens(sentence)
    for row in keys.rows:
        if _holds(words, row) and _figure_count(words) <= BLOCK_FIGURES * max(
            1, _figure_count(row)
        ):
            return True
    return False


def _held_share(passage: Passage, chunk_grams: set[tuple[str, ...]]) -> float:
    wanted = set(_grams(passage.words, HOLD_GRAM))
    return len(wanted & chunk_grams) / len(wanted) if wanted else 0.0


def _content(text: str) -> Counter[str]:
    return Counter(t for t in tokens(text) if len(t) >= 4 and not t[0].isdigit())


def negatives(
    passages: Sequence[Passage],
    answer: str,
    question: str,
    chunks: Sequence[ChunkText],
    rng: random.Random,
    draws: int = RANDOM_NEGATIVES,
    holds_evidence: Callable[[ChunkText], bool] = lambda chunk: False,
) -> dict[str, ChunkText]:
    """The question's negatives: ``{"near": chunk, "random1": chunk, ...}`` (fewer in a tiny
    filing)."""
    pages = {p.page for p in passages}
    answer_figures = _figures(answer)
    eligible = []
    for chunk in chunks:
        if any(chunk.page_start <= page <= chunk.page_end for page in pages):
            continue
        words = tokens(chunk.text)
        grams = set(_grams(words, HOLD_GRAM))
        if any(_held_share(p, grams) >= NEGATIVE_HOLD for p in passages):
            continue
        if answer_figures & _figures(chunk.text) or holds_evidence(chunk):
            continue
        eligible.append(chunk)
    if not eligible:
        return {}
    asked = _content(f"{question} {answer}")
    near = max(eligible, key=lambda c: (sum((asked & _content(c.text)).values()), c.id))
    out = {"near": near}
    rest = [c for c in eligible if c.id != near.id]
    for n, chunk in enumerate(rng.sample(rest, min(draws, len(rest))), 1):
        out[f"random{n}"] = chunk
    return out
