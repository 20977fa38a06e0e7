"""How well does the service choose the sentences that hold an answer's evidence?

On FinanceBench questions with labelled evidence (``../shared/pdfs/qa/financebench_dev.jsonl``),
each question's PDF is ingested the way ``highlight-service ingest`` does, the chunks holding each
evidence passage are cited as a retriever would, and POST /v2/highlights/batch is called on the
real app (in-process over ASGI, real SQLite, real PDFs) with the question and the reference answer.
Rows, all measured in the same run:

* random sentences: per cited chunk, as many sentences as the lexical selector chose, drawn
  uniformly (seeded, averaged over ``--draws`` draws);
* lexical selector: no LLM configured (the service's degraded mode);
* LLM, oracle replay: the LLM path end to end (prompt, narrowed schema, tiers, validation,
  location) against the scripted OpenAI-compatible server of the tests, which answers with the
  sentences the judge counts as evidence. An upper bound of the pipeline, not a model's quality;
* LLM, a real model: when HIGHLIGHT_LLM_PROVIDER, _BASE_URL, _MODEL (and _API_KEY) are set.

Every row also shows the random baseline drawn with that row's own numbers of sentences per chunk.
What counts as evidence, which chunks are cited, and the scores: see ``selection_metrics.py``.

    .venv/bin/python bench/selection_eval.py [--qa PATH] [--draws 2000] [--seed 8] [--verbose]
        [--output PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from filings import ingested, work_dir, work_settings  # noqa: E402
from pydantic import SecretStr  # noqa: E402
from selection_metrics import (  # noqa: E402
    ChunkText,
    Passage,
    Question,
    Score,
    holding_chunks,
    random_baseline,
    score_choice,
)

from app.core.config import Settings  # noqa: E402
from app.selection.sentences import split_sentences  # noqa: E402
from tests.fixtures.app import app_client  # noqa: E402
from tests.fixtures.llm_server import JSON, Chooser, ScriptedLLM, passage_lines  # noqa: E402
from tests.fixtures.llm_server import Passage as PromptPassage  # noqa: E402

SHARED = ROOT.parent / "shared" / "pdfs"
DEFAULT_QA = SHARED / "qa" / "financebench_dev.jsonl"
RESULTS = ROOT / "bench" / "results"


@dataclass
class Case:
    """One QA row made ready: the request the frontend would send and what judges its reply."""

    id: str
    request: dict[str, Any]
    question: Question


@dataclass
class Run:
    name: str
    choices: list[dict[str, list[str]]]  # per case: cited chunk id -> chosen sentence texts
    llm_batches: int = 0


def make_case(row: dict[str, Any], chunks: list[ChunkText], cap: int) -> Case:
    # FinanceBench's evidence_page_num is 0-based; chunks carry 1-based pages.
    passages = [Passage(e["evidence_text"], e["evidence_page_num"] + 1) for e in row["evidence"]]
    holders = [holding_chunks(p, chunks) for p in passages]
    cited = [c for c in chunks if any(c.id in h for h in holders)]
    sentences = {c.id: [s.text for s in split_sentences(c.text)[:cap]] for c in cited}
    request = {
        "query": row["question"],
        "answer": row["answer"],
        "citations": [{"chunk_id": c.id, "citation_id": str(i)} for i, c in enumerate(cited, 1)],
    }
    return Case(row["financebench_id"], request, Question(passages, sentences, holders))


def oracle(question: Question) -> Chooser:
    """The scripted server's choice: the prompt's sentences that are evidence, those carrying most
    of the evidence's tokens first (the schema caps how many)."""

    def chooser(passage: PromptPassage, allowed: list[int], body: JSON) -> list[int]:
        ranked = []
        for number, text in passage_lines(passage, body):
            judged = question.judge(text)
            carried = sum(
                sum((p.counts & judged.counts).values())
                for p, hit in zip(question.passages, judged.verdict, strict=True)
                if hit
            )
            if carried:
                ranked.append((-carried, number))
        return [i for _, i in sorted(ranked) if i in allowed]

    return chooser


