"""Generated tables and CJK text for bench/locate_eval.py.

Tables: wrapped header and label cells, drawn line by line across the whole row on most pages
(so a cell's second line follows the other cells' first lines in the PDF's order) and cell by
cell on the others. Which order an extractor reports differs; a quote of one cell must be found
either way. Ground truth is where each word was drawn.

CJK: traditional Chinese with spaces between digits and ideographs ("第8 屆") and full-width
punctuation and digits, plus Korean; its ground truth comes from pdftotext like the shared
corpus, and locate_eval quotes it the way an NFKC-normalising pipeline would.
"""

from __future__ import annotations

import random
from pathlib import Path

import pymupdf
from eval_quotes import Quote, Word, join_words
from gen_irs import LEADING, MARGIN, PAGE_H, PAGE_W, SIZE, Drawing, Frame, render, sentence

LABEL_W = 170.0
VALUE_W = 78.0
VALUES = 4


def _cell(drawing: Drawing, frame: Frame, words: list[str]) -> int:
    drawing.flow([([words], False)], [frame])
    return len(drawing.sentences) - 1


def _table_page(drawing: Drawing, rng: random.Random, page: int, cells: list[int]) -> None:
    y = MARGIN
    header = [sentence(rng)[: rng.randint(4, 6)] for _ in range(VALUES)]
    header = [[w.rstrip(".;") for w in words] for words in header]
    x = MARGIN + LABEL_W
    for number, words in enumerate(header):
        frame = Frame(page, x + number * VALUE_W, y, VALUE_W - 8, y + 6 * LEADING, number)
        cells.append(_cell(drawing, frame, words))
    y += 6 * LEADING
    row = 1
    while y < PAGE_H - MARGIN - 4 * LEADING:
        label = [w.rstrip(".;") for w in sentence(rng)[: rng.randint(5, 14)]]
        frame = Frame(page, MARGIN, y, LABEL_W - 10, y + 3 * LEADING, 10 * row)
        drawn = len(drawing.lines)
        cells.append(_cell(drawing, frame, label))
        lines = len(drawing.lines) - drawn
        for number in range(VALUES):
            value = f"{rng.randint(1, 99_999):,}"
            cell = Frame(page, x + number * VALUE_W, y, VALUE_W - 8, y + LEADING, 10 * row + 1)
            _cell(drawing, cell, [value])
        y += (lines + 0.8) * LEADING
        row += 1


def make_tables(path: Path, seed: int, pages: int = 4) -> tuple[list[Word], list[Quote]]:
    rng = random.Random(f"{seed}:cells")
    drawing = Drawing()
    cells: list[int] = []
    for page in range(1, pages + 1):
        _table_page(drawing, rng, page, cells)
    render(drawing, pages, ["rows", "rows", "flow", "rows"][:pages], path)
    quotes = []
    for sid in cells:
        words = [drawing.words[i] for i in drawing.sentences[sid]]
        if len(words) >= 4 and sum(len(w.text) for w in words) >= 20:
            quotes.append(Quote(path.name, "table", join_words(words), words))
    rng.shuffle(quotes)
    return drawing.words, quotes


_HANZI = (
    "立法院會議審查預算案條例修正草案委員會報告行政院函請核定公告施行國民權利義務地方"
    "自治團體財政收支劃分主管機關應於期限內提出說明經費補助辦法規定事項"
)
_HANGUL = "국회 위원회 법률안 심사 보고서 정부 예산 제출 기한 의결 공포 시행 지방자치단체 재정"


def _hanzi_sentence(rng: random.Random) -> str:
    parts = ["".join(rng.choice(_HANZI) for _ in range(rng.randint(4, 9))) for _ in range(3)]
    number = rng.randint(1, 30)
    marker = rng.choice([f"第{number} 屆", f"第 {number} 條", f"（{number}）", f"第{number}會期"])
    return f"{parts[0]}{marker}{parts[1]}，{parts[2]}。"


def make_cjk(path: Path, seed: int) -> None:
    rng = random.Random(f"{seed}:cjk")
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    y = MARGIN
    while y < PAGE_H / 2:
        text = "".join(_hanzi_sentence(rng) for _ in range(3))
        for at in range(0, len(text), 30):
            page.insert_text((MARGIN, y), text[at : at + 30], fontname="china-t", fontsize=SIZE)
            y += LEADING
        y += LEADING
    words = _HANGUL.split()
    while y < PAGE_H - MARGIN:
        line = " ".join(rng.choice(words) for _ in range(8)) + rng.choice([".", "다.", "한다."])
        page.insert_text((MARGIN, y), line, fontname="korea", fontsize=SIZE)
        y += LEADING
    doc.save(path)
    doc.close()
