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
numbers are placed anywhere by every extractor. Poppler's lines of page furniture are left out
(where a running header sits is no part of the text's order). What stays unmatched on a
well-read page is mostly tables, which poppler and PyMuPDF order differently, and 8-grams
across a chunk boundary.

Furniture: the lines ``alignment.furniture`` finds (a page's top or bottom 12%, text recurring
there on 3 pages or more, numbers aside). Per chunker, the share of them found in the text of a
chunk of their page, and their share of all chunk text.

Documents: every PDF directly in ../shared/pdfs (skipped with a message if absent; not the
financebench/ folder of 10-Ks, 2,900 pages), of which pdfjs_freeculture.pdf (352 pages) is
sampled (every 8th page, as a PDF of those pages); and the generated column pages
(gen_irs.make_columns) and table pages (gen_cells.make_tables). "before" is the chunker of git
``--before`` (default main: its ``app/pdfs/chunking.py`` loaded from ``git show`` as a module
beside today's), "after" is ``app.pdfs.chunking.chunk_pdf``, measured in the same run.

    .venv/bin/python bench/reading_order.py [PDF ...] [--n 8] [--before REF]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path

import pymupdf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from gen_cells import make_tables  # noqa: E402
from gen_irs import make_columns  # noqa: E402

from app.alignment.furniture import FurnitureLine  # noqa: E402
from app.alignment.text import normalize_text  # noqa: E402
from app.core.scripts import is_cjk  # noqa: E402
from app.pdfs.chunking import ChunkDraft, chunk_pdf  # noqa: E402
from app.pdfs.extract import build_index  # noqa: E402

SHARED = ROOT.parent / "shared" / "pdfs"
SEED = 1234
SAMPLED = {"pdfjs_freeculture.pdf": 8}  # name -> every how many pages
N = 8
MIN_LINE_WORDS = 4
_SMALL_NUMBER = re.compile(r"\d{1,3}")
_SPACES = re.compile(r"[ \t\r\f\v]+")

Chunker = Callable[[Path], list[ChunkDraft]]


# --------------------------------------------------------------------------- the chunker before


def git_chunker(ref: str) -> Callable[[Path], list[ChunkDraft]]:
    """``chunk_pdf`` of ``app/pdfs/chunking.py`` as it is at git ``ref``, loaded as a module of
    its own beside today's (it imports the rest of the app as it is today)."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{ref}:app/pdfs/chunking.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module = types.ModuleType(f"chunking_at_{ref.replace('/', '_')}")
    module.__file__ = f"<git {ref}:app/pdfs/chunking.py>"
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, module.__file__, "exec"), module.__dict__)

    def chunks(pdf: Path) -> list[ChunkDraft]:
        return list(module.chunk_pdf(pdf)[0])

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


def prose_runs(page_text: str, furniture: frozenset[str] = frozenset()) -> list[list[str]]:
    """The words of runs of consecutive prose lines of poppler's page text. A prose line holds
    at least ``MIN_LINE_WORDS`` words, at most half of them with digits: table cells and
    captions are not, and tables have no one reading order (poppler reads them column by
    column, a reader and both chunkers row by row)."""
    runs: list[list[str]] = [[]]
    for line in page_text.splitlines():
        line_words = words(line)
        if line_words and any("".join(line_words) in text for text in furniture):
            line_words = []  # a running header or footer: no part of the text's order
        figures = sum(any(c.isdigit() for c in word) for word in line_words)
        if len(line_words) >= MIN_LINE_WORDS and figures <= len(line_words) / 2:
            runs[-1].extend(line_words)
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if run]


def grams_of(page_text: str, n: int = N, furniture: frozenset[str] = frozenset()) -> list[str]:
    return [
        "".join(run[i : i + n])
        for run in prose_runs(page_text, furniture)
        for i in range(len(run) - n + 1)
    ]


def in_order(
    pages: list[str], chunks: list[ChunkDraft], n: int = N, furniture: frozenset[str] = frozenset()
) -> tuple[int, int]:
    """(8-grams in order, 8-grams) over the document."""
    skeletons = ["".join(words(chunk.text)) for chunk in chunks]
    found = total = 0
    for number, page_text in enumerate(pages, start=1):
        grams = grams_of(page_text, n, furniture)
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


def _furniture_pattern(line: FurnitureLine, chars: str) -> re.Pattern[str]:
    text = " ".join(chars[line.start : line.end].split())
    if _SMALL_NUMBER.fullmatch(text) or text.isdigit():
        # A bare page number counts only as a line or paragraph of its own: "7" is in prose too.
        return re.compile(rf"(?:^|\n)[ \t]*{re.escape(text)}[ \t]*(?:\n|$)")
    return re.compile(rf"(?<!\S){re.escape(text)}(?!\S)")


def furniture(
    lines: tuple[FurnitureLine, ...], chars: str, chunks: list[ChunkDraft]
) -> tuple[int, int, int]:
    """(furniture lines found in the text of a chunk holding their page, furniture lines,
    furniture characters found). Furniture: lines in a page's top or bottom 12% whose text,
    numbers aside, recurs there on at least 3 pages (``alignment.furniture``, the locator's)."""
    found = found_chars = 0
    for line in lines:
        pattern = _furniture_pattern(line, chars)
        for chunk in chunks:
            if chunk.page_start <= line.page <= chunk.page_end:
                match = pattern.search(chunk.text)
                if match:
                    found += 1
                    found_chars += len(match.group().strip())
                    break
    return found, len(lines), found_chars


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


def score(
    pages: list[str],
    truth: list[str],
    chunker: Chunker,
    pdf: Path,
    n: int,
    furniture_lines: tuple[tuple[FurnitureLine, ...], str] | None,
) -> list[str]:
    try:
        chunks = chunker(pdf)
    except Exception as exc:  # a PDF the chunker refuses is reported, not fatal
        return [f"({type(exc).__name__})", "", "", ""]
    shares = [in_order(pages, chunks, n, skeletons(furniture_lines)), whole(truth, chunks)]
    cells = [f"{found / total:.3f}" if total else "-" for found, total in shares]
    if furniture_lines is None or not furniture_lines[0]:
        return [*cells, "-", "-"]
    found, total, found_chars = furniture(*furniture_lines, chunks)
    text_chars = sum(len(chunk.text) for chunk in chunks)
    return [*cells, f"{found / total:.3f}", f"{100 * found_chars / max(text_chars, 1):.2f}%"]


def skeletons(furniture_lines: tuple[tuple[FurnitureLine, ...], str] | None) -> frozenset[str]:
    """The furniture lines' words as ``words`` reads them (poppler's lines of them are left
    out of the in-order measure: where a header sits in reading order is no one's business)."""
    if furniture_lines is None:
        return frozenset()
    lines, chars = furniture_lines
    pages: dict[int, str] = {}
    for line in lines:
        pages[line.page] = pages.get(line.page, "") + "".join(words(chars[line.start : line.end]))
    # Each page's furniture joined: poppler may break a two-line footer elsewhere.
    return frozenset(pages.values())


def furniture_of(pdf: Path) -> tuple[tuple[FurnitureLine, ...], str] | None:
    try:
        index = build_index(pdf)
    except Exception:  # reported by the chunkers' own columns
        return None
    return index.furniture, index.chars


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pdfs", nargs="*", type=Path)
    parser.add_argument("--n", type=int, default=N, help="words per n-gram")
    parser.add_argument(
        "--before", default="main", help="git ref whose chunker is 'before' (default: main)"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    legacy = git_chunker(args.before)
    with tempfile.TemporaryDirectory() as tmp:
        docs = documents(Path(tmp), args.pdfs)
        print(
            f"{'':44} {'in order':>15}  {'drawn, whole':>15}  {'furniture':>10} "
            f"{'furn. lines kept':>16}  {'furn. text':>15}"
        )
        print(
            f"{'document':37} {'grams':>6} {'before':>7} {'after':>7}  {'before':>7} "
            f"{'after':>7}  {'lines':>10} {'before':>8} {'after':>7}  {'before':>7} "
            f"{'after':>7}"
        )
        for name, pdf, truth in docs:
            pages = poppler_pages(pdf)
            lines = furniture_of(pdf)
            grams = sum(len(grams_of(page, args.n, skeletons(lines))) for page in pages)
            before = score(pages, truth, legacy, pdf, args.n, lines)
            after = score(pages, truth, current_chunks, pdf, args.n, lines)
            print(
                f"{name[:37]:37} {grams:>6} {before[0]:>7} {after[0]:>7}  "
                f"{before[1]:>7} {after[1]:>7}  {len(lines[0]) if lines else 0:>10} "
                f"{before[2]:>8} {after[2]:>7}  {before[3]:>7} {after[3]:>7}",
                flush=True,
            )
    print(
        f"\nin order: share of poppler's word {args.n}-grams (prose lines) found in order in the "
        f"chunks;\ndrawn, whole: share of a generated PDF's drawn sentences or table cells found "
        f"whole;\nfurniture lines: lines in a page's top or bottom 12% whose text recurs there "
        f"on >= 3 pages;\nfurn. lines kept: share of them found in the text of a chunk of their "
        f"page; furn. text: their\nshare of all chunk text. before: git {args.before}'s chunker; "
        f"{time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
