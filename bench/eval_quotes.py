"""Quotes for bench/locate_eval.py: ground truth from poppler, sentences, perturbations.

Words and their boxes come from ``pdftotext -bbox-layout -cropbox`` (never PyMuPDF), so the
locator is judged against an independent extractor.
"""

from __future__ import annotations

import html
import random
import re
import subprocess
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from app.alignment.text import normalize_text
from app.core.scripts import is_cjk

KINDS = ("clean", "edited", "elided", "cjk_compat", "repeated")
# Generated documents add "columns" and "table" (bench/gen_irs.py, bench/gen_cells.py).
# Not table cells: a few words from a shared vocabulary are no evidence of anything.
NEGATIVE_SOURCES = ("clean", "columns")
# Words of context each side of a repeated sentence in the chunk text it is quoted with.
CHUNK_CONTEXT = 80

_PAGE = re.compile(r'<page width="([\d.]+)" height="([\d.]+)"')
_WORD = re.compile(
    r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</word>'
)
_SENTENCE_END = re.compile(r"[.!?;\u3002\uff01\uff1f\uff1b][\"'\u201d\u2019)\]\u300d]*$")


@dataclass(frozen=True)
class Word:
    page: int
    text: str
    box: tuple[float, float, float, float]
    line: int  # global line number
    line_end: bool = False
    flow: int = 0  # global pdftotext flow number
    furniture: bool = False  # running header/footer or page number


@dataclass
class Layout:
    words: list[Word]
    lines: dict[int, tuple[int, tuple[float, float, float, float]]]  # line -> (page, box)
    flow_top: dict[int, float]  # flow -> y of its first line
    flow_bottom: dict[int, float]
    heights: dict[int, float]  # page -> height
    raw_skeleton: str  # content-stream order text (pdftotext -raw), for ambiguity checks


@dataclass
class Quote:
    doc: str
    kind: str  # clean | edited | elided | negative
    text: str
    words: list[Word] = field(default_factory=list)  # ground truth; empty for negatives
    perturbation: str = ""
    chunk: str = ""  # the cited chunk's text, for quotes whose text recurs in the document
    chunk_start: int = 0  # offset of the quote in ``chunk``


# --------------------------------------------------------------------------- ground truth


def _split_cjk(word: Word) -> list[Word]:
    """pdftotext keeps a CJK run as one "word"; quotes start and end mid-run, so split it."""
    if not any(is_cjk(c) for c in word.text):
        return [word]
    x0, y0, x1, y1 = word.box
    step = (x1 - x0) / len(word.text)
    return [
        replace(word, text=c, box=(x0 + i * step, y0, x0 + (i + 1) * step, y1))
        for i, c in enumerate(word.text)
    ]


def _pdftotext(pdf: Path, *options: str) -> str:
    command = ["pdftotext", *options, "-cropbox", str(pdf), "-"]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def _floats(raw: str) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = (float(v) for v in re.findall(r'="([\d.]+)"', raw)[:4])
    return x0, y0, x1, y1


def poppler_layout(pdf: Path) -> Layout:
    words: list[Word] = []
    layout = Layout(words, {}, {}, {}, {}, normalize_text(_pdftotext(pdf, "-raw")))
    page = line = flow = 0
    for raw in _pdftotext(pdf, "-bbox-layout").splitlines():
        if match := _PAGE.search(raw):
            page += 1
            layout.heights[page] = float(match.group(2))
        elif "<flow>" in raw:
            flow += 1
        elif "<line " in raw:
            line += 1
            box = _floats(raw)
            layout.lines[line] = (page, box)
            layout.flow_top.setdefault(flow, box[1])
            layout.flow_bottom[flow] = box[3]
            if words:
                words[-1] = replace(words[-1], line_end=True)
        elif match := _WORD.search(raw):
            box = tuple(float(v) for v in match.groups()[:4])
            word = Word(page, html.unescape(match.group(5)), box, line, flow=flow)  # type: ignore[arg-type]
            words.extend(_split_cjk(word))
    _mark_furniture(layout)
    return layout


