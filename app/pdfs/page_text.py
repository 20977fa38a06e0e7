"""What of a page's line pieces a chunk reads, and in which order around the body.

Repeated page furniture (running headers and footers, page numbers: ``alignment.furniture``,
the lines the locator already knows for placement) is left out of chunk text: a sentence that
crosses a page break then reads on from the page before into the next, with no "委 134" or
"Page 6 of 40" in its middle. Furniture is only what recurs in the page's top or bottom band on
several pages, or up a side margin (a stamp printed on every page); a line printed once there (a
page's only heading, a stamp) stays.

The first page's title is kept when a running header repeats it: there it is set larger than on
the pages after (it is the document's title, not a header).

The outermost block of the top or bottom band, when it stands clear of the rest (half a line
or more of space between), is read first or last on its page, wherever the PDF drew it: PyMuPDF
puts a stamp drawn last at the top of the page between the page's last sentence and the next
page's first. Only there is furniture left out: a 10-K statement's title, column heads and first
rows also recur near the top of several pages, under the running header, and run on into the
table (its years are no page numbers either: a bare number is furniture only when it counts
with the pages). Likewise a band line whose numbers change from page to page is furniture only
when it reads as a page label ("Page 3 of 9", "- 3 -", "第 3 頁", "委 134", "F-3": besides the
numbers, page words or one letter, the number counting with the pages), is a long running
header with its page number, or a short one whose one number, first or last, steps with the
pages ("PIRACY 27"); chapter headings atop the pages where chapters start and a deck's
"Results (1/3)" to "(3/3)" are the text's own.

Also here: a printed line PyMuPDF made two lines of (a run-in heading and its text) joined
back into one (``joined_lines``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from statistics import median

from app.alignment.furniture import BAND, MIN_PAGES, furniture_key
from app.alignment.index import DocumentIndex
from app.alignment.layout import SPLIT_GAP, Segment
from app.alignment.text import normalize_text

# A first-page line taller than its repeats by more than this share is the title, not a header.
TITLE_GROWTH = 0.2
# A band piece this many of its line heights clear of the body is read before or after it
# (lines of a paragraph or a table lie closer: 0.1-0.3; a running header sits further off).
CLEARANCE = 0.5
# Pieces within this share of the page width from its left or right edge are in the side
# margin (body text starts further in: 54 points of 612 is 0.09) ...
SIDE_BAND = 0.08
# ... and are furniture when their text, numbers aside, recurs there on MIN_PAGES pages and
# holds at least this many letters (a statement's right-hand column of figures is no stamp).
MIN_SIDE_LETTERS = 6
# A piece at least this many line heights wide is a line of prose (a column's narrowest prose
# lines hold some 30 characters); table figures are narrower.
PROSE_WIDTH = 8.0
# A run-in heading is at least this many line heights wide; a bullet or an enumerator before
# its item's text is narrower (the list stays rows of marker and text).
RUN_IN_WIDTH = 3.0
# A footnote mark: at most this many characters, at most this share of its line's height.
MARK_CHARS = 3
MARK_HEIGHT = 0.75

# A band line whose numbers change is furniture also when it holds this many letters or more:
# a running header with its page number ("12 FREE CULTURE", "54321 Federal Register / Vol.
# 85 ..."); a heading recurring there is shorter ("Chapter 3", "Results (2/3)").
RUNNING_HEADER_LETTERS = 10
# A short band line whose one number steps with the pages is a running header only when its
# characters are at most this share taller than the body's (a heading is set larger).
HEADER_GROWTH = 0.1
_DIGITS = re.compile(r"\d+")
# What a page label says besides its numbers, in skeleton form (letters only, case-folded):
# "Page 3 of 9", "p. 3", "Seite 3 von 9", "página 3 de 9", "page 3 sur 9", "第 3 頁".
_PAGE_WORDS = re.compile(r"(?:page|pages|pg|p|seite|von|pagina|página|of|de|sur|頁|页|第)*")


def _height(index: DocumentIndex, start: int, end: int) -> float:
    tops = [index.boxes[4 * i + 1] for i in range(start, end) if not index.chars[i].isspace()]
    bottoms = [index.boxes[4 * i + 3] for i in range(start, end) if not index.chars[i].isspace()]
    return max(bottoms) - min(tops) if tops else 0.0


def _page_labels(index: DocumentIndex) -> set[tuple[int, int]]:
    """The furniture lines whose numbers vary that are page labels: their text without the
    digits is empty or page words ("Page 3 of 9", "- 3 -", "第 3 頁", "委 134") and their first
    number counts with the pages (its value less the page's number is the same on several
    pages). Other lines whose numbers vary are text that happens to recur in a band: a
    statement's "2023" column head, "Chapter 1" to "Chapter 4" atop their pages, a deck's
    slide titles "Results (1/3)" to "(3/3)"."""
    offsets: dict[tuple[str, bool, int], list[tuple[int, int]]] = defaultdict(list)
    for line in index.furniture:
        key = furniture_key(line.skeleton)
        first = _DIGITS.search(line.skeleton)
        if first is None or len(first.group()) > 4 or not _is_page_label(key):
            continue
        offsets[(key, line.top, int(first.group()) - line.page)].append((line.start, line.end))
    return {span for spans in offsets.values() if len(spans) >= MIN_PAGES for span in spans}


def _is_page_label(key: str) -> bool:
    rest = key.replace("#", "")
    # One letter alone is a page label's prefix: "委 134" in a Taiwanese bill, "F-3" in a
    # 10-K's financial statements, "A-2" in an appendix.
    one_letter = len(rest) == 1 and rest.isalpha()
    return "#" in key and (one_letter or _PAGE_WORDS.fullmatch(rest) is not None)


def _char_height(index: DocumentIndex, start: int, end: int) -> float:
    heights = [
        index.boxes[4 * i + 3] - index.boxes[4 * i + 1]
        for i in range(start, end)
        if not index.chars[i].isspace()
    ]
    return median(heights) if heights else 0.0


def _body_height(index: DocumentIndex) -> float:
    """The median character height of the document's text (a sample of some 20,000 characters:
    the body's type size, which most characters are set in)."""
    step = max(1, len(index.chars) // 20_000)
    heights = [
        index.boxes[4 * i + 3] - index.boxes[4 * i + 1]
        for i in range(0, len(index.chars), step)
        if not index.chars[i].isspace()
    ]
    return median(heights) if heights else 0.0


def _running_numbers(index: DocumentIndex) -> set[tuple[int, int]]:
    """The furniture lines of a short running header with its page number ("PIRACY 27", "12
    FREE CULTURE"): one number, first or last on the line, that steps with the pages at one
    stride over all the key's lines (value = stride x page + offset, stride 1 in a whole book,
    8 in every eighth page of it). A chapter's heading steps irregularly ("Chapter 2" on page
    9, "Chapter 3" on page 30); a deck's "Results (2/3)" holds two numbers; a heading one to a
    page ("Week 3", "Question 3") is set larger than the body."""
    body = _body_height(index)
    lines: dict[str, list[tuple[int, int, int, int]]] = defaultdict(list)
    for line in index.furniture:
        # Set larger than the body's text, a numbered line is a heading ("Week 3", "Question
        # 3" atop each slide), whatever its numbers do; running headers are set no larger.
        if _char_height(index, line.start, line.end) > (1 + HEADER_GROWTH) * body:
            continue
        # The printed line, not the skeleton, which runs "(1/3)" together into one number.
        printed = index.chars[line.start : line.end].strip()
        numbers = _DIGITS.findall(printed)
        at_edge = printed[:1].isdigit() or printed[-1:].isdigit()
        if len(numbers) == 1 and at_edge and len(numbers[0]) <= 4:
            key = furniture_key(line.skeleton)
            lines[key].append((line.page, int(numbers[0]), line.start, line.end))
    found: set[tuple[int, int]] = set()
    for seen in lines.values():
        seen.sort()
        if len(seen) < MIN_PAGES or len({page for page, *_ in seen}) < len(seen):
            continue
        steps = {(b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(seen, seen[1:], strict=False)}
        if len(steps) == 1 and (stride := steps.pop()) >= 1 and stride.is_integer():
            found.update((start, end) for *_, start, end in seen)
    return found


def _varying(index: DocumentIndex) -> set[str]:
    """The furniture keys whose lines differ in their digits (a running header repeats its
    digits: "Form 10-K 2023" on every page)."""
    skeletons: dict[str, set[str]] = defaultdict(set)
    for line in index.furniture:
        skeletons[furniture_key(line.skeleton)].add(line.skeleton)
    return {key for key, seen in skeletons.items() if len(seen) > 1}


def furniture_ranges(index: DocumentIndex) -> list[tuple[int, int]]:
    """Source character ranges of the furniture lines that may be left out of chunk text
    (where they stand clear of the body: ``bands``), sorted."""
    heights: dict[str, list[float]] = defaultdict(list)
    for line in index.furniture:
        if line.page != 1:
            heights[furniture_key(line.skeleton)].append(_height(index, line.start, line.end))
    page_labels = _page_labels(index) | _running_numbers(index)
    varying = _varying(index)
    ranges: list[tuple[int, int]] = []
    for line in index.furniture:
        key = furniture_key(line.skeleton)
        numbered = line.skeleton.isdigit() or key in varying
        if (
            numbered
            and (line.start, line.end) not in page_labels
            and sum(c.isalpha() for c in key) < RUNNING_HEADER_LETTERS
        ):
            continue  # numbers that do not count pages: the text's own (a heading, a year)
        if line.page == 1:
            others = heights.get(key)
            height = _height(index, line.start, line.end)
            if others and height > (1 + TITLE_GROWTH) * median(others):
                continue  # the title, which later pages repeat smaller as a running header
        ranges.append((line.start, line.end))
    return sorted(ranges)


def side_furniture(index: DocumentIndex, pages: list[list[Segment]]) -> list[tuple[int, int]]:
    """Source ranges of the pieces (``pages``: each page's) in a side margin whose text recurs
    there on several pages: a stamp printed up the margin of every page ("jbell on DSKJLSW7X2PROD
    with PROPOSALS" in the Federal Register), which PyMuPDF reads in the middle of a sentence.
    The locator has no need of these (a quote never carries them across a page break)."""
    found: dict[str, list[Segment]] = defaultdict(list)
    seen: dict[str, set[int]] = defaultdict(set)
    for number, pieces in enumerate(pages, start=1):
        width = index.text_frame_size(number)[0]
        for piece in pieces:
            if piece.x1 <= SIDE_BAND * width or piece.x0 >= (1 - SIDE_BAND) * width:
                skeleton = normalize_text(index.chars[piece.start : piece.end])
                if sum(char.isalpha() for char in skeleton) >= MIN_SIDE_LETTERS:
                    key = furniture_key(skeleton)
                    found[key].append(piece)
                    seen[key].add(number)
    return [
        (piece.start, piece.end)
        for key, pieces in found.items()
        if len(seen[key]) >= MIN_PAGES
        for piece in pieces
    ]


def without_furniture(pieces: list[Segment], ranges: list[tuple[int, int]]) -> list[Segment]:
    """``pieces`` less those inside a furniture line (``furniture_ranges``)."""
    if not ranges:
        return pieces
    from bisect import bisect_right

    starts = [start for start, _ in ranges]
    kept: list[Segment] = []
    for piece in pieces:
        at = bisect_right(starts, piece.start) - 1
        if at >= 0 and piece.end <= ranges[at][1]:
            continue
        kept.append(piece)
    return kept


def _bottom_cut(pieces: list[Segment], band: float) -> float | None:
    """The top of the lowest block of pieces in the bottom band (at or below ``band``) that
    stands clear of all the pieces above it; None when there is none. The outermost block
    only: a 10-K's statement heads ("For the Years Ended December 31,") recur near the top of
    several pages too, but under the running header, and run on into the table."""
    for piece in sorted((p for p in pieces if p.y0 >= band), key=lambda p: -p.y0):
        above = [p.y1 for p in pieces if p.y0 < piece.y0]
        if not above or piece.y0 - max(above) >= CLEARANCE * piece.height:
            return piece.y0
    return None


def bands(
    pieces: list[Segment], page_height: float
) -> tuple[list[Segment], list[Segment], list[Segment]]:
    """``pieces`` as (those in the top band clear of the rest, the body, those in the bottom
    band clear of the rest), each in its own order: a reader reads the first before the body
    and the last after it, wherever the PDF drew them."""
    if len(pieces) < 2:
        return pieces, [], []  # a lone line (a page number on an empty page) stands clear
    # The top band is the bottom band of the page turned upside down.
    flipped = [Segment(p.start, p.end, p.x0, -p.y1, p.x1, -p.y0) for p in pieces]
    top = _bottom_cut(flipped, -BAND * page_height)
    bottom = _bottom_cut(pieces, (1 - BAND) * page_height)
    first = [p for p in pieces if top is not None and -p.y1 >= top]
    last = [p for p in pieces if bottom is not None and p.y0 >= bottom]
    if len(first) + len(last) >= len(pieces):
        return pieces, [], []  # all of the page is in its bands: a page of furniture only
    moved = {id(p) for p in (*first, *last)}
    return first, [p for p in pieces if id(p) not in moved], last


def full_line(pieces: list[Segment], last: Segment) -> bool:
    """Whether ``last`` ends at the right edge of its column (the pieces it shares its x-span
    with), within about a character: the text wraps on."""
    right = max(p.x1 for p in pieces if p.x0 < last.x1 and p.x1 > last.x0)
    return last.x1 >= right - 1.5 * last.height


def same_row(a: Segment, b: Segment) -> bool:
    return min(a.y1, b.y1) - max(a.y0, b.y0) > 0.5 * min(a.height, b.height)


def joined_lines(index: DocumentIndex, pieces: list[Segment]) -> list[Segment]:
    """``pieces`` with the two parts of one printed line joined where PyMuPDF made two lines of
    it: a run-in heading set in another font and a line of prose after it ("General Terms" +
    "Design, Experimentation, Measurement, Perfor-"). Within one extracted line
    ``layout.segments`` cuts only at wider gaps than this one, so such a line reads the same
    however the PDF drew it. A table's row has narrow figures, or more cells, or wider gaps."""
    joined: list[Segment] = []
    for row in rows(pieces):
        if len(row) == 2 and (line := _with_mark(index, *row)) is not None:
            row = [line]
        elif len(row) == 2:
            left, right = row
            height = min(left.height, right.height)
            if (
                0 <= right.x0 - left.x1 < SPLIT_GAP * height
                and left.width >= RUN_IN_WIDTH * left.height  # not a bullet or "(a)"
                and right.width >= PROSE_WIDTH * right.height
                and left.end <= right.start
                and not index.chars[left.end : right.start].strip()
            ):
                row = [
                    Segment(
                        left.start,
                        right.end,
                        left.x0,
                        min(left.y0, right.y0),
                        right.x1,
                        max(left.y1, right.y1),
                    )
                ]
        joined.extend(row)
    return joined


def _with_mark(index: DocumentIndex, first: Segment, second: Segment) -> Segment | None:
    """A line and a footnote mark raised in it ("... to the Copyright Act³ to create"), which
    PyMuPDF reads as a line of its own, as one line: read as a row of two cells, the line made
    a table with the heading above it, and the heading ran into the line's sentence."""
    longer = first.end - first.start >= second.end - second.start
    line, mark = (first, second) if longer else (second, first)
    if (
        mark.end - mark.start > MARK_CHARS
        or mark.height > MARK_HEIGHT * line.height
        or (mark.y0 + mark.y1) / 2 >= (line.y0 + line.y1) / 2  # not raised
        or not line.x0 <= mark.x0 <= line.x1 + SPLIT_GAP * line.height
        or index.chars[min(line.end, mark.end) : max(line.start, mark.start)].strip()
    ):
        return None
    return Segment(
        min(line.start, mark.start),
        max(line.end, mark.end),
        line.x0,
        min(line.y0, mark.y0),
        max(line.x1, mark.x1),
        line.y1,
    )


def rows(pieces: list[Segment]) -> Iterator[list[Segment]]:
    """Consecutive pieces on one baseline band: a line, or the cells of a table row."""
    row: list[Segment] = []
    for piece in pieces:
        if row and not same_row(row[-1], piece):
            yield row
            row = []
        row.append(piece)
    if row:
        yield row
