"""Text of scanned pages: Tesseract's words and boxes, as the index's lines of characters.

A page is read by OCR when it has no usable text layer (almost no extractable characters, or
mostly unmapped glyphs) and an image covers most of it; ``force`` reads every page, replacing its
text layer. The page is rendered as a viewer shows it (its /Rotate and crop box applied) and read;
when that reading does not look upright (little text, low confidence, or words in vertical lines:
``reads_upright``), Tesseract's orientation detection is asked, and a page it finds sideways or
upside down (a landscape sheet scanned as portrait) is read again turned upright, where lines are
horizontal as the index needs. Most pages are upright and pay for one reading only (detection
on every page was a quarter to a third of the time). The index records that turn as the page's
rotation, so its rectangles come back in the displayed frame, in PDF points, like every other
page's. Tesseract gives word boxes; a word's characters
share its box in proportion to their count, which is as exact as a sentence's start and end need
(they fall on word boundaries).

Blocking, and each page is one job of the bounded PDF workers (``indexing.py``), so a
page that takes Tesseract too long costs that page, not the document. Tesseract runs as a child
process with one thread: the workers are the parallelism, and the worker's memory limit is
inherited.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from app.core.scripts import CJK
from app.pdfs.pdf import open_pdf

if TYPE_CHECKING:  # PyMuPDF is imported where a page is read: in the PDF workers
    import pymupdf

OcrMode = Literal["off", "auto", "force"]
# Fewer visible characters than this on a page that is mostly image: a scan (a page number or a
# stamp printed over it is not a text layer).
MIN_TEXT_CHARS = 20
# An image covering at least this share of the page makes it a candidate.
MIN_IMAGE_SHARE = 0.5


class OcrFailed(RuntimeError):
    """Tesseract could not read a page (not installed, crashed, timed out)."""


@dataclass(frozen=True, slots=True)
class OcrOptions:
    languages: str = "eng"  # Tesseract's -l: "eng", "eng+fra", "chi_tra"
    dpi: int = 300
    mode: OcrMode = "auto"
    max_pages: int = 100  # per document; pages past it keep no text
    page_timeout_s: float = 120.0

    def tag(self) -> str:
        """What makes an OCR'd index differ: part of the index cache's blob names."""
        return f"ocr-{self.mode}-{self.languages}-{self.dpi}-{self.max_pages}"


@dataclass(frozen=True, slots=True)
class OcrLine:
    text: str
    boxes: tuple[float, ...]  # four per character: displayed frame, PDF points
    confidence: tuple[int, ...]  # per character, 0-100


@dataclass(frozen=True, slots=True)
class OcrPage:
    page: int  # 1-based
    lines: tuple[OcrLine, ...]
    seconds: float
    # Clockwise turn from the frame the boxes are in (upright text) to the displayed page: what
    # the index keeps as the page's rotation.
    rotation: int = 0


def tesseract_languages() -> set[str] | None:
    """The installed Tesseract's languages, or None when Tesseract is not installed."""
    binary = shutil.which("tesseract")
    if binary is None:
        return None
    try:
        listed = subprocess.run(
            [binary, "--list-langs"], capture_output=True, text=True, timeout=30, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = listed.stdout.splitlines()
    return {line.strip() for line in lines[1:] if line.strip()}


def _visible_chars(page: pymupdf.Page) -> tuple[int, int]:
    """Visible characters of the text layer, and how many of them are unmapped glyphs."""
    text = page.get_text("text")
    visible = [c for c in text if not c.isspace()]
    unmapped = sum(1 for c in visible if c == "\ufffd")
    return len(visible), unmapped


def _image_share(page: pymupdf.Page) -> float:
    import pymupdf

    area = float(abs(page.rect))
    if area <= 0:
        return 0.0
    covered = 0.0
    for info in page.get_image_info():
        box = pymupdf.Rect(info["bbox"]) & page.rect
        if not box.is_empty:
            covered += float(abs(box))
    return min(1.0, covered / area)


def needs_ocr(page: pymupdf.Page, mode: OcrMode) -> bool:
    if mode == "off":
        return False
    if mode == "force":
        return True
    if _image_share(page) < MIN_IMAGE_SHARE:  # the cheaper test first
        return False
    visible, unmapped = _visible_chars(page)
    return visible < MIN_TEXT_CHARS or unmapped > visible / 2


def pages_to_ocr(pdf: Path | bytes, mode: OcrMode) -> list[int]:
    """Blocking: the 1-based pages OCR should read (all of them, not yet cut to a budget)."""
    with open_pdf(pdf) as doc:
        return [number for number, page in enumerate(doc, start=1) if needs_ocr(page, mode)]


def ocr_page(pdf: Path | bytes, number: int, options: OcrOptions) -> OcrPage:
    """Blocking: render 1-based page ``number`` as displayed and read it with Tesseract; when
    that first reading does not look upright, ask Tesseract's orientation detection and read
    the page again turned upright."""
    import pymupdf

    started = time.perf_counter()
    zoom = options.dpi / 72
    with open_pdf(pdf) as doc:
        page = doc[number - 1]
        pixmap = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csGRAY)
        image = _image(pixmap)
        tsv = _tesseract(image, options, options.languages, "tsv")
        turn = 0 if reads_upright(tsv) else _upright_turn(image, options)
        if turn:
            matrix = pymupdf.Matrix(zoom, zoom).prerotate(turn)
            pixmap = page.get_pixmap(matrix=matrix, colorspace=pymupdf.csGRAY)
            tsv = _tesseract(_image(pixmap), options, options.languages, "tsv")
        width, height = page.rect.width, page.rect.height
    if turn in (90, 270):
        width, height = height, width
    scale_x = width / pixmap.width if pixmap.width else 1.0
    scale_y = height / pixmap.height if pixmap.height else 1.0
    lines = _lines(tsv, scale_x, scale_y)
    return OcrPage(number, tuple(lines), time.perf_counter() - started, (360 - turn) % 360)


