"""Cases and the judge of ``chunkers_eval.py``, independent of the service's code.

A case is one sentence of one chunk *as the chunker wrote it*, drawn at random among the
chunk's sentences of 6 to 120 words (a CJK character counts as a word; a longer run is a block
with no sentence end in it, a table read as one line, not a sentence). pySBD
(``language="en"``, ``clean=False``) cuts them; it ends a sentence at every line break, which
would make most sentences of a PDF's hard-wrapped text single lines, so it reads a copy of the
chunk's text with its line breaks as spaces (the same offsets), but for a blank line before
anything other than a lower-case word or CJK text (a heading's end, a paragraph's), and the
sentence is cut from the chunk's own text, its line breaks and all. It is ``prose`` when it
has 8 words or more, ends in . ! ? (or a CJK full stop; closing quotes and brackets after it
allowed) and fewer than 40% of its words hold a digit; ``other`` otherwise (table rows,
headings, lists).

The judge reads poppler's words (``pdftotext -bbox -cropbox``; a CJK run split into its
characters) whose box centre lies inside a returned rectangle of the same page (1 pt of
tolerance), and scores their tokens against the sentence's by F1 over token counts. Both sides
are normalised alike: NFKC, casefold, hyphens inside or at the end of a line's word joined
("com- pile" and "com-\\npile" are "compile"; "long-term" is "longterm"), punctuation dropped,
CJK compared character by character. ``hit``: F1 >= 0.8; ``fragment``: something lit, 0.3 <= F1
< 0.8 (a part of the sentence, or another sentence with it); ``wrong_place``: something lit, F1
< 0.3; ``not_lit``: no rectangle. Recall (the share of the sentence's tokens lit) is kept
beside F1: a sentence pySBD cut short ("... at a redemption price equal to the greater of",
cut before "(i)") is lit whole by a service that finds its sentence, a fragment by F1.
"""

from __future__ import annotations

import html
import random
import re
import subprocess
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pysbd

MIN_WORDS, MAX_WORDS, PROSE_WORDS = 6, 120, 8
MAX_SENTENCE_CHARS = 4_000  # the batch's longest question
HIT, FRAGMENT = 0.8, 0.3
VERDICTS = ("hit", "fragment", "wrong_place", "not_lit")
_CJK_CLASS = (
    "\u2e80-\u2fff\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
)
_CJK = re.compile(f"[{_CJK_CLASS}]")
_TOKEN = re.compile(f"[{_CJK_CLASS}]|[^\\W_{_CJK_CLASS}]+")
_HYPHEN = re.compile(r"(?<=\w)[-\u00ad\u2010\u2011]\s*(?=\w)")
_PROSE_END = re.compile(r"[.!?\u3002\uff01\uff1f][\"'\u201d\u2019)\]\u300d\u300f]*$")
_PAGE = re.compile(r'<page width="([\d.]+)" height="([\d.]+)"')
_WORD = re.compile(
    r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</word>'
)
_SEGMENTER = pysbd.Segmenter(language="en", clean=False, char_span=True)
_WHITE_SPACE = re.compile(r"\s+")

Rect = tuple[int, float, float, float, float]  # page (1-based), x0, y0, x1, y1


@dataclass
class Case:
    """One citation: a sentence of the chunk at ``index`` of a chunker's chunks of a PDF."""

    doc: str
    chunker: str
    index: int
    sentence: str
    tag: str  # prose | other
    pages: tuple[int, int]  # the chunker's own pages (1-based)
    outcomes: dict[str, dict[str, Any]] = field(default_factory=dict)  # mode -> judged


@dataclass(frozen=True)
class PopplerWord:
    text: str
    box: tuple[float, float, float, float]


def tokens(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text).casefold()
    return _TOKEN.findall(_HYPHEN.sub("", text))


def tag(sentence: str) -> str:
    words = tokens(sentence)
    digits = sum(any(c.isdigit() for c in w) for w in words)
    prose = (
        len(words) >= PROSE_WORDS
        and _PROSE_END.search(sentence.rstrip()) is not None
        and digits < 0.4 * len(words)
    )
    return "prose" if prose else "other"


def _flat(space: re.Match[str]) -> str:
    """A run of white space as spaces, but a blank line before anything but a lower-case word
    or CJK text (which has no case: a table's cell, read in lines, goes on after one)."""
    run, after = space.group(), space.string[space.end() : space.end() + 1]
    if run.count("\n") >= 2 and not after.islower() and not _CJK.match(after):
        return run
    return " " * len(run)


