"""``split_sentences(text, limit=N)`` is the full split's first N sentences, and it stops reading
the text once it has them (the service caps every chunk at ``max_sentences_per_chunk``, and a
100k-character chunk split whole before the cap cost tens of milliseconds for nothing).

Equivalence is checked on random texts built from the pieces that steer the splitter (ends,
abbreviations, blank lines, bullets, enumerators, table rows, CJK), on the other tests' texts, and
on every chunk of the generated PDFs and, when present, ../shared/pdfs, at every limit. That it
stops early is checked by what it reads (the pieces it asks the row splitter for), never by time.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.selection import sentences as sentences_module
from app.selection.sentences import Sentence, split_sentences
from tests.alignment.test_linear_text import ADVERSARIAL, REAL_ISH

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "pdfs"

# Pieces that decide where sentences end, as random texts recombine them.
PIECES = [
    *ADVERSARIAL,
    *REAL_ISH,
    "Mr. Speaker said so. ",
    "No. 4 of the Act. ",
    "e.g. this one ",
    "10.5 per cent. ",
    "It fell! ",
    "Did it? ",
    "« oui. » ",
    "…",
    "\n\n",
    "\n",
    "  ",
    " • item one ",
    " \uf0b7 item two ",
    "5. ",
    "(b) ",
    "iv. ",
    "Net income $ 4,756 $ 4,822 ",
    "Depreciation 856 788\n",
    "Cash flows from operating activities: ",
    "本法修正草案。",
    "第一條：本法施行",
    "說明如下！「是否通過？」",
    "資遣\n\n費",
    "修正草案對照表\n",
    "修 正 條 文 現 行 條 文 說 明\n",
    "導致勞工無法取得應有的工資、資遣\n",
    "x" * 450 + "\n" + "y" * 60,
]

random_text = st.lists(st.sampled_from(PIECES), min_size=0, max_size=40).map("".join)


def _check_every_limit(text: str) -> None:
    full = split_sentences(text)
    for limit in range(len(full) + 2):
        assert split_sentences(text, limit=limit) == full[:limit], (limit, text[:80])
    assert split_sentences(text, limit=None) == full


@settings(max_examples=600, deadline=None)
@given(random_text)
@example("")
@example("5.")
@example("Total 1,234 B\n5. ")
@example("a. b. c. d.")
def test_a_limit_gives_the_full_splits_first_sentences(text: str) -> None:
    _check_every_limit(text)


def _literal_texts() -> list[str]:
    """The string constants of the sentence tests, as they stand (their inputs)."""
    import ast

    found: list[str] = []
    for name in ("test_sentences.py", "test_cjk_sentences.py"):
        tree = ast.parse((Path(__file__).parent / name).read_text(encoding="utf-8"))
        found += [
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value
        ]
    return found


def test_the_limit_on_the_sentence_tests_texts() -> None:
    literals = _literal_texts()
    assert len(literals) > 20
    for text in literals:
        _check_every_limit(text)


def _chunk_texts(pdf: Path) -> list[str]:
    from app.pdfs.chunking import chunk_index
    from app.pdfs.extract import build_index

    return [chunk.text for chunk in chunk_index(build_index(pdf))]


def _corpus(max_pages: int = 20) -> list[Path]:
    """The corpus's PDFs short enough to index in a test (prose, tables, French, Chinese)."""
    import pymupdf

    found: list[Path] = []
    for pdf in sorted(SHARED.glob("*.pdf")) if SHARED.is_dir() else []:
        with pymupdf.open(pdf) as doc:
            if doc.page_count <= max_pages:
                found.append(pdf)
    return found


@pytest.mark.slow
def test_the_limit_on_generated_and_corpus_chunks(tmp_path: Path) -> None:
    from app.pdfs.sample import write_sample_pdf
    from tests.fixtures.pdfs import write_rotated_pdf

    pdfs = [write_sample_pdf(tmp_path / "sample.pdf"), write_rotated_pdf(tmp_path / "r.pdf")]
    pdfs += _corpus()
    chunks = [text for pdf in pdfs for text in _chunk_texts(pdf)]
    assert chunks
    # A chunk and, as the service sees very long ones, runs of chunks joined.
    joined = ["\n\n".join(chunks[i : i + 40]) for i in range(0, len(chunks), 40)]
    for text in chunks:
        full = split_sentences(text)
        for limit in {0, 1, 2, len(full) // 2, len(full) - 1, len(full), len(full) + 1}:
            assert split_sentences(text, limit=max(limit, 0)) == full[: max(limit, 0)]
    for text in joined:
        full = split_sentences(text)
        for limit in (1, 7, 50, 200, len(full)):
            assert split_sentences(text, limit=limit) == full[:limit]


def test_a_limit_stops_reading_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the last sentence it returns, the splitter asks for one more piece at most."""
    text = " ".join(f"Sentence number {i} says that the harbour opens." for i in range(5_000))
    asked: list[int] = []
    from app.selection.rows import split_rows as real

    def recording(text: str, start: int, end: int) -> list[tuple[int, int]]:
        asked.append(end)
        return real(text, start, end)

    monkeypatch.setattr(sentences_module, "split_rows", recording)
    first: list[Sentence] = split_sentences(text, limit=200)
    assert len(first) == 200
    # The 200th sentence's end, then the cut after it: nothing of the other 4,800 sentences.
    assert max(asked) <= first[-1].end + 1
    assert len(asked) <= 201
