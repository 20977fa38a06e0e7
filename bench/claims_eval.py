"""Do a citation's highlights support its own claim, and not another claim of the same answer?

Answers with several markers are built from the FinanceBench questions of ``../shared/pdfs/qa``
(both files), on the real app (in-process over ASGI, real SQLite, the real filings):

* joined answers: two or three questions on one filing, their reference answers joined into one
  answer, every sentence of answer k closed by the marker ``[k]``; citation k cites the chunks
  holding question k's evidence (a chunk holding the evidence of two questions is cited by
  both). Claim k's evidence: question k's passages;
* same-chunk answers: two sentences of one cited chunk (each with a figure, far apart, not
  evidence for each other) restated as ``s1 [1]. s2 [2].``, both markers citing that one chunk.
  Claim k's evidence: sentence k.

Each request is sent twice, in the same run: claim-aware (as built) and claim-blind (the markers
taken out of the answer, so every citation supports the whole answer, as before claims existed).
Rows: the lexical selector, the LLM path against the scripted server answering with each
passage's own evidence (oracle replay: an upper bound of the pipeline, not a model), and a real
model when HIGHLIGHT_LLM_PROVIDER, _BASE_URL, _MODEL (and _API_KEY) are set.

Per citation, a highlight is *own* when it is evidence (``selection_metrics.is_evidence``) for a
passage of the citation's own claim, and *leaked* when it is evidence only for another claim's.
Own-claim precision = own / highlights; leakage = leaked / highlights; own hit = share of claims
with at least one own highlight. Targets (issue 16): own-claim precision >= 0.9, leakage <= 0.05.

    .venv/bin/python bench/claims_eval.py [--max-per-filing 3] [--output PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from filings import ingested, work_dir, work_settings  # noqa: E402
from selection_eval import (  # noqa: E402
    SHARED,
    Case,
    make_case,
    model_settings,
    oracle_settings,
)
from selection_metrics import ChunkText, Passage, is_evidence, tokens  # noqa: E402

from app.selection.claims import claims_by_citation  # noqa: E402
from app.selection.sentences import split_sentences  # noqa: E402
from tests.fixtures.app import app_client  # noqa: E402
from tests.fixtures.llm_server import JSON, ScriptedLLM, passage_lines  # noqa: E402
from tests.fixtures.llm_server import Passage as PromptPassage  # noqa: E402

QA_FILES = ("financebench_dev.jsonl", "financebench_more.jsonl")
RESULTS = ROOT / "bench" / "results"
_MARKERS = re.compile(r" ?\[\d+\]")


@dataclass
class Claimed:
    """One multi-claim request and, per claim (its marker's number), its evidence passages."""

    kind: str
    request: dict[str, Any]
    evidence: dict[str, list[Passage]]  # citation id -> passages

    def blind(self) -> dict[str, Any]:
        return {**self.request, "answer": _MARKERS.sub("", self.request["answer"])}


def marked(answer: str, label: str) -> str:
    """Every sentence of ``answer`` closed by the marker ``[label]`` before its full stop (one is
    added to a table row that has none), as chat answers cite."""
    parts = []
    for sentence in split_sentences(answer):
        text = sentence.text.rstrip()
        end = len(text.rstrip(".!?"))
        parts.append(f"{text[:end]} [{label}]{text[end:] or '.'}")
    return " ".join(parts)


def joined(cases: list[Case]) -> Claimed:
    request: dict[str, Any] = {
        "query": " ".join(c.request["query"] for c in cases),
        "answer": " ".join(marked(c.request["answer"], str(k)) for k, c in enumerate(cases, 1)),
        "citations": [
            {"chunk_id": cit["chunk_id"], "citation_id": str(k)}
            for k, c in enumerate(cases, 1)
            for cit in c.request["citations"]
        ],
    }
    evidence = {str(k): c.question.passages for k, c in enumerate(cases, 1)}
    return Claimed("joined", request, evidence)


def _figure(text: str) -> bool:
    return bool(re.search(r"\d[\d,.]*\d|\d%", text))


def same_chunk(case: Case, chunk: ChunkText) -> Claimed | None:
    """Two far-apart sentences of one chunk, each with a figure and at least 8 words, neither
    evidence for the other, cited by two markers of the same chunk."""
    sentences = [
        s.text for s in split_sentences(chunk.text) if len(s.text.split()) >= 8 and _figure(s.text)
    ]
    for i, first in enumerate(sentences):
        for second in sentences[i + 2 :]:
            a, b = Passage(first, 0), Passage(second, 0)
            if is_evidence(first, b) or is_evidence(second, a):
                continue
            answer = f"{marked(first, '1')} {marked(second, '2')}"
            request = {
                "query": case.request["query"],
                "answer": answer,
                "citations": [
                    {"chunk_id": chunk.id, "citation_id": "1"},
                    {"chunk_id": chunk.id, "citation_id": "2"},
                ],
            }
            return Claimed("same chunk", request, {"1": [a], "2": [b]})
    return None


def build(
    rows: list[dict[str, Any]], chunks: dict[str, list[ChunkText]], cap: int, per_filing: int
) -> list[Claimed]:
    by_file: dict[str, list[Case]] = {}
    for row in rows:
        case = make_case(row, chunks[row["pdf_file"]], cap)
        if case.request["citations"]:
            by_file.setdefault(row["pdf_file"], []).append(case)
    out: list[Claimed] = []
    for name, cases in sorted(by_file.items()):
        for start in range(0, min(len(cases), 2 * per_filing) - 1, 2):
            group = (
                cases[start : start + 3] if len(cases) - start == 3 else cases[start : start + 2]
            )
            out.append(joined(group))
        by_id = {c.id: c for c in chunks[name]}
        made = 0
        for case in cases:
            for cited in case.request["citations"]:
                pair = same_chunk(case, by_id[cited["chunk_id"]])
                if pair is not None and made < per_filing:
                    out.append(pair)
                    made += 1
                    break
    return out


@dataclass
class Tally:
    highlights: int = 0
    own: int = 0
    leaked: int = 0
    claims: int = 0
    claims_hit: int = 0
    per_kind: dict[str, list[int]] = field(default_factory=dict)

    def add(self, kind: str, highlights: int, own: int, leaked: int, hit: bool) -> None:
        self.highlights += highlights
        self.own += own
        self.leaked += leaked
        self.claims += 1
        self.claims_hit += hit
        row = self.per_kind.setdefault(kind, [0, 0, 0, 0, 0])
        for i, value in enumerate((highlights, own, leaked, 1, int(hit))):
            row[i] += value

    @staticmethod
    def ratios(highlights: int, own: int, leaked: int, claims: int, hit: int) -> dict[str, float]:
        return {
            "highlights": highlights,
            "own_precision": own / highlights if highlights else 0.0,
            "leakage": leaked / highlights if highlights else 0.0,
            "own_hit": hit / claims if claims else 0.0,
            "claims": claims,
        }

    def summary(self) -> dict[str, Any]:
        total = self.ratios(self.highlights, self.own, self.leaked, self.claims, self.claims_hit)
        return {**total, "kinds": {k: self.ratios(*v) for k, v in self.per_kind.items()}}


def judge(claimed: Claimed, results: list[dict[str, Any]], tally: Tally) -> None:
    """Each citation id once (a claim cited to several chunks pools their highlights)."""
    texts: dict[str, list[str]] = {}
    for result in results:
        texts.setdefault(result["citation_id"], []).extend(h["text"] for h in result["highlights"])
    for label, shown in texts.items():
        mine = claimed.evidence[label]
        others = [p for other, ps in claimed.evidence.items() if other != label for p in ps]
        own = sum(any(is_evidence(t, p) for p in mine) for t in shown)
        leaked = sum(
            not any(is_evidence(t, p) for p in mine) and any(is_evidence(t, p) for p in others)
            for t in shown
        )
        tally.add(claimed.kind, len(shown), own, leaked, own > 0)


def oracle(claims: list[Claimed]) -> Any:
    """Per prompt passage: the sentences that are evidence for its claim's passages (all the
    answer's, for a passage cited for the whole answer)."""
    by_answer = {}
    for c in claims:
        by_answer[c.request["answer"]] = c
        by_answer[c.blind()["answer"]] = c

    def chooser(passage: PromptPassage, allowed: list[int], body: JSON) -> list[int]:
        prompt = body["messages"][-1]["content"]
        answer = prompt.split("Answer:\n", 1)[1].split("\nPassages:", 1)[0].strip()
        claimed = by_answer[answer]
        if passage.claim is None:
            wanted = [p for ps in claimed.evidence.values() for p in ps]
        else:
            # The prompt quotes the claim normalised: the label whose sentences share most of
            # its words.
            said = set(tokens(passage.claim))
            label = max(
                claimed.evidence,
                key=lambda k: max(len(said & set(tokens(s))) for s in _claims_of(claimed, k)),
            )
            wanted = claimed.evidence[label]
        return [
            i
            for i, text in passage_lines(passage, body)
            if i in allowed and any(is_evidence(text, p) for p in wanted)
        ]

    return chooser


def _claims_of(claimed: Claimed, label: str) -> list[str]:
    """The claims ``[label]`` closes, as the service finds them."""
    found = claims_by_citation(claimed.request["answer"], list(claimed.evidence))
    return [c.text for c in found[label]] or [""]


async def run(settings: Any, claims: list[Claimed], aware: bool) -> Tally:
    tally = Tally()
    async with app_client(settings) as client:
        for claimed in claims:
            request = claimed.request if aware else claimed.blind()
            response = await client.post("/v2/highlights/batch", json=request)
            response.raise_for_status()
            judge(claimed, response.json()["results"], tally)
    return tally


async def run_all(args: argparse.Namespace) -> dict[str, Any]:
    rows = [
        json.loads(line)
        for name in QA_FILES
        if (SHARED / "qa" / name).is_file()
        for line in (SHARED / "qa" / name).read_text().splitlines()
        if line.strip()
    ]
    work = work_dir(args.work, "claims-eval-")
    base = work_settings(work)
    chunks = await ingested(base, work, rows)
    claims = build(rows, chunks, base.max_sentences_per_chunk, args.max_per_filing)
    kinds = {k: sum(c.kind == k for c in claims) for k in ("joined", "same chunk")}
    print(f"{len(claims)} answers ({kinds}), {sum(len(c.evidence) for c in claims)} claims")
    rows_out: dict[str, Any] = {}
    rows_out["lexical, claim-aware"] = (await run(base, claims, True)).summary()
    rows_out["lexical, claim-blind"] = (await run(base, claims, False)).summary()
    server = ScriptedLLM().start()
    server.chooser = oracle(claims)
    try:
        scripted = oracle_settings(base, server)
        rows_out["LLM oracle replay, claim-aware"] = (await run(scripted, claims, True)).summary()
        rows_out["LLM oracle replay, claim-blind"] = (await run(scripted, claims, False)).summary()
    finally:
        server.stop()
    real = model_settings(base)
    if real is not None:
        name = f"LLM {real.llm_provider} {real.llm_model}"
        rows_out[f"{name}, claim-aware"] = (await run(real, claims, True)).summary()
        rows_out[f"{name}, claim-blind"] = (await run(real, claims, False)).summary()
    else:
        print("no real model: set HIGHLIGHT_LLM_PROVIDER, _BASE_URL, _MODEL (and _API_KEY)")
    return {"answers": len(claims), "kinds": kinds, "rows": rows_out}


def print_table(out: dict[str, Any]) -> None:
    heads = ("claims", "hl", "own.prec", "leakage", "own.hit")
    print(f"\n{'method':34} {'answers':11} " + " ".join(f"{h:>8}" for h in heads))
    for name, row in out["rows"].items():
        for kind, part in [("all", row), *row["kinds"].items()]:
            cells = [f"{part['claims']:8.0f}", f"{part['highlights']:8.0f}"]
            cells += [f"{part[k]:8.3f}" for k in ("own_precision", "leakage", "own_hit")]
            print(f"{name[:34]:34} {kind:11} " + " ".join(cells))
    best = out["rows"]["lexical, claim-aware"]
    met = best["own_precision"] >= 0.9 and best["leakage"] <= 0.05
    print(
        "\nown.prec: highlights that are evidence for their citation's own claim; leakage:"
        "\nhighlights that are evidence only for another claim of the answer; own.hit: claims"
        "\nwith at least one own highlight. Target (lexical, claim-aware, all): own.prec >= 0.9,"
        f"\nleakage <= 0.05: {'met' if met else 'NOT met'}."
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--max-per-filing", type=int, default=3, help="answers of each kind")
    parser.add_argument("--output", type=Path, help="JSON path (default: bench/results/...)")
    parser.add_argument("--work", type=Path, help="shared work folder (filings.py)")
    arguments = parser.parse_args()
    if not (SHARED / "qa" / QA_FILES[0]).is_file():
        print("no QA files (../shared/pdfs is absent): claims_eval skipped")
        sys.exit(0)
    started = time.perf_counter()
    result = asyncio.run(run_all(arguments))
    print_table(result)
    result["seconds"] = round(time.perf_counter() - started, 1)
    path = arguments.output or RESULTS / f"claims_eval-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, ensure_ascii=False, indent=1))
    print(f"\n{result['seconds']} s; wrote {path}")
