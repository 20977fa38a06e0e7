"""The selection benchmark's judge: what counts as evidence, which chunks are cited, the scores."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from bench.selection_metrics import (
    ChunkText,
    Passage,
    Question,
    holding_chunks,
    is_evidence,
    random_baseline,
    score_choice,
    tokens,
)
from tests.fixtures.llm_server import ScriptedLLM

PASSAGE = Passage(
    "Wholesale Division\nNet sales of $4.2 billion in the current year compared to $3.9 billion "
    "in the prior year, an increase of 8%;",
    page=5,
)


def test_tokens_fold_case_and_accents_and_keep_numbers_whole() -> None:
    assert tokens("Résumé: 3,142,308 units (8.4%)") == ["resume", "3142308", "units", "8.4"]
    assert tokens("FY2022") == ["fy", "2022"]


def test_the_passage_s_own_sentence_is_evidence() -> None:
    sentence = "Net sales of $4.2 billion in the current year compared to $3.9 billion in the prior"
    assert is_evidence(sentence + " year, an increase of 8%;", PASSAGE)


def test_the_same_template_with_other_figures_is_not_evidence() -> None:
    other = (
        "Net sales of $1.1 billion in the current year compared to $1.3 billion in the prior "
        "year, a decrease of 15%;"
    )
    assert not is_evidence(other, PASSAGE)


def test_a_bare_heading_is_not_evidence_but_a_short_passage_can_be() -> None:
    assert not is_evidence("Wholesale Division", PASSAGE)
    assert is_evidence("Wholesale Division", Passage("Wholesale Division", page=1))


def test_the_passage_s_words_in_another_order_are_not_evidence() -> None:
    shuffled = "The prior year compared billion sales in the current net of an increase"
    assert not is_evidence(shuffled, PASSAGE)


def chunk(cid: str, text: str, pages: tuple[int, int] = (5, 5)) -> ChunkText:
    return ChunkText(cid, text, *pages)


def test_chunks_holding_a_passage_split_across_them_are_both_cited() -> None:
    head = chunk("c1", "Retail Division\nSales fell. Wholesale Division\nNet sales of $4.2 billion")
    tail = chunk(
        "c2",
        "in the current year compared to $3.9 billion in the prior year, an increase of 8%; "
        "Operating margin was flat.",
    )
    assert sorted(holding_chunks(PASSAGE, [head, tail])) == ["c1", "c2"]


def test_a_chunk_echoing_only_the_template_or_on_another_page_is_not_cited() -> None:
    holder = chunk("c1", PASSAGE.text)
    echo = chunk(
        "c2",
        "Net sales of $1.0 billion in the current year compared to $0.9 billion in the prior year.",
    )
    elsewhere = chunk("c3", PASSAGE.text, pages=(7, 7))
    assert holding_chunks(PASSAGE, [echo, holder, elsewhere]) == ["c1"]


EVIDENCE = (
    "Net sales of $4.2 billion in the current year compared to $3.9 billion in the prior year, "
    "an increase of 8%;"
)
OTHERS = ["Wholesale Division", "Operating margin was flat.", "The board met twice."]


def question() -> Question:
    return Question([PASSAGE], {"c1": [OTHERS[0], EVIDENCE, *OTHERS[1:]]}, [["c1"]])


def test_score_counts_hits_coverage_and_precision() -> None:
    score = score_choice(question(), {"c1": [EVIDENCE, OTHERS[1]], "not-cited": [EVIDENCE]})
    summary = score.summary()
    assert summary["evidence_hit"] == 1.0
    assert summary["precision"] == 0.5
    assert summary["highlights"] == 2
    # The heading's two tokens are reachable in the chunk but not shown by the chosen sentence.
    reachable = len(PASSAGE.words)
    assert summary["coverage"] == pytest.approx((reachable - 2) / reachable)


def test_choosing_nothing_scores_zero_without_dividing_by_zero() -> None:
    summary = score_choice(question(), {"c1": []}).summary()
    assert (summary["evidence_hit"], summary["coverage"], summary["precision"]) == (0, 0, 0)


def test_random_baseline_is_the_expected_score_of_uniform_draws() -> None:
    one = random_baseline(question(), {"c1": 1}, draws=4000, rng=random.Random(1)).summary()
    # One sentence of four is evidence: a single draw is evidence a quarter of the time.
    assert one["precision"] == pytest.approx(0.25, abs=0.03)
    assert one["evidence_hit"] == pytest.approx(0.25, abs=0.03)
    every = random_baseline(question(), {"c1": 4}, draws=3, rng=random.Random(1)).summary()
    everything = score_choice(question(), {"c1": [OTHERS[0], EVIDENCE, *OTHERS[1:]]}).summary()
    assert every == pytest.approx(everything)


@pytest.mark.slow
def test_the_benchmark_exits_cleanly_without_the_shared_corpus(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "bench" / "selection_eval.py"
    done = subprocess.run(
        [sys.executable, str(script), "--qa", str(tmp_path / "absent.jsonl")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "selection_eval skipped" in done.stdout


@pytest.mark.slow
def test_the_benchmark_runs_end_to_end_on_the_shared_qa(
    shared_pdfs: Path, tmp_path: Path, scripted_llm: ScriptedLLM
) -> None:
    script = Path(__file__).resolve().parents[2] / "bench" / "selection_eval.py"
    output = tmp_path / "selection.json"
    qa = shared_pdfs / "qa" / "financebench_dev.jsonl"
    # A "real model" row through the environment, served here by the scripted server.
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIGHLIGHT_")}
    env |= {
        "HIGHLIGHT_LLM_PROVIDER": "vllm",
        "HIGHLIGHT_LLM_BASE_URL": scripted_llm.base_url,
        "HIGHLIGHT_LLM_MODEL": "stand-in",
    }
    done = subprocess.run(
        [sys.executable, str(script), "--qa", str(qa), "--draws", "50", "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(output.read_text())
    assert result["unreachable_passages"] == 0
    oracle = result["rows"]["LLM path, oracle replay (upper bound)"]
    # The replayed choice is the judge's own: anything short of perfect is lost in the pipeline.
    assert (oracle["evidence_hit"], oracle["precision"], oracle["llm_batches"]) == (1.0, 1.0, 7)
    lexical = result["rows"]["lexical selector (no LLM)"]
    assert lexical["evidence_hit"] > lexical["random"]["evidence_hit"]
    assert lexical["precision"] > lexical["random"]["precision"]
    assert result["rows"]["LLM vllm stand-in"]["llm_batches"] == 7
    assert len(scripted_llm.requests) == 7
