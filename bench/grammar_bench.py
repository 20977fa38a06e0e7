"""How many distinct schemas realistic highlight batches send, per provider form: the old schema
(one shape per passage position) against the bucketed one (``app.highlights.contract``).

vLLM caches compiled grammars by schema text: a schema it has not seen costs a compile before
the first token. So the number of distinct schemas among many batches is the number of compiles.

Batches are drawn (seeded) from a histogram of sentences per chunk, ``bench/sentence_counts.json``,
measured on real filings (``--measure`` redoes it): each citation is one chunk with a count drawn
from it, cited for 1 or 2 claims (each claim one passage, as ``choosing.py`` asks). Two workloads:
2,000 batches of 10 citations, and 2,000 of 1 to 20. Forms: *full* (vLLM: response_format and
structured_outputs), *strict* (OpenAI, OpenRouter's first variant), *basic* (OpenRouter's second:
no bounds, refs inlined). Canonical JSON (sorted keys) counts as one schema. Goal: <= 20 distinct
full schemas among the 2,000 10-citation batches. Pure (no server), about ten seconds.

    .venv/bin/python bench/grammar_bench.py [--batches 2000] [--seed 7]
    .venv/bin/python bench/grammar_bench.py --measure   # from ../shared/pdfs/financebench
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from app.core.config import Settings
from app.highlights.contract import ChunkChoice, narrowed_schema
from app.llm.providers import build_profile
from app.llm.schema import OPENAI_ENUM_BUDGET, count_enum_values, inline_refs, portable

ROOT = Path(__file__).resolve().parents[1]
HISTOGRAM = ROOT / "bench" / "sentence_counts.json"
FILINGS = ROOT.parent / "shared" / "pdfs" / "financebench"
MAX_PER_CHUNK: int = Settings.model_fields["max_highlights_per_chunk"].default
CAP: int = Settings.model_fields["max_sentences_per_chunk"].default
GOAL = 20
JSON = dict[str, Any]
Form = Callable[[JSON], JSON]


# The old scheme, as app/highlights/contract.py and app/llm/schema.py built it before the verdicts:
# per passage position an id list whose ids are an enum of that chunk's sentence numbers (one
# $defs entry per sentence count), in a prefixItems tuple of the batch's exact length; the
# strict subset's form turned the tuple into an object keyed p1..pN.
def old_schema(counts: Sequence[int], max_per_chunk: int) -> JSON:
    defs: JSON = {
        f"S{n}": {"type": "integer", "enum": list(range(1, n + 1))} for n in sorted(set(counts))
    }
    prefix = [
        {"type": "array", "items": {"$ref": f"#/$defs/S{n}"}, "maxItems": max_per_chunk}
        for n in counts
    ]
    results = {
        "type": "array",
        "prefixItems": prefix,
        "items": False,
        "minItems": len(counts),
        "maxItems": len(counts),
    }
    return {
        "title": "HighlightBatchResult",
        "type": "object",
        "$defs": defs,
        "properties": {"results": results},
        "required": ["results"],
        "additionalProperties": False,
    }


def old_keyed(schema: JSON) -> JSON:
    """The old strict-subset transform of the tuple: position n under key ``pn``."""
    tuple_ = schema["properties"]["results"]
    positions = {f"p{n}": item for n, item in enumerate(tuple_["prefixItems"], 1)}
    keyed = {"type": "object", "properties": positions}
    return {**schema, "properties": {"results": keyed}}


def old_strict(schema: JSON) -> JSON:
    # Past OpenAI's enum budget the old transform sent the ids as ranges (portable still does).
    return portable(old_keyed(schema), bounds=True, enum_budget=OPENAI_ENUM_BUDGET)


def old_basic(schema: JSON) -> JSON:
    return inline_refs(portable(old_keyed(schema), bounds=False, enum_budget=OPENAI_ENUM_BUDGET))


NEW_FORMS: dict[str, Form] = {
    "full": lambda schema: schema,
    "strict": build_profile("openai").strategies[0].shape,
    "basic": build_profile("openrouter").strategies[1].shape,
}
OLD_FORMS: dict[str, Form] = {"full": lambda s: s, "strict": old_strict, "basic": old_basic}


def load_histogram(path: Path = HISTOGRAM) -> dict[int, int]:
    data = json.loads(path.read_text())
    return {int(count): chunks for count, chunks in data["chunks_by_sentence_count"].items()}


def draw_batch(rng: random.Random, histogram: dict[int, int], citations: int) -> list[int]:
    """Sentence counts per passage: ``citations`` chunks drawn from the histogram, each cited
    for one or two claims."""
    counts, weights = list(histogram), list(histogram.values())
    passages: list[int] = []
    for count in rng.choices(counts, weights, k=citations):
        passages += [count] * rng.choice((1, 2))
    return passages


def canonical(schema: JSON) -> str:
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


def distinct(batches: Sequence[Sequence[int]]) -> dict[str, dict[str, int]]:
    """Per scheme and form, the number of distinct schema texts among the batches."""
    texts: dict[str, dict[str, set[str]]] = {"old": {}, "new": {}}
    for counts in batches:
        old = old_schema(counts, MAX_PER_CHUNK)
        new = narrowed_schema([ChunkChoice(n) for n in counts], MAX_PER_CHUNK)
        for scheme, schema, forms in (("old", old, OLD_FORMS), ("new", new, NEW_FORMS)):
            for form, shape in forms.items():
                texts[scheme].setdefault(form, set()).add(canonical(shape(schema)))
    return {scheme: {f: len(t) for f, t in forms.items()} for scheme, forms in texts.items()}


def over_budget(batches: Sequence[Sequence[int]]) -> dict[str, int]:
    """Batches whose strict form would enumerate more ids than OpenAI takes (the old scheme
    then sent ranges instead: the budget, not the ids, decided the schema)."""
    out = {"old": 0, "new": 0}
    for counts in batches:
        old = old_keyed(old_schema(counts, MAX_PER_CHUNK))
        new = narrowed_schema([ChunkChoice(n) for n in counts], MAX_PER_CHUNK)
        out["old"] += count_enum_values(portable(old, bounds=True)) > OPENAI_ENUM_BUDGET
        out["new"] += count_enum_values(portable(new, bounds=True)) > OPENAI_ENUM_BUDGET
    return out


def measure(pdfs: Sequence[Path]) -> JSON:
    """Sentences per chunk of ``pdfs``, chunked as ingest does (``chunk_index`` of the locator's
    index) and split as the service splits them (capped at max_sentences_per_chunk)."""
    from app.pdfs.chunking import chunk_index
    from app.pdfs.extract import build_index
    from app.selection.sentences import split_sentences

    histogram: Counter[int] = Counter()
    for pdf in pdfs:
        for chunk in chunk_index(build_index(pdf)):
            histogram[min(len(split_sentences(chunk.text)), CAP)] += 1
        print(f"  {pdf.name}: {sum(histogram.values())} chunks so far", file=sys.stderr)
    return {
        "comment": (
            "Sentences per chunk: every chunk of the PDFs below, chunked by "
            "app.pdfs.chunking.chunk_index (the ingest path) and split by "
            "app.selection.sentences.split_sentences, capped at max_sentences_per_chunk. "
            "Written by `bench/grammar_bench.py --measure`."
        ),
        "pdfs": f"../shared/pdfs/financebench/*.pdf ({', '.join(p.stem for p in pdfs)})",
        "chunks": sum(histogram.values()),
        "chunks_by_sentence_count": {str(n): histogram[n] for n in sorted(histogram)},
    }


def quantiles(histogram: dict[int, int]) -> str:
    total, seen, out = sum(histogram.values()), 0, []
    marks = iter((0.5, 0.9, 0.99))
    mark: float | None = next(marks)
    for count in sorted(histogram):
        seen += histogram[count]
        while mark is not None and seen >= mark * total:
            out.append(f"p{int(mark * 100)} {count}")
            mark = next(marks, None)
    return ", ".join(out) + f", max {max(histogram)}"


def table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [list(head), *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(head))]
    for row in cells:
        pairs = enumerate(zip(row, widths, strict=True))
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in pairs).rstrip())


def write_histogram(data: JSON, path: Path = HISTOGRAM) -> None:
    # One line per key: the counts stay one line, the file small.
    lines = [f"  {json.dumps(key)}: {json.dumps(value)}" for key, value in data.items()]
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n")


WORKLOADS: dict[str, Callable[[random.Random], int]] = {
    "10 citations": lambda rng: 10,
    "1-20 citations": lambda rng: rng.randint(1, 20),
    "50 citations": lambda rng: 50,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--measure", action="store_true", help=f"rewrite {HISTOGRAM.name}")
    args = parser.parse_args()
    if args.measure:
        pdfs = sorted(FILINGS.glob("*.pdf"))
        if not pdfs:
            print(f"no PDFs in {FILINGS}", file=sys.stderr)
            return 1
        write_histogram(measure(pdfs))
        print(f"wrote {HISTOGRAM}")
    histogram = load_histogram()
    print(f"sentences per chunk ({sum(histogram.values())} chunks): {quantiles(histogram)}")
    print(f"at most {MAX_PER_CHUNK} ids per passage; {args.batches} batches per workload, each")
    print("citation cited for 1 or 2 claims; distinct schemas (canonical JSON) per form\n")
    rows: list[list[object]] = []
    started = time.perf_counter()
    for label, citations in WORKLOADS.items():
        rng = random.Random(args.seed)
        batches = [draw_batch(rng, histogram, citations(rng)) for _ in range(args.batches)]
        counts, budget = distinct(batches), over_budget(batches)
        for scheme in ("old", "new"):
            forms = counts[scheme]
            rows.append(
                [label, scheme, forms["full"], forms["strict"], forms["basic"], budget[scheme]]
            )
    table(("workload", "scheme", "full", "strict", "basic", "strict: ids over enum budget"), rows)
    ten = next(row for row in rows if row[:2] == ["10 citations", "new"])
    verdict = "met" if int(str(ten[2])) <= GOAL else "not met"
    print(f"\ngoal: <= {GOAL} distinct full schemas among {args.batches} 10-citation batches: "
          f"{ten[2]} ({verdict}); {time.perf_counter() - started:.1f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
