"""The ecosystem's chunkers for ``chunkers_eval.py``, each called as a new user would call it.

Every chunker gives ``Chunk``s with 1-based pages read off its own metadata: a page-by-page
loader's page (LangChain's 0-based ``page`` plus one, LlamaIndex's ``page_label``,
PyMuPDF4LLM's ``page``); none of them crosses a page. A chunker's output is cached per PDF
content, chunker and library version (JSON under the cache folder), so that only the first run
pays for PyMuPDF4LLM's and pdfminer's extraction.

PyMuPDF4LLM is pymupdf4llm 0.3.4, which the first run installs without its dependencies into
``.venv/bench-pymupdf4llm``, off the service's path (the ``bench`` extra in pyproject.toml says
why); on pymupdf-lite it runs its layout-free Markdown path, as pymupdf4llm 0.x did for
everyone before PyMuPDF 2.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

import pymupdf

# (key, file under ../shared/pdfs, what it is). Eleven PDFs: the kinds of document.
CORPUS = (
    ("tracemonkey", "pdfjs_tracemonkey.pdf", "two-column paper"),
    ("freeculture-40", "pdfjs_freeculture.pdf", "hyphenated book: its first 40 pages"),
    ("twly-bill", "twly_bill_LCEWA01_080202_00016_zh-hant.pdf", "CJK bill (Traditional Chinese)"),
    ("bestbuy-10k", "financebench/BESTBUY_2023_10K.pdf", "10-K (75 pages)"),
    ("federal-register", "pdfplumber_federal-register-2020-17221.pdf", "Federal Register notice"),
    ("scan-ocr-de", "pymupdf_scan-ocr-layer_test_4224_de.pdf", "scan with an OCR layer (German)"),
    ("nist", "pymupdf_nist-sp800-223_test_3842.pdf", "NIST report"),
    ("dmca", "pdfminer_dmca-copyright-office-summary.pdf", "DMCA summary"),
    ("mgm-earnings", "financebench_MGMRESORTS_2022Q4_EARNINGS.pdf", "earnings release"),
    ("amcor-earnings", "financebench/AMCOR_2023Q4_EARNINGS.pdf", "earnings release"),
    ("jnj-8k", "financebench/JOHNSON_JOHNSON_2023_8K_dated-2023-08-30.pdf", "8-K"),
)
# The book is cut to its first pages (a copy made with PyMuPDF's Document.select), so that
# the hyphenated book weighs like the other documents; the PUT-cost part takes it whole.
BOOK_PAGES = {"freeculture-40": 40}
FULL_BOOK = "pdfjs_freeculture.pdf"
SPLITTER_SIZE, SPLITTER_OVERLAP = 1000, 200  # LangChain's and the Markdown splitter's
PYMUPDF4LLM = "pymupdf4llm>=0.3.4,<1"  # the last releases whose code runs on pymupdf-lite
WINDOW, STRIDE = 5, 3  # pdfminer sentence windows: 5 sentences, a new window every 3
# A simple sentence regex, as a windowing pipeline writes one: a full stop, question or
# exclamation mark before white space, or a CJK one.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f])")


@dataclass(frozen=True)
class Chunk:
    text: str
    page_start: int  # 1-based, from the chunker's metadata
    page_end: int


@dataclass(frozen=True)
class Chunker:
    name: str
    label: str  # what a table prints
    make: Callable[[Path], list[Chunk]]
    versions: tuple[str, ...]  # the distributions whose version keys the cache


def pypdf_pages(pdf: Path) -> list[str]:
    """The page texts LangChain's PyPDFLoader and LlamaIndex's PDFReader read: pypdf's
    ``extract_text()`` of each page, in its default ("plain") mode."""
    from pypdf import PdfReader

    return [page.extract_text() for page in PdfReader(pdf).pages]


def langchain(pdf: Path) -> list[Chunk]:
    """PyPDFLoader's documents (one per page, metadata ``page`` 0-based) through
    ``RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200).split_documents``."""
    from langchain_core.documents import Document
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    documents = [
        Document(page_content=text, metadata={"source": str(pdf), "page": number})
        for number, text in enumerate(pypdf_pages(pdf))
    ]
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=SPLITTER_SIZE, chunk_overlap=SPLITTER_OVERLAP
    )
    return [
        Chunk(d.page_content, d.metadata["page"] + 1, d.metadata["page"] + 1)
        for d in splitter.split_documents(documents)
    ]


def llamaindex(pdf: Path) -> list[Chunk]:
    """PDFReader's documents (one per page, ``page_label`` 1-based, ``file_name``) through
    ``SentenceSplitter()`` with its defaults (1024 tokens, 200 overlap)."""
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter

    documents = [
        Document(text=text, metadata={"page_label": str(number), "file_name": pdf.name})
        for number, text in enumerate(pypdf_pages(pdf), start=1)
    ]
    nodes = SentenceSplitter().get_nodes_from_documents(documents)
    return [
        Chunk(n.text, int(n.metadata["page_label"]), int(n.metadata["page_label"])) for n in nodes
    ]


def _pymupdf4llm():  # type: ignore[no-untyped-def]
    folder = Path(sys.prefix) / "bench-pymupdf4llm"
    if not (folder / "pymupdf4llm").is_dir():
        print(
            f"installing {PYMUPDF4LLM} into {folder} (once; pyproject.toml's bench extra says why)"
        )
        command = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target"]
        subprocess.run([*command, str(folder), PYMUPDF4LLM], check=True)
    # 0.3.4 advertises pymupdf_layout on stdout when imported without it.
    os.environ.setdefault("PYMUPDF_SUGGEST_LAYOUT_ANALYZER", "0")
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
    import pymupdf4llm

    return pymupdf4llm


def pymupdf4llm_md(pdf: Path) -> list[Chunk]:
    """``pymupdf4llm.to_markdown(pdf, page_chunks=True)`` (one Markdown text per page, metadata
    ``page`` 1-based) through ``MarkdownTextSplitter(chunk_size=1000, chunk_overlap=200)``."""
    from langchain_text_splitters import MarkdownTextSplitter

    pages = _pymupdf4llm().to_markdown(str(pdf), page_chunks=True, show_progress=False)
    splitter = MarkdownTextSplitter(chunk_size=SPLITTER_SIZE, chunk_overlap=SPLITTER_OVERLAP)
    return [
        Chunk(text, page["metadata"]["page"], page["metadata"]["page"])
        for page in pages
        for text in splitter.split_text(page["text"])
    ]


def sentence_windows(text: str) -> list[str]:
    """Windows of WINDOW sentences every STRIDE, cut from ``text`` as it is (its line breaks
    kept); the last window reaches the text's end."""
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        if text[start : match.start()].strip():
            spans.append((start, match.start()))
        start = match.end()
    if text[start:].strip():
        spans.append((start, len(text)))
    if not spans:
        return []
    starts = list(range(0, max(len(spans) - WINDOW, 0) + 1, STRIDE))
    if starts[-1] + WINDOW < len(spans):
        starts.append(len(spans) - WINDOW)
    return [text[spans[i][0] : spans[min(i + WINDOW, len(spans)) - 1][1]] for i in starts]