def _mark_furniture(layout: Layout) -> None:
    """Running headers/footers and page numbers: lines in the top/bottom tenth of the page
    whose text, digits aside, recurs on three or more pages (or is only digits)."""
    text: dict[int, list[str]] = defaultdict(list)
    for word in layout.words:
        text[word.line].append(word.text)
    keys = {line: re.sub(r"\d", "", normalize_text(" ".join(t))) for line, t in text.items()}
    pages_with: dict[str, set[int]] = defaultdict(set)
    for line, key in keys.items():
        pages_with[key].add(layout.lines[line][0])
    furniture = set()
    for line, key in keys.items():
        page, (_, y0, _, y1) = layout.lines[line]
        height = layout.heights[page]
        edge = y1 < 0.1 * height or y0 > 0.9 * height
        if edge and (not key or len(pages_with[key]) >= 3):
            furniture.add(line)
    layout.words[:] = [replace(w, furniture=w.line in furniture) for w in layout.words]


def _flow_continues(layout: Layout, prev: Word, word: Word) -> bool:
    """May a sentence run from ``prev``'s line into ``word``'s line?

    Yes on the same line, down the same column, back up to the next column, or across pages;
    no sideways into the next cell of a table row (pdftotext's flows and even its lines jump
    between cells there), where the "sentence" would mix cells.
    """
    if prev.line == word.line or prev.page != word.page:
        return True
    _, (a_x0, a_y0, a_x1, a_y1) = layout.lines[prev.line]
    _, (b_x0, b_y0, b_x1, _) = layout.lines[word.line]
    below = b_y0 >= (a_y0 + a_y1) / 2  # OCR layers overlap consecutive lines a little
    if below and min(a_x1, b_x1) > max(a_x0, b_x0):
        return True
    if abs(b_y0 - a_y0) < (a_y1 - a_y0) / 2 and b_x0 >= a_x1 - 5:
        return True  # further along the same row
    if b_x0 < a_x1 - 5 or b_y0 >= a_y0:
        return False
    top, bottom = layout.flow_top[prev.flow], layout.flow_bottom[prev.flow]
    return b_y0 <= top - 20 or bottom - top > 0.4 * layout.heights[word.page]


def join_words(words: list[Word]) -> str:
    """Text as a reader would quote it: CJK unspaced, line-end hyphens joined, NFKC glyphs."""
    parts: list[str] = []
    for i, word in enumerate(words):
        text = word.text
        if parts:
            prev = words[i - 1]
            hyphen = prev.line_end and parts[-1].endswith("-") and text[:1].islower()
            if hyphen:
                parts[-1] = parts[-1][:-1]
            elif not (is_cjk(prev.text[-1]) or is_cjk(text[0])):
                parts.append(" ")
        parts.append(text)
    return unicodedata.normalize("NFKC", "".join(parts))


def sentences(layout: Layout, rng: random.Random) -> list[list[Word]]:
    found: list[list[Word]] = []
    current: list[Word] = []
    broken = False  # the current run did not start at a sentence start
    for word in layout.words:
        if word.furniture:
            continue
        if current and not _flow_continues(layout, current[-1], word):
            current, broken = [], True
        current.append(word)
        if not _SENTENCE_END.search(word.text):
            continue
        if not broken:
            _keep_sentence(current, rng, found)
        current, broken = [], False
    return found


def windows(layout: Layout, rng: random.Random, count: int) -> list[list[Word]]:
    """Random runs of consecutive words (sentence fragments), for documents with few whole
    sentences (tables, transcripts, short minutes)."""
    runs: list[list[Word]] = [[]]
    for word in layout.words:
        if word.furniture:
            continue
        if runs[-1] and not _flow_continues(layout, runs[-1][-1], word):
            runs.append([])
        runs[-1].append(word)
    found: list[list[Word]] = []
    for _ in range(count * 20):
        if len(found) >= count:
            break
        run = rng.choice(runs)
        cjk = bool(run) and sum(is_cjk(w.text[0]) for w in run) > len(run) / 2
        low, high = (15, 60) if cjk else (6, 30)
        if len(run) < low:
            continue
        size = rng.randint(low, min(high, len(run)))
        start = rng.randint(0, len(run) - size)
        _keep_sentence(run[start : start + size], rng, found)
    return found