async def run(
    name: str, settings: Settings, cases: list[Case], server: ScriptedLLM | None = None
) -> Run:
    result = Run(name, [])
    async with app_client(settings) as client:
        for case in cases:
            if not case.request["citations"]:
                # No chunk holds any of its evidence (the header counts such passages): nothing
                # to cite, so nothing chosen; a batch needs at least one citation.
                result.choices.append({})
                continue
            if server is not None:
                server.chooser = oracle(case.question)
            response = await client.post("/v2/highlights/batch", json=case.request)
            response.raise_for_status()
            data = response.json()
            result.llm_batches += data["method"] == "llm"
            result.choices.append(
                {r["chunk_id"]: [h["text"] for h in r["highlights"]] for r in data["results"]}
            )
    return result


def oracle_settings(base: Settings, server: ScriptedLLM) -> Settings:
    """``base`` with the LLM path pointed at the scripted server (oracle replay)."""
    return base.model_copy(
        update={
            "llm_provider": "vllm",
            "llm_base_url": server.base_url,
            "llm_model": "scripted-oracle",
        }
    )


def model_settings(base: Settings) -> Settings | None:
    env = os.environ
    provider = env.get("HIGHLIGHT_LLM_PROVIDER", "none")
    if provider == "none" or not env.get("HIGHLIGHT_LLM_BASE_URL"):
        return None
    return base.model_copy(
        update={
            "llm_provider": provider,
            "llm_base_url": env["HIGHLIGHT_LLM_BASE_URL"],
            "llm_model": env.get("HIGHLIGHT_LLM_MODEL", ""),
            "llm_api_key": SecretStr(env.get("HIGHLIGHT_LLM_API_KEY", "")),
            "llm_timeout_s": 60.0,
            "llm_max_retries": 2,
        }
    )


def totals(
    cases: list[Case], outcome: Run, draws: int, seed: int
) -> tuple[dict[str, float], dict[str, float], list[dict[str, Any]]]:
    ours, rand = Score(), Score()
    per_case = []
    rng = random.Random(seed)
    for case, chosen in zip(cases, outcome.choices, strict=True):
        score = score_choice(case.question, chosen)
        counts = {cid: len(texts) for cid, texts in chosen.items()}
        base = random_baseline(case.question, counts, draws, rng)
        for total, part in ((ours, score), (rand, base)):
            total.passages += part.passages
            total.add(part)
        per_case.append(
            {
                "id": case.id,
                **score.summary(),
                "random": base.summary(),
                "chosen": {
                    cid: [{"text": t, "evidence": any(case.question.judge(t).verdict)} for t in ts]
                    for cid, ts in chosen.items()
                },
            }
        )
    return ours.summary(), rand.summary(), per_case


def print_table(rows: list[tuple[str, dict[str, float], dict[str, float], str]]) -> None:
    heads = ("pass.", "hit", "cover", "prec", "hl", "| r.hit", "r.cov", "r.prec", "LLM")
    print(f"\n{'method':46} " + " ".join(f"{h:>7}" for h in heads))
    for name, ours, rand, llm in rows:
        cells = [f"{ours['passages']:7.0f}"]
        cells += [f"{ours[k]:7.3f}" for k in ("evidence_hit", "coverage", "precision")]
        cells += [f"{ours['highlights']:7.0f}", f"| {rand['evidence_hit']:5.3f}"]
        cells += [f"{rand[k]:7.3f}" for k in ("coverage", "precision")] + [f"{llm:>7}"]
        print(f"{name[:46]:46} " + " ".join(cells))
    print(
        "\nhit: share of evidence passages with at least one evidence highlight; cover: share"
        "\nof the evidence's tokens shown by its evidence highlights; prec: share of highlights"
        "\nthat are evidence; hl: highlights; r.*: random sentences, as many per chunk as that"
        "\nrow chose."
    )


