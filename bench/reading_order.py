"""How much of a PDF's reading order its chunks keep: the chunker of today against the one before.

Reading order comes from poppler (``pdftotext -cropbox``, without ``-layout``: its own reading
order, column by column), never from PyMuPDF, which both chunkers read. For each page, poppler's
words are normalised as the locator does (``normalize_text``: letters and digits, case-folded;
a CJK run is split into its characters, each a word) and cut into overlapping word 8-grams. An
8-gram is *in order* when its words, joined, occur in the normalised text of the chunks that
touch that page or a neighbour (so a sentence carried over a page break still counts). The
score of a document is the share of its 8-grams in order.

Why 8-grams: a chunk that interleaves two columns row by row keeps each printed line intact
and breaks every 8-gram that runs on into the next line, about 7 in 10 of them for lines of ten
words; text in reading order keeps them all. Joining words without separators makes the test
indifferent to spaces, hyphens and punctuation, which extractors disagree on. Standalone numbers
of up to 3 digits are dropped on both sides: page numbers, footnote marks and margin line
numbers are placed anywhere by every extractor. What stays unmatched on a well-read page is
mostly running headers and footers and tables, which poppler and PyMuPDF order differently.

Documents: every PDF directly in ../shared/pdfs (skipped with a message if absent; not the
financebench/ folder of 10-Ks, 2,900 pages), of which pdfjs_freeculture.pdf (352 pages) is
sampled (every 8th page, as a PDF of those pages); and the generated column pages
(gen_irs.make_columns) and table pages (gen_cells.make_tables). "before" is the chunker of git
before this bench (``legacy_chunks``: PyMuPDF blocks in drawing order), "after" is
``app.pdfs.chunking.chunk_pdf``, measured in the same run.

    .venv/bin/python bench/reading_order.py [PDF ...] [--n 8]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pymupdf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from gen_cells import make_tables  # noqa: E402
from gen_irs import make_columns  # noqa: E402

from app.alignment.index import PageTooDense  # noqa: E402
from app.alignment.text import clean_extracted, normalize_text  # noqa: E402
from app.core.scripts import is_cjk  # noqa: E402
from app.pdfs.chunking import ChunkDraft, chunk_pdf  # noqa: E402
from app.pdfs.pdf import open_pdf  # noqa: E402
from app.selection.sentences import split_sentences  # noqa: E402

SHARED = ROOT.parent / "shared" / "pdfs"
SEED = 1234
SAMPLED = {"pdfjs_freeculture.pdf": 8}  # name -> every how many pages
N = 8
MIN_LINE_WORDS = 4
_SMALL_NUMBER = re.compile(r"\d{1,3}")
_SPACES = re.compile(r"[ \t\r\f\v]+")

Chunker = Callable[[Path], list[ChunkDraft]]


# --------------------------------------------------------------------------- the chunker before


def _legacy_blocks(pdf: Path) -> list[tuple[int, str]]:
    blocks: list[tuple[int, str]] = []
    with open_pdf(pdf) as doc:
        for page in doc:
            page_blocks = page.get_text("blocks")
            PageTooDense.check(page.number + 1, sum(len(block[4]) for block in page_blocks))
            for block in page_blocks:
                if block[6] != 0:
                    continue
                text = clean_extracted(str(block[4])).replace("\n", " ")
                text = _SPACES.sub(" ", text).strip()
                if text:
                    blocks.append((page.number + 1, text))
    return blocks


def _legacy_pieces(page: int, text: str, max_chars: int) -> list[tuple[int, str]]:
    if len(text) <= max_chars:
        return [(page, text)]
    pieces: list[tuple[int, str]] = []
    current = ""
    for sentence in split_sentences(text):
        if current and len(current) + len(sentence.text) + 1 > max_chars:
            pieces.append((page, current))
            current = ""
        current = f"{current} {sentence.text}".strip()
    if current:
        pieces.append((page, current))
    return pieces


def legacy_chunks(pdf: Path, target_chars: int = 1000, max_chars: int = 1600) -> list[ChunkDraft]:
    """``chunk_pdf`` as it was before it read the index: PyMuPDF text blocks in drawing order,
    lines of a block joined with spaces, blocks packed into chunks."""
    chunks: list[ChunkDraft] = []
    parts: list[tuple[int, str]] = []

    def flush() -> None:
        if parts:
            text = parts[0][1]
            for (_, previous), (_, part) in zip(parts, parts[1:], strict=False):
                mid = previous[-1] not in ".!?:;\u3002\uff01\uff1f\"'\u201d)"
                text += (" " if mid and part[0].islower() else "\n\n") + part
            chunks.append(ChunkDraft(len(chunks), text, parts[0][0], parts[-1][0]))
            parts.clear()

    for page, block in _legacy_blocks(pdf):
        for piece in _legacy_pieces(page, block, max_chars):
            size = sum(len(p) + 2 for _, p in parts)
            if parts and size + len(piece[1]) > max_chars:
                flush()
            parts.append(piece)
            if size + len(piece[1]) >= target_chars:
                flush()
    flush()
    return chunks


def current_chunks(pdf: Path) -> list[ChunkDraft]:
    return chunk_pdf(pdf)[0]


# --------------------------------------------------------------------------- the measure


def words(text: str) -> list[str]:
    """Skeletons of the words of ``text``, CJK characters one by one, small numbers left out."""
    found: list[str] = []
    for token in text.split():
        run = ""
        for char in token:
            if is_cjk(char):
                if run:
                    found.append(run)
                    run = ""
                found.append(char)
            else:
                run += char
        if run:
            found.append(run)
    skeletons = (normalize_text(word) for word in found)
    return [s for s in skeletons if s and not _SMALL_NUMBER.fullmatch(s)]


def poppler_pages(pdf: Path) -> list[str]:
    command = ["pdftotext", "-cropbox", "-enc", "UTF-8", str(pdf), "-"]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return out.split("\f")


def prose_runs(page_text: str) -> list[list[str]]:
    """The words of runs of consecutive prose lines of poppler's page text. A prose line holds
    at least ``MIN_LINE_WORDS`` words, at most half of them with digits: table cells and
    captions are not, and tables have no one reading order (poppler reads them column by
    column, a reader and both chunkers row by row)."""
    runs: list[list[str]] = [[]]
    for line in page_text.splitlines():
        line_words = words(line)
        figures = sum(any(c.isdigit() for c in word) for word in line_words)
        if len(line_words) >= MIN_LINE_WORDS and figures <= len(line_words) / 2:
            runs[-1].extend(line_words)
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if run]


def grams_of(page_text: str, n: int = N) -> list[str]:
    return [
        "".join(run[i : i + n]) for run in prose_runs(page_text) for i in range(len(run) - n + 1)
    ]


def in_order(pages: list[str], chunks: list[ChunkDraft], n: int = N) -> tuple[int, int]:
    """(8-grams in order, 8-grams) over the document."""
    skeletons = ["".join(words(chunk.text)) for chunk in chunks]
    found = total = 0
    for number, page_text in enumerate(pages, start=1):
        grams = grams_of(page_text, n)
        if not grams:
            continue
        near = "\x00".join(
            skeleton
            for skeleton, chunk in zip(skeletons, chunks, strict=True)
            if chunk.page_start - 1 <= number and chunk.page_end + 1 >= number
        )
        total += len(grams)
        found += sum(gram in near for gram in grams)
    return found, total


def sampled(pdf: Path, every: int, folder: Path) -> Path:
    out = folder / f"sampled_{pdf.name}"
    with pymupdf.open(pdf) as doc:
        doc.select(list(range(0, doc.page_count, every)))
        doc.save(out)
    return out


def whole(truth: list[str], chunks: list[ChunkDraft]) -> tuple[int, int]:
    """(drawn sentences or cells found whole, how many) in the chunks."""
    text = "\x00".join("".join(words(chunk.text)) for chunk in chunks)
    skeletons = ["".join(words(sentence)) for sentence in truth]
    return sum(skeleton in text for skeleton in skeletons), len(skeletons)


def documents(folder: Path, explicit: list[Path]) -> list[tuple[str, Path, list[str]]]:
    """Name, PDF and, for a generated one, the text of its drawn sentences or cells."""
    if explicit:
        return [(pdf.name, pdf, []) for pdf in explicit]
    found: list[tuple[str, Path, list[str]]] = []
    if SHARED.is_dir():
        for pdf in sorted(SHARED.glob("*.pdf")):
            every = SAMPLED.get(pdf.name)
            name = f"{pdf.name} (every {every}th page)" if every else pdf.name
            found.append((name, sampled(pdf, every, folder) if every else pdf, []))
    else:
        print(f"{SHARED} is absent: generated pages only")
    for name, make in (
        ("gen_irs_columns.pdf", make_columns),
        ("gen_cells_tables.pdf", make_tables),
    ):
        _, quotes = make(folder / name, SEED)
        found.append((name, folder / name, [quote.text for quote in quotes]))
    return found


def score(pages: list[str], truth: list[str], chunker: Chunker, pdf: Path, n: int) -> list[str]:
    try:
        chunks = chunker(pdf)
    except Exception as exc:  # a PDF the chunker refuses is reported, not fatal
        return [f"({type(exc).__name__})", ""]
    shares = [in_order(pages, chunks, n), whole(truth, chunks)]
    return [f"{found / total:.3f}" if total else "-" for found, total in shares]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pdfs", nargs="*", type=Path)
    parser.add_argument("--n", type=int, default=N, help="words per n-gram")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        docs = documents(Path(tmp), args.pdfs)
        print(f"{'':58} {'in order':>23}   {'drawn, whole':>14}")
        print(
            f"{'document':51} {'grams':>6} {'before':>7} {'after':>7}   {'before':>7} {'after':>7}"
        )
        for name, pdf, truth in docs:
            pages = poppler_pages(pdf)
            grams = sum(len(grams_of(page, args.n)) for page in pages)
            before = score(pages, truth, legacy_chunks, pdf, args.n)
            after = score(pages, truth, current_chunks, pdf, args.n)
            print(
                f"{name[:51]:51} {grams:>6} {before[0]:>7} {after[0]:>7}   "
                f"{before[1]:>7} {after[1]:>7}",
                flush=True,
            )
    print(
        f"\nin order: share of poppler's word {args.n}-grams (prose lines) found in order in the "
        f"chunks;\ndrawn, whole: share of a generated PDF's drawn sentences or table cells found "
        f"whole; {time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