def _image(pixmap: pymupdf.Pixmap) -> bytes:
    """The rendered page as Tesseract reads it, encoded once for every reading of it. PNG: the
    uncompressed formats Tesseract reads (PGM, BMP) cost it more to read from a pipe (0.6-0.7 s
    against 0.5 s of CPU for a 300-dpi page) than PNG costs to encode (0.04 s)."""
    return bytes(pixmap.tobytes("png"))


# Whether a first reading is upright, from Tesseract's own words (TSV): text read the right way
# up is read with confidence (clean or degraded upright pages of the corpus: a character-weighted
# mean of 42-96, most above 70; the same pages upside down: 12-30), and in lines across the page:
# Tesseract reads text turned a quarter one way as vertical lines, their boxes taller than wide
# (Latin and Chinese alike; a quarter turn the other way reads as upside down). Too few
# characters to tell (OSD itself needs about 50) and the page goes to orientation detection, as
# every page did before; so does an upright page read with little confidence, at the cost of
# detection only. Confidence says nothing of characters that read as characters upside down
# (0 1 8 O H I N S X Z o s x z l i, and 6/9, u/n, b/q, d/p, M/W, 7/L, 3/E, 2/Z, 5/S, h/y turned
# into each other): a page of such figures and capitals turned over read as mirrored nonsense at
# confidence 60-76 (a table of 0, 1, 7 and 8 as rows of "L", "0" and "8"). So only
# characters that tell which way is up count, and at least UPRIGHT_MIN_CHARS of them.
UPRIGHT_MIN_CHARS = 50
_TURN_ALIKE = frozenset("012356789EHILMNOSWXZbdhilnopqsuxyz")
UPRIGHT_MIN_CONFIDENCE = 45.0
UPRIGHT_MAX_TALL_SHARE = 0.25
UPRIGHT_LINE_MIN_CHARS = 3  # a line of one or two characters can stand taller than wide


def reads_upright(tsv: str) -> bool:
    """Whether the first reading (Tesseract's TSV) of a page is of upright text, so that
    orientation detection can be skipped (see the thresholds above)."""
    chars = telling = 0
    weighted = 0.0
    lines = tall = 0
    for words in _words_by_line(tsv):
        size = sum(len(word.text) for word in words)
        chars += size
        telling += sum(ch.isalnum() and ch not in _TURN_ALIKE for w in words for ch in w.text)
        weighted += sum(word.confidence * len(word.text) for word in words)
        if size >= UPRIGHT_LINE_MIN_CHARS:
            lines += 1
            height = max(w.y1 for w in words) - min(w.y0 for w in words)
            tall += int(height > max(w.x1 for w in words) - min(w.x0 for w in words))
    if telling < UPRIGHT_MIN_CHARS or weighted / chars < UPRIGHT_MIN_CONFIDENCE:
        return False
    # No line long enough to have a shape: nothing says the text runs across the page.
    return lines > 0 and tall <= UPRIGHT_MAX_TALL_SHARE * lines