def _keep_sentence(span: list[Word], rng: random.Random, found: list[list[Word]]) -> None:
    cjk = sum(is_cjk(w.text[0]) for w in span) > len(span) / 2
    low, high = (12, 90) if cjk else (6, 40)
    if len(span) > high:
        span = span[: rng.randint(low, high)]
    substantive = sum(1 for w in span if sum(c.isalpha() for c in w.text) >= 3)
    if len(span) >= low and (cjk or substantive >= 5):
        found.append(span)


# --------------------------------------------------------------------------- perturbations

_CURLY = str.maketrans({"'": "\u2019", '"': "\u201d"})


def perturb(words: list[Word], rng: random.Random, vocabulary: list[str]) -> tuple[str, str]:
    tokens = [w.text for w in words]
    cjk = sum(is_cjk(t[0]) for t in tokens) > len(tokens) / 2
    options = ["drop", "curly", "case", "change"] if not cjk else ["drop", "curly", "change"]
    kind = rng.choice(options)
    text = join_words(words)
    if kind == "curly":
        return f"\u201c{text.translate(_CURLY)}\u201d" if not cjk else f"\u300c{text}\u300d", kind
    if kind == "case":
        return rng.choice([text.lower(), text.upper(), text.capitalize()]), kind
    inner = [i for i in range(1, len(tokens) - 1) if any(c.isalnum() for c in tokens[i])]
    if not inner:
        return text, "none"
    i = rng.choice(inner)
    kept = list(words)
    if kind == "drop":
        del kept[i : i + (2 if cjk else 1)]
    else:
        replacement = rng.choice(vocabulary) if not cjk else "\u4e00"
        kept[i] = Word(words[i].page, replacement, words[i].box, words[i].line)
    return join_words(kept), kind


def elide(words: list[Word], rng: random.Random, unique: Any) -> str | None:
    cjk = sum(is_cjk(w.text[0]) for w in words) > len(words) / 2
    size = rng.randint(6, 10) if cjk else rng.randint(4, 6)
    if len(words) < 3 * size:
        return None
    head, tail = join_words(words[:size]), join_words(words[-size:])
    if not (unique(head) and unique(tail)):
        return None  # "first ... last" would fit more than one passage
    return head + rng.choice([" ... ", " \u2026 ", "\u2026"]) + tail


_CJK_SPACE = re.compile(r"(?<=[^\W_])\s+(?=[^\W_])")


def compat(text: str) -> str:
    """How an NFKC-normalising pipeline quotes CJK text: full-width forms as ASCII (NFKC),
    no space between CJK and digits or Latin ("第8 屆" -> "第8屆"), Hangul decomposed into
    jamo (NFD, as macOS file systems and some tokenisers hand it over)."""
    text = unicodedata.normalize("NFKC", text)
    text = _CJK_SPACE.sub(
        lambda m: "" if is_cjk(text[m.start() - 1]) or is_cjk(text[m.end()]) else m.group(), text
    )
    if any("\uac00" <= c <= "\ud7af" for c in text):
        text = unicodedata.normalize("NFD", text)
    return text


def repeated(
    layout: Layout, skeleton: str, rng: random.Random, count: int, doc: str
) -> list[Quote]:
    """Sentences whose text recurs in the document, each quoted with the chunk around the
    occurrence it was taken from (CHUNK_CONTEXT words each side) and its offset in it."""
    words = [w for w in layout.words if not w.furniture]
    position = {id(w): i for i, w in enumerate(words)}
    found = []
    for span in sentences(layout, rng):
        count_in = skeleton.count(normalize_text(join_words(span)))
        if 2 <= count_in <= 6:
            found.append(span)
    quotes = []
    for span in rng.sample(found, min(count, len(found))):
        first, last = position[id(span[0])], position[id(span[-1])] + 1
        before = join_words(words[max(0, first - CHUNK_CONTEXT) : first])
        after = join_words(words[last : last + CHUNK_CONTEXT])
        text = join_words(span)
        chunk = f"{before} {text} {after}".strip()
        start = len(before) + 1 if before else 0
        quotes.append(Quote(doc, "repeated", text, span, chunk=chunk, chunk_start=start))
    return quotes