async def run_all(args: argparse.Namespace) -> tuple[list[Case], list[Run]]:
    rows_in = [json.loads(line) for line in args.qa.read_text().splitlines() if line.strip()]
    work = work_dir(args.work, "selection-eval-")
    base = work_settings(work)
    real = model_settings(base)  # before any work: a misconfigured model fails the run at once
    chunks = await ingested(base, work, rows_in)
    cases = [make_case(r, chunks[r["pdf_file"]], base.max_sentences_per_chunk) for r in rows_in]
    runs = [await run("lexical selector (no LLM)", base, cases)]
    server = ScriptedLLM().start()
    try:
        scripted = oracle_settings(base, server)
        runs.append(await run("LLM path, oracle replay (upper bound)", scripted, cases, server))
    finally:
        server.stop()
    if real is not None:
        runs.append(await run(f"LLM {real.llm_provider} {real.llm_model}", real, cases))
    else:
        print("no real model: set HIGHLIGHT_LLM_PROVIDER, _BASE_URL, _MODEL (and _API_KEY)")
    return cases, runs


def report(cases: list[Case], runs: list[Run], args: argparse.Namespace) -> dict[str, Any]:
    table = []
    unreachable = sum(not h for c in cases for h in c.question.holders)
    out: dict[str, Any] = {
        "qa": str(args.qa),
        "draws": args.draws,
        "seed": args.seed,
        "questions": len(cases),
        "passages": sum(len(c.question.passages) for c in cases),
        "unreachable_passages": unreachable,
        "cited_chunks": sum(len(c.request["citations"]) for c in cases),
        "rows": {},
        "per_question": {},
    }
    for i, outcome in enumerate(runs):
        ours, rand, per_case = totals(cases, outcome, args.draws, args.seed)
        if i == 0:
            table.append(("random sentences (as many as lexical)", rand, rand, "-"))
            out["rows"]["random (as many as lexical)"] = rand
        llm = f"{outcome.llm_batches}/{len(cases)}" if i else "-"
        table.append((outcome.name, ours, rand, llm))
        out["rows"][outcome.name] = {**ours, "random": rand, "llm_batches": outcome.llm_batches}
        out["per_question"][outcome.name] = per_case
    print(
        f"{out['questions']} questions, {out['passages']} passages ({unreachable} held by no "
        f"chunk), {out['cited_chunks']} cited chunks"
    )
    print_table(table)
    if args.verbose:
        print_choices(cases, runs)
    return out


def print_choices(cases: list[Case], runs: list[Run]) -> None:
    for n, case in enumerate(cases):
        print(f"\n{case.id}: {case.request['query']}\n  answer: {case.request['answer'][:160]}")
        for outcome in runs:
            print(f"  {outcome.name}:")
            for cid, texts in outcome.choices[n].items():
                for text in texts:
                    mark = "E" if any(case.question.judge(text).verdict) else "-"
                    print(f"    {mark} {cid[-5:]} {text[:110]}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--qa", type=Path, default=DEFAULT_QA)
    parser.add_argument("--draws", type=int, default=2000, help="random-baseline draws")
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--verbose", action="store_true", help="print every chosen sentence")
    parser.add_argument("--output", type=Path, help="JSON path (default: bench/results/...)")
    parser.add_argument("--work", type=Path, help="shared work folder (filings.py)")
    arguments = parser.parse_args()
    if not arguments.qa.is_file():
        print(f"no QA file at {arguments.qa} (../shared/pdfs is absent): selection_eval skipped")
        sys.exit(0)
    started = time.perf_counter()
    result = report(*asyncio.run(run_all(arguments)), arguments)
    result["seconds"] = round(time.perf_counter() - started, 1)
    path = arguments.output or RESULTS / f"selection_eval-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, ensure_ascii=False, indent=1))
    print(f"\n{result['seconds']} s; wrote {path}")
