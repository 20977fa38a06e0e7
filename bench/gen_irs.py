"""Generated IRS-style pages for bench/locate_eval.py: columns, bullets, sidebars, repeats.

The shared corpus has no multi-column government instructions, so these are drawn with PyMuPDF.
The drawing order is what makes them hard: producers of such forms often write a page row by
row across its columns, or put a sidebar's lines between a column's, so the PDF's own text
order interleaves what a reader reads as one sentence. Ground truth is where each word was
drawn, not any extractor's reading of it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from pathlib import Path

import pymupdf
from eval_quotes import Quote, Word, join_words

FONT = "helv"
SIZE = 9.5
LEADING = 11.5
PAGE_W, PAGE_H = 612.0, 792.0
MARGIN = 54.0
GUTTER = 18.0

_VOCABULARY = (
    "amount basis benefit business child claim contribution credit deduction dependent "
    "distribution earned election employer estimate exclusion expense filing foreign income "
    "interest itemized liability payment penalty pension property qualified refund rental "
    "report resident retirement return schedule section spouse statement taxable taxpayer "
    "threshold treaty wages withholding adjusted allowable annual applicable attach certain "
    "complete eligible enter figure include limited listed maximum nonresident ordinary "
    "provide required separate total under unless whether within without during before after"
).split()
_FORMS = ("Form 1040", "Schedule 1", "Form 8812", "line 8z", "Form W-2", "line 27", "Pub. 501")


def sentence(rng: random.Random) -> list[str]:
    """A unique, instruction-like word sequence (the locator does not care about grammar)."""
    words = [rng.choice(_VOCABULARY) for _ in range(rng.randint(9, 28))]
    if rng.random() < 0.5:
        at = rng.randrange(1, len(words))
        words[at:at] = rng.choice(_FORMS).split()
    if rng.random() < 0.3:
        words.insert(rng.randrange(1, len(words)), f"${rng.randint(2, 900) * 50:,}")
    words[0] = words[0].capitalize()
    words[-1] += rng.choice(".....;")
    return words


def width(text: str) -> float:
    return float(pymupdf.get_text_length(text, fontname=FONT, fontsize=SIZE))


@dataclass
class Frame:
    page: int
    x: float
    top: float
    width: float
    bottom: float
    column: int  # drawing-order key of the region (sidebars share their column's)


@dataclass
class Drawing:
    """Lines to draw, the truth about every word, and the sentences as lists of word indices."""

    lines: list[tuple[int, int, float, float, list[int]]] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)
    sentences: list[list[int]] = field(default_factory=list)
    extras: list[tuple[int, float, float, str]] = field(default_factory=list)  # bullets

    def flow(self, paragraphs: list[tuple[list[list[str]], bool]], frames: list[Frame]) -> int:
        """Typeset paragraphs (sentences, bulleted?) into frames in order; returns how many
        paragraphs fitted."""
        at, y = 0, frames[0].top + SIZE
        for number, (sentences, bullet) in enumerate(paragraphs):
            indent = 12.0 if bullet else 0.0
            tokens = [(w, len(self.sentences) + i) for i, s in enumerate(sentences) for w in s]
            self.sentences.extend([] for _ in sentences)
            first = True
            while tokens:
                frame = frames[at]
                if y > frame.bottom:
                    at += 1
                    if at == len(frames):
                        return number
                    y = frames[at].top + SIZE
                    continue
                room, line = frame.width - indent, []
                while tokens and width(" ".join(w for w, _ in [*line, tokens[0]])) <= room:
                    line.append(tokens.pop(0))
                if bullet and first:
                    self.extras.append((frame.page, frame.x, y, "\u2022"))
                self.add_line(frame, frame.x + indent, y, line)
                first, y = False, y + LEADING
            y += LEADING * 0.6
        return len(paragraphs)

    def add_line(self, frame: Frame, x: float, y: float, line: list[tuple[str, int]]) -> None:
        indices = []
        line_no = len(self.lines) + 1
        for i, (text, sid) in enumerate(line):
            x0 = x + (width(" ".join(w for w, _ in line[:i]) + " ") if i else 0.0)
            box = (x0, y - 0.9 * SIZE, x0 + width(text), y + 0.2 * SIZE)
            end = i == len(line) - 1
            self.words.append(Word(frame.page, text, box, line_no, line_end=end))
            self.sentences[sid].append(len(self.words) - 1)
            indices.append(len(self.words) - 1)
        self.lines.append((frame.page, frame.column, x, y, indices))


def render(drawing: Drawing, pages: int, modes: list[str], path: Path) -> None:
    """Write the PDF; ``modes[page]`` is "rows" (row by row across the page) or "flow"
    (column by column, a sidebar's lines where it sits in its column)."""
    doc = pymupdf.open()
    for _ in range(pages):
        doc.new_page(width=PAGE_W, height=PAGE_H)
    for page, x, y, text in drawing.extras:  # bullets first, as many producers do
        doc[page - 1].insert_text((x, y), text, fontname=FONT, fontsize=SIZE)
    for page_no in range(1, pages + 1):
        lines = [line for line in drawing.lines if line[0] == page_no]
        if modes[page_no - 1] == "rows":
            lines.sort(key=lambda line: (round(line[3]), line[2]))
        else:
            lines.sort(key=lambda line: (line[1], line[3]))
        for _, _, x, y, indices in lines:
            text = " ".join(drawing.words[i].text for i in indices)
            doc[page_no - 1].insert_text((x, y), text, fontname=FONT, fontsize=SIZE)
    doc.save(path)
    doc.close()


def _columns(page: int, count: int, top: float, bottom: float) -> list[Frame]:
    col_w = (PAGE_W - 2 * MARGIN - (count - 1) * GUTTER) / count
    return [Frame(page, MARGIN + i * (col_w + GUTTER), top, col_w, bottom, i) for i in range(count)]


def _paragraphs(rng: random.Random, count: int) -> list[tuple[list[list[str]], bool]]:
    return [
        ([sentence(rng) for _ in range(rng.randint(1, 4))], rng.random() < 0.3)
        for _ in range(count)
    ]


def make_columns(path: Path, seed: int, pages: int = 6) -> tuple[list[Word], list[Quote]]:
    """Two- and three-column pages with bullets, a boxed sidebar inside a column, a heading
    across the page; every other page drawn row by row."""
    rng = random.Random(f"{seed}:irs")
    drawing = Drawing()
    main: list[Frame] = []
    sidebars: list[Frame] = []
    for page in range(1, pages + 1):
        heading = Frame(page, MARGIN, MARGIN, PAGE_W - 2 * MARGIN, MARGIN + LEADING, -1)
        drawing.flow([([sentence(rng)[:8]], False)], [heading])
        columns = _columns(page, 3 - page % 3 // 2, MARGIN + 3 * LEADING, PAGE_H - MARGIN)
        host = columns[rng.randrange(len(columns))]
        top = rng.uniform(host.top + 80, host.bottom - 200)
        box = Frame(page, host.x + 8, top + 6, host.width - 16, top + 6 + 8 * LEADING, host.column)
        sidebars.append(box)
        for column in columns:
            if column is host:
                main.append(replace(column, bottom=top - LEADING))
                main.append(replace(column, top=box.bottom + 2 * LEADING))
            else:
                main.append(column)
    drawing.flow(_paragraphs(rng, 200), main)
    for box in sidebars:
        drawing.flow([([sentence(rng) for _ in range(3)], False)], [box])
    modes = ["flow" if page % 3 == 2 else "rows" for page in range(pages)]
    render(drawing, pages, modes, path)
    with pymupdf.open(path) as doc:
        for box in sidebars:
            rect = pymupdf.Rect(box.x - 4, box.top - 4 - SIZE, box.x + box.width + 4, box.bottom)
            doc[box.page - 1].draw_rect(rect, color=(0, 0, 0), width=0.5)
        doc.saveIncr()
    return drawing.words, _quotes(path.name, "columns", drawing, rng)


def _quotes(doc: str, kind: str, drawing: Drawing, rng: random.Random) -> list[Quote]:
    quotes = []
    for indices in drawing.sentences:
        words = [drawing.words[i] for i in indices]
        if len(words) >= 6:
            quotes.append(Quote(doc, kind, join_words(words), words))
    rng.shuffle(quotes)
    return quotes


def make_repeated(path: Path, seed: int, pages: int = 6) -> tuple[list[Word], list[Quote]]:
    """Single-column instructions in which a few boilerplate sentences recur word for word,
    on the same page and on nearby pages; each quote carries its chunk (the paragraph before,
    its own, and the one after) and its offset in it, as the service has them."""
    rng = random.Random(f"{seed}:repeated")
    boilerplate = [sentence(rng) for _ in range(4)]
    paragraphs: list[tuple[list[list[str]], bool]] = []
    for _ in range(90):
        sentences = [sentence(rng) for _ in range(rng.randint(2, 3))]
        if rng.random() < 0.7:
            sentences.insert(rng.randrange(len(sentences) + 1), list(rng.choice(boilerplate)))
        paragraphs.append((sentences, False))
    drawing = Drawing()
    frames = [
        Frame(p, MARGIN, MARGIN, PAGE_W - 2 * MARGIN, PAGE_H - MARGIN, 0)
        for p in range(1, pages + 1)
    ]
    fitted = drawing.flow(paragraphs, frames)
    render(drawing, pages, ["flow"] * pages, path)
    texts = [join_words([drawing.words[i] for i in s]) for s in drawing.sentences]
    owner = [p for p, (ss, _) in enumerate(paragraphs[:fitted]) for _ in ss]
    quotes = []
    for sid, text in enumerate(texts[: len(owner)]):
        if texts.count(text) < 2 or not drawing.sentences[sid]:
            continue
        para = owner[sid]
        members = [s for s in range(len(owner)) if abs(owner[s] - para) <= 1]
        before = " ".join(texts[s] for s in members if s < sid)
        after = " ".join(texts[s] for s in members if s > sid)
        chunk = " ".join(part for part in (before, text, after) if part)
        start = len(before) + 1 if before else 0
        words = [drawing.words[i] for i in drawing.sentences[sid]]
        quotes.append(Quote(path.name, "repeated", text, words, chunk=chunk, chunk_start=start))
    rng.shuffle(quotes)
    return drawing.words, quotes