def make_quotes(doc: str, layout: Layout, per_kind: int, seed: int) -> list[Quote]:
    rng = random.Random(f"{seed}:{doc}")
    words = [w for w in layout.words if not w.furniture]
    skeleton = normalize_text(join_words(layout.words))

    def unique(text: str) -> bool:
        key = normalize_text(text)
        return skeleton.count(key) == 1 and layout.raw_skeleton.count(key) <= 1

    pool = [s for s in sentences(layout, rng) if unique(join_words(s))]
    if len(pool) < 3 * per_kind:
        extra = windows(layout, rng, 3 * per_kind - len(pool))
        pool += [s for s in extra if unique(join_words(s))]
    vocabulary = sorted({w.text for w in words if w.text.isalpha() and len(w.text) > 3}) or ["word"]
    quotes: list[Quote] = []
    for kind in KINDS:
        if kind == "repeated":
            quotes.extend(repeated(layout, skeleton, rng, per_kind, doc))
            continue
        for sentence in rng.sample(pool, len(pool)):
            if sum(q.kind == kind for q in quotes) >= per_kind:
                break
            if kind == "clean":
                quotes.append(Quote(doc, kind, join_words(sentence), sentence))
            elif kind == "cjk_compat":
                if sum(is_cjk(w.text[0]) for w in sentence) > len(sentence) / 2:
                    quotes.append(Quote(doc, kind, compat(join_words(sentence)), sentence))
            elif kind == "edited":
                text, how = perturb(sentence, rng, vocabulary)
                quotes.append(Quote(doc, kind, text, sentence, how))
            elif (text := elide(sentence, rng, unique)) is not None:
                quotes.append(Quote(doc, kind, text, sentence))
    return quotes


def negatives(
    quotes_by_doc: dict[str, list[Quote]], skeletons: dict[str, str], count: int, seed: int
) -> None:
    rng = random.Random(f"{seed}:negatives")
    for doc, quotes in sorted(quotes_by_doc.items()):
        others = [
            q
            for d, qs in sorted(quotes_by_doc.items())
            if d != doc
            for q in qs
            if q.kind in NEGATIVE_SOURCES
        ]
        others = [q for q in others if normalize_text(q.text) not in skeletons[doc]]
        for q in rng.sample(others, min(count, len(others))):
            quotes.append(Quote(doc, "negative", q.text, perturbation=f"from {q.doc}"))


def corpus(
    pdfs: list[Path],
    made: dict[str, tuple[list[Word], list[Quote]]],
    per_kind: int,
    seed: int,
    negative_count: int,
) -> tuple[dict[str, list[Word]], dict[str, list[Quote]]]:
    """Words and quotes of each PDF: poppler's for the corpus, the drawn ones for the
    generated PDFs in ``made``; each document also gets negatives from the others."""
    layouts = {p.name: poppler_layout(p) for p in pdfs if p.name not in made}
    words_by_doc = {d: layout.words for d, layout in layouts.items()}
    quotes_by_doc = {
        d: make_quotes(d, layout, per_kind, seed) for d, layout in layouts.items() if layout.words
    }
    skeletons = {
        d: normalize_text(join_words(ws)) + "|" + layouts[d].raw_skeleton
        for d, ws in words_by_doc.items()
    }
    for name, (words, quotes) in made.items():
        words_by_doc[name], quotes_by_doc[name] = words, quotes
        skeletons[name] = normalize_text(join_words(words))
    negatives(quotes_by_doc, skeletons, negative_count, seed)
    return words_by_doc, quotes_by_doc