def cut_sentences(text: str) -> list[str]:
    """pySBD's sentences of ``text`` read as lines joined, cut from ``text`` itself."""
    flat = _WHITE_SPACE.sub(_flat, text)
    return [text[s.start : s.end].strip() for s in _SEGMENTER.segment(flat) if s.sent.strip()]


def draw_cases(
    doc: str, chunker: str, chunks: list[Any], count: int, rng: random.Random
) -> list[Case]:
    """Up to ``count`` chunks drawn in a seeded order, each with one sentence drawn from it;
    a chunk without a sentence of MIN_WORDS words is passed over."""
    cases = []
    order = list(range(len(chunks)))
    rng.shuffle(order)
    for index in order:
        if len(cases) == count:
            break
        chunk = chunks[index]
        sentences = [
            s
            for s in cut_sentences(chunk.text)
            if MIN_WORDS <= len(tokens(s)) <= MAX_WORDS and len(s) <= MAX_SENTENCE_CHARS
        ]
        if sentences:
            sentence = rng.choice(sentences)
            pages = (chunk.page_start, chunk.page_end)
            cases.append(Case(doc, chunker, index, sentence, tag(sentence), pages))
    return cases


def _split_cjk(text: str, box: tuple[float, float, float, float]) -> list[PopplerWord]:
    """pdftotext keeps a CJK run as one "word": split it into characters of equal width, so
    that half of a run lit is half of its characters."""
    if not _CJK.search(text) or len(text) == 1:
        return [PopplerWord(text, box)]
    x0, y0, x1, y1 = box
    step = (x1 - x0) / len(text)
    return [
        PopplerWord(c, (x0 + i * step, y0, x0 + (i + 1) * step, y1)) for i, c in enumerate(text)
    ]


def poppler_words(pdf: Path) -> dict[int, list[PopplerWord]]:
    """Page (1-based) -> its words in poppler's order, boxes in the crop box's top-left
    coordinates (as the service's rectangles and PyMuPDF's)."""
    command = ["pdftotext", "-bbox", "-cropbox", str(pdf), "-"]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    pages: dict[int, list[PopplerWord]] = {}
    page = 0
    for raw in out.splitlines():
        if _PAGE.search(raw):
            page += 1
            pages[page] = []
        elif match := _WORD.search(raw):
            x0, y0, x1, y1 = (float(v) for v in match.groups()[:4])
            pages[page].extend(_split_cjk(html.unescape(match.group(5)), (x0, y0, x1, y1)))
    return pages


def _inside(word: PopplerWord, rects: list[Rect], page: int) -> bool:
    cx, cy = (word.box[0] + word.box[2]) / 2, (word.box[1] + word.box[3]) / 2
    return any(
        p == page and x0 - 1 <= cx <= x1 + 1 and y0 - 1 <= cy <= y1 + 1
        for p, x0, y0, x1, y1 in rects
    )


def lit_text(rects: list[Rect], words: dict[int, list[PopplerWord]]) -> str:
    """Poppler's words under ``rects``, page by page in poppler's order."""
    lit = [
        w.text
        for page in sorted({r[0] for r in rects})
        for w in words.get(page, [])
        if _inside(w, rects, page)
    ]
    return " ".join(lit)


def f1_recall(sentence: str, lit: str) -> tuple[float, float]:
    """Token F1 of ``lit`` against ``sentence``, and the share of the sentence's tokens lit."""
    want, got = Counter(tokens(sentence)), Counter(tokens(lit))
    common = sum((want & got).values())
    if not common:
        return 0.0, 0.0
    return 2 * common / (sum(want.values()) + sum(got.values())), common / sum(want.values())


def judge(sentence: str, rects: list[Rect], words: dict[int, list[PopplerWord]]) -> dict[str, Any]:
    if not rects:
        return {"verdict": "not_lit", "f1": 0.0, "recall": 0.0}
    lit = lit_text(rects, words)
    score, recall = f1_recall(sentence, lit)
    verdict = "hit" if score >= HIT else "fragment" if score >= FRAGMENT else "wrong_place"
    return {"verdict": verdict, "f1": round(score, 3), "recall": round(recall, 3), "lit": lit[:300]}


def search_for(document: Any, sentence: str, pages: tuple[int, int]) -> list[Rect]:
    """The baseline: PyMuPDF's ``page.search_for(sentence)`` on each of the chunk's own pages,
    the rectangles of every hit."""
    rects: list[Rect] = []
    first, last = max(pages[0], 1), min(pages[1], document.page_count)
    for number in range(first, last + 1):
        for r in document[number - 1].search_for(sentence):
            rects.append((number, r.x0, r.y0, r.x1, r.y1))
    return rects