def pdfminer_windows(pdf: Path) -> list[Chunk]:
    """``pdfminer.high_level.extract_text(pdf, page_numbers=[i])`` per page, in sentence windows."""
    from pdfminer.high_level import extract_text

    with pymupdf.open(pdf) as document:
        count = document.page_count
    return [
        Chunk(window, number + 1, number + 1)
        for number in range(count)
        for window in sentence_windows(extract_text(str(pdf), page_numbers=[number]))
    ]


CHUNKERS = (
    Chunker(
        "langchain",
        "LangChain (pypdf + RecursiveCharacterTextSplitter 1000/200)",
        langchain,
        ("pypdf", "langchain-text-splitters"),
    ),
    Chunker(
        "llamaindex",
        "LlamaIndex (pypdf + SentenceSplitter)",
        llamaindex,
        ("pypdf", "llama-index-core"),
    ),
    Chunker(
        "pymupdf4llm",
        "PyMuPDF4LLM Markdown + MarkdownTextSplitter 1000/200",
        pymupdf4llm_md,
        ("pymupdf-lite", "langchain-text-splitters"),
    ),
    Chunker(
        "pdfminer",
        "pdfminer.six text, 5-sentence windows, stride 3",
        pdfminer_windows,
        ("pdfminer.six",),
    ),
)


def _version(distribution: str) -> str:
    if distribution == "pymupdf-lite":
        return f"{pymupdf.__version__}+4llm0.3.4"
    return metadata.version(distribution)


def missing_library(chunker: Chunker) -> str | None:
    """Why ``chunker`` cannot run here, or None."""
    try:
        for distribution in chunker.versions:
            _version(distribution)
        if chunker.name == "pymupdf4llm":
            _pymupdf4llm()
    except (ImportError, metadata.PackageNotFoundError, subprocess.CalledProcessError) as error:
        return f"{error} (make setup installs the bench extra)"
    return None


def chunks(chunker: Chunker, pdf: Path, cache: Path) -> tuple[list[Chunk], bool]:
    """``chunker``'s chunks of ``pdf`` (empty ones left out) and whether they came from the
    cache."""
    sha = hashlib.sha256(pdf.read_bytes()).hexdigest()[:20]
    versions = "-".join(_version(d) for d in chunker.versions)
    path = cache / f"{chunker.name}-{sha}-{versions}.json"
    if path.is_file():
        return [Chunk(**c) for c in json.loads(path.read_text())], True
    made = [c for c in chunker.make(pdf) if c.text.strip()]
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([asdict(c) for c in made]))
    return made, False


def corpus_pdf(shared: Path, key: str, file: str, cache: Path) -> Path:
    """The corpus file, or for the book its first pages, copied once into ``cache``."""
    source = shared / file
    pages = BOOK_PAGES.get(key)
    if pages is None:
        return source
    copy = cache / f"{source.stem}-first{pages}.pdf"
    if not copy.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        with pymupdf.open(source) as document:
            document.select(range(pages))
            document.save(copy, garbage=3, deflate=True)
    return copy
