"""Table rows inside a piece of chunk text, so a row can be chosen alone. Pure.

A financial statement's text layer, once chunked, often runs rows together: "Net income $ 4,756
$ 4,822 Depreciation and amortization 856 788 Stock-based compensation 1,440 1,069" (one line),
or one row per line with no full stop anywhere. Split as prose, the whole table is one sentence,
and a highlight of the row that holds the figure lights fourteen rows. A reader, and a model,
want the row.

A row ends where its figures end: after a run of two figure cells or more ("4,756", "(1,501)",
"$", "—", "13.6 %") comes a label that starts with a capital letter, or after one or more, a new
line (one figure before a capital is as often prose: "We opened 25 New York stores"). A label
ending in a colon before a capital ("Cash flows from operating activities: Net income ...") is a
row of its own. Only a *tabular* piece is cut: one with at least ``MIN_ROWS`` rows ending in
figures, so prose that states a figure ("rose 12% to $3.8 billion, driven by ...") is never
split.
"""

from __future__ import annotations

import re

from app.selection.numbers import MONTHS

# A figure cell: signs, currency, parentheses for negatives, thousands separators, a percent or
# "x" (times); a dash standing for zero; a lone currency sign or percent sign beside its figure.
_CELL = re.compile(
    r"[(\[]?[-–—−]?[$€£¥]?[-–—−]?\d[\d,]*(?:\.\d+)?\s?%?[)\]]?[%x*]?[,;]?"
    r"|[-–—−]{1,2}|[$€£¥]|%|\(\d{1,2}\)"
)
_TOKEN = re.compile(r"\S+")
# What every alternative of _CELL holds one of.
_CELL_CHAR = re.compile(r"[\d\-–—−$€£¥%]")
_SPACE = re.compile(r"\s")
# Units and connectives that follow a figure inside a sentence, never a row's label.
_NOT_A_LABEL = frozenset(
    "million millions billion billions thousand thousands percent per cent bps basis times "
    "and or to from of in at as compared versus vs".split()
)
MIN_ROWS = 2


def _is_cell(token: str) -> bool:
    return bool(_CELL.fullmatch(token))


def _starts_label(token: str) -> bool:
    word = token.lstrip("(\"'“‘•")
    return bool(word) and word[0].isupper() and word.lower().strip(",.;:") not in _NOT_A_LABEL


def _two_cells_possible(text: str, start: int, end: int) -> bool:
    """Do two tokens of ``text[start:end]`` hold a character every cell holds (a digit, a dash,
    a currency or percent sign)? A table has two rows ending in cells; a sentence with one
    year, or none, cannot. Three scans, each on from the last: linear."""
    first = _CELL_CHAR.search(text, start, end)
    if first is None:
        return False
    space = _SPACE.search(text, first.end(), end)  # where the first one's token ends
    return space is not None and _CELL_CHAR.search(text, space.end(), end) is not None


def row_cuts(text: str, start: int, end: int) -> list[int]:
    """Where the rows of ``text[start:end]`` begin after the first, when it is tabular (see the
    module docstring); empty for prose."""
    if not _two_cells_possible(text, start, end):
        return []  # prose (most pieces): no two rows can end in cells
    cells = list(map(_CELL.fullmatch, text[start:end].split()))  # in C: split() is _TOKEN's
    if len(cells) - cells.count(None) < MIN_ROWS:
        return []  # each row ends in a cell of its own: fewer cells, fewer rows
    tokens = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text, start, end)]
    cuts: list[int] = []
    row_ends = 0
    row: list[str] = []  # the tokens of the row so far
    has_cell = False  # kept as the row grows: scanning it at every line would be quadratic
    cell = False
    for i, (at, _, token) in enumerate(tokens):
        ended_on_cell = cell  # a row is one only if its last token is a cell: skip the rest
        cell = _is_cell(token)
        if i and not cell:
            prev_end, prev = tokens[i - 1][1], tokens[i - 1][2]
            if (
                ended_on_cell
                and _is_row(row)
                and ("\n" in text[prev_end:at] or (_starts_label(token) and _run_of_cells(row)))
                and not _MONTH.fullmatch(token.strip(",."))
            ):
                # A run of figures just ended a labelled row: the next row starts here.
                cuts.append(at)
                row_ends += 1
                row, has_cell = [], False
            elif (
                (prev.endswith(":") or "\n" in text[prev_end:at])
                and _starts_label(token)
                and not has_cell
            ):
                # "Cash flows from operating activities:", a caption on its own line: a heading
                # row (a label wrapped onto the next line goes on in lower case).
                cuts.append(at)
                row = []
        row.append(token)
        has_cell = has_cell or cell
    row_ends += _is_row(row)
    return cuts if row_ends >= MIN_ROWS else []


_YEAR = re.compile(r"(?:19|20)\d\d")
# "20 November 2025": a date runs on, it does not end a row.
_MONTH = re.compile(rf"(?:{MONTHS})", re.IGNORECASE)


def _run_of_cells(tokens: list[str]) -> bool:
    """Do the row's tokens end in two figure cells or more? A row that ends mid-line needs them:
    one figure before a capitalised word is prose as often as a table ("We opened 25 New York
    stores", "Docker [29], Containerd [30]", "(Yao et al., 2022; Xi et al., 2023)"), while a
    statement's rows run two periods or more ("$ 4,756 $ 4,822"). At a line break one is
    enough: a one-column table keeps its rows apart there."""
    return len(tokens) >= 2 and _is_cell(tokens[-1]) and _is_cell(tokens[-2])


def _is_row(tokens: list[str]) -> bool:
    """A label, then figures: two cells or more, or one that is not a year ("55 Verizon 2022
    Annual Report" is a page number and a title, not two rows)."""
    run: list[str] = []
    for token in reversed(tokens):
        if not _is_cell(token):
            break
        run.append(token)
    labelled = len(run) < len(tokens)
    figures = [t.strip(",;") for t in run if any(ch.isdigit() for ch in t)]
    return (
        labelled
        and bool(run)
        and (len(run) >= 2 or not _YEAR.fullmatch(figures[0] if figures else "0000"))
    )


def split_rows(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``text[start:end]`` as its rows (one piece when it is not tabular)."""
    cuts = row_cuts(text, start, end)
    bounds = [start, *cuts, end]
    return [(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if a < b]