def ocr_document(pdf: Path | bytes, options: OcrOptions) -> dict[int, OcrPage]:
    """Blocking, in this process: every page OCR should read, within the page budget. For tools
    and tests; the service runs each page as its own bounded job instead."""
    pages = pages_to_ocr(pdf, options.mode)[: options.max_pages]
    return {number: ocr_page(pdf, number, options) for number in pages}


_ROTATE = re.compile(r"^Rotate: (0|90|180|270)$", re.MULTILINE)


def _upright_turn(image: bytes, options: OcrOptions) -> int:
    """Degrees to turn the rendered page by (clockwise) to make its text upright: Tesseract's
    orientation detection, which needs its ``osd`` data (tesseract-ocr-osd); 0 when it cannot
    tell (too little text, no osd data)."""
    try:
        found = _ROTATE.search(_tesseract(image, options, "osd", "--psm", "0"))
    except OcrFailed:
        return 0
    return int(found.group(1)) if found else 0


def _tesseract(image: bytes, options: OcrOptions, languages: str, *how: str) -> str:
    binary = shutil.which("tesseract")
    if binary is None:
        raise OcrFailed("tesseract is not installed")
    command = [binary, "stdin", "stdout", "-l", languages, "--dpi", str(options.dpi), *how]
    environment = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    try:
        done = subprocess.run(
            command,
            input=image,
            capture_output=True,
            timeout=options.page_timeout_s,
            env=environment,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise OcrFailed(f"tesseract took more than {options.page_timeout_s:g} s") from None
    except OSError as exc:
        raise OcrFailed(f"tesseract could not run ({exc.strerror})") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise OcrFailed(f"tesseract failed: {message[-1] if message else done.returncode}")
    return done.stdout.decode("utf-8", "replace")


@dataclass(slots=True)
class _Word:
    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    confidence: int


def _words_by_line(tsv: str) -> list[list[_Word]]:
    lines: dict[tuple[str, str, str], list[_Word]] = {}
    reader = csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE)
    for row in reader:
        text = (row.get("text") or "").strip()
        if row.get("level") != "5" or not text:
            continue
        try:
            left, top = float(row["left"]), float(row["top"])
            width, height = float(row["width"]), float(row["height"])
            confidence = round(float(row["conf"]))
        except (KeyError, TypeError, ValueError):
            continue
        key = (row["block_num"], row["par_num"], row["line_num"])
        word = _Word(text, left, top, left + width, top + height, max(0, min(100, confidence)))
        lines.setdefault(key, []).append(word)
    return list(lines.values())


def _advance(char: str) -> float:
    if unicodedata.east_asian_width(char) in ("W", "F"):
        return 2.0
    return 0.5 if char in ".,;:'!|()[]" else 1.0


def _lines(tsv: str, scale_x: float, scale_y: float) -> list[OcrLine]:
    out: list[OcrLine] = []
    for words in _words_by_line(tsv):
        text: list[str] = []
        boxes: list[float] = []
        confidence: list[int] = []
        for position, word in enumerate(words):
            x0, x1 = word.x0 * scale_x, word.x1 * scale_x
            y0, y1 = word.y0 * scale_y, word.y1 * scale_y
            if position and not (CJK.match(text[-1]) and CJK.match(word.text[0])):
                previous_x1 = boxes[-2]
                text.append(" ")
                boxes.extend((previous_x1, y0, max(previous_x1, x0), y1))
                confidence.append(word.confidence)
            # Each character's share of the word's width by its usual advance: an ideograph is
            # twice as wide as a Latin letter or a digit ("第8屆"), narrow punctuation half.
            weights = [_advance(char) for char in word.text]
            unit = (x1 - x0) / sum(weights)
            left = x0
            for char, weight in zip(word.text, weights, strict=True):
                text.append(char)
                boxes.extend((left, y0, left + weight * unit, y1))
                confidence.append(word.confidence)
                left += weight * unit
        out.append(OcrLine("".join(text), tuple(boxes), tuple(confidence)))
    return out
