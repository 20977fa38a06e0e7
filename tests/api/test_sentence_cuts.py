"""Sentences where a reader cuts them, through the HTTP API (issue 41): what is lit when an
answer cites a sentence verbatim is that whole sentence, on a text source and on a chat system's
own chunks of a PDF, and the answer's claim is that whole sentence too (the answer is cut by the
same splitter). The cases and judges are ``tests/fixtures/sentence_cuts.py``'s.

- pySBD's golden rules: at least 60 of 62 texts lit whole when a model picks the quoted
  sentence (it can only pick what the service cut); with the word-overlap judge, every claim is
  whole and nothing lit is a piece of a sentence (the splitter alone: 61 of 62,
  ``tests/selection/test_golden_rules.py``).
- The chunkers' cases (pdfminer's blank lines between a sentence's lines, a long sentence
  wrapped over lines, numbers before capitals, reference brackets, citation lists, abbreviations
  with and without a capital after them) on a PDF: each cited sentence lit whole, with its
  rectangles, by the word-overlap judge.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.fixtures.app import app_client, make_settings
from tests.fixtures.llm_server import ScriptedLLM
from tests.fixtures.sentence_cuts import (
    CHUNKER_CASES,
    GOLDEN,
    choose_the_claims_sentence,
    chunker_results,
    golden_results,
    lit_whole,
    lit_whole_on_the_pdf,
    no_piece_lit,
    report,
)

REQUIRED = 60  # of the 62 golden rules (issue 41)


@pytest.fixture
def sqlite_url(tmp_path: Path, sqlite_template: Path) -> str:
    """The golden rules test the cut, not the database: SQLite alone."""
    path = tmp_path / "highlight.db"
    shutil.copyfile(sqlite_template, path)
    return f"sqlite+aiosqlite:///{path}"


async def test_golden_rules_are_lit_whole_when_a_model_picks_the_quoted_sentence(
    sqlite_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.chooser = choose_the_claims_sentence
    settings = make_settings(
        sqlite_url,
        pdf_root,
        llm_provider="vllm",
        llm_base_url=scripted_llm.base_url,
        llm_model="scripted-model",
    )
    async with app_client(settings) as client:
        results = await golden_results(client)
    # No citation fell back to the word-overlap judge: the model chose every one.
    assert {result["reason"] for _, rs in results for result in rs} <= {None, "unsupported"}
    wrong = [(case, rs) for case, rs in results if not lit_whole(case, rs)]
    assert len(GOLDEN) - len(wrong) >= REQUIRED, report(wrong)


async def test_golden_rules_by_word_overlap_light_no_piece(sqlite_url: str, pdf_root: Path) -> None:
    """Without an LLM the word-overlap judge chooses: every claim is its whole sentence, and
    whatever is lit of it is the whole sentence, never a piece (sentences of stop words alone,
    "What is your name?", "How about you?", are lit by no overlap of words: the judge's limit)."""
    async with app_client(make_settings(sqlite_url, pdf_root)) as client:
        results = await golden_results(client)
    wrong = [(case, rs) for case, rs in results if not no_piece_lit(case, rs)]
    assert len(GOLDEN) - len(wrong) >= REQUIRED, report(wrong)


async def test_a_chunkers_sentences_are_lit_whole_on_the_pdf(
    database_url: str, pdf_root: Path, tmp_path: Path
) -> None:
    async with app_client(make_settings(database_url, pdf_root)) as client:
        results = await chunker_results(client, tmp_path)
    for name, (_, sentence) in CHUNKER_CASES.items():
        result = results[name]
        assert lit_whole_on_the_pdf(result, sentence), (
            name,
            result["claims"],
            result["highlights"],
        )
