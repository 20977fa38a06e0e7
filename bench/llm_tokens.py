"""Tokens a real vLLM server decodes per highlight batch, the reply as a verdict and ids per
passage (``{"results": [["yes", 2, 5], ["no"]]}``) against the positional ids before the verdicts
(``{"results": [[2, 5], []]}``, one schema shape per position), and whether a batch's grammar
serves the next batch (the same bucket now, the same shape before).

Batches of 10 and 50 citations, each a chunk of 8-15 generated sentences cited for one claim, at
most 5 ids per passage (the service's default), go out in each format with its prompts (the
service's builders; the old system prompt for the old format), temperature 0, ``--reps`` times:
the full schema through ``structured_outputs`` and ``response_format`` (vLLM's tiers), and the
strict subset's form (OpenAI, OpenRouter) through ``response_format``. *Decoded*:
``usage.completion_tokens``. *Floor*: the server's /tokenize count of that reply's choice written
compactly, verdicts included (``{"results":[["yes",2,5],["no"]]}``; before, ``{"results":[[2,5],
[]]}``), plus the stop token the decoded count holds too (*bare*: without ``{"results":...}``).
Target, printed, not asserted: <= 1.5 x floor. Grammar reuse: max_tokens=1 requests whose prompt
is in vLLM's prefix cache, sent twice, for (a) a batch whose schema the server has not seen, (b)
other sentence counts, text and chunk ids (the old format: the same counts; the new: the same
bucket), (c) another schema (the old format: other counts; the new: another passage bucket).

    make vllm-tokens      # a 16,384-token server started, the 10-citation batch, server stopped
    HIGHLIGHT_VLLM_MAX_MODEL_LEN=65536 scripts/vllm.sh start 8012
    .venv/bin/python bench/llm_tokens.py [--base-url URL] [--sizes 10,50] [--reps 3]

Server: HIGHLIGHT_TEST_VLLM_URL, else ``scripts/vllm.sh url``. Batches that do not fit its context
are skipped (the suite's server: 2048 tokens; a 10-citation prompt takes ~10k of the tiny model's
byte-level tokens, 50 citations ~50k). Exit 1: no server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: bench.grammar_bench

from app.core.config import Settings  # noqa: E402
from app.highlights.contract import ChunkChoice, id_bound, narrowed_schema, passage_bounds  # noqa: E402
from app.highlights.prompts import PromptChunk, system_prompt, user_prompt  # noqa: E402
from app.llm.providers import build_profile  # noqa: E402
from app.selection.sentences import Sentence  # noqa: E402
from bench.grammar_bench import old_schema, old_strict  # noqa: E402

MAX_PER_CHUNK: int = Settings.model_fields["max_highlights_per_chunk"].default
TARGET = 1.5
JSON = dict[str, Any]
STRICT = build_profile("openai").strategies[0]

QUERY = "What did the House hear about the water programme, the tender and road safety?"
CLAIMS = (
    "The water programme will cost 12.5 billion shillings over three years.",
    "Each county pays one third of the running costs.",
    "Eleven bids were received and three firms were short-listed.",
    "Road deaths rose by 8 per cent in 2024.",
)
_WHO = "The Minister for Water|The Committee on Finance|Ms. Wanjiru|The Treasury|Mr. Kamau|The \
Auditor-General|The procurement committee".split("|")
_SAID = "said that|told the House that|confirmed that|noted that|warned that".split("|")
_WHAT = """the programme will cost {a}.{b} billion shillings over {c} years
road deaths rose by {c} per cent in {y}, to {a},{b}00 people
the tender was advertised in March and closed on {c} April {y}
{a} bids were received and {c} firms were short-listed after an evaluation
each county pays one third of the running costs and the government the rest
cash flows to the counties were delayed by an average of {a} days in {y}
the deficit for the fiscal year {y} was {c}.{b} per cent of output
piped water will reach {a} thousand households in the northern counties by {y}""".splitlines()

# The positional format's instructions, as app/highlights/prompts.py worded them before verdicts.
OLD_SYSTEM = """\
You check which sentences of cited source passages support an answer that was given to a user.
Each passage is cited for a claim of the answer (or for the whole answer). For every passage, \
list the ids of the sentences that state facts its own claim relies on, most important first, at \
most {max_per_chunk} per passage; a sentence that only supports another claim does not count. \
If no sentence of a passage supports its claim, give an empty list for it. Answer with \
{{"results": [...]}}: one list per passage, in the order of the passages' numbers."""


@dataclass(frozen=True)
class Format:
    label: str
    tier: str  # "structured_outputs" or "json_schema"
    old: bool = False  # positional ids, before the verdicts
    strict: bool = False  # the strict subset's form (OpenAI, OpenRouter), through response_format


FORMATS = (
    Format("old positional (structured_outputs)", "structured_outputs", old=True),
    Format("old positional (json_schema)", "json_schema", old=True),
    Format("old strict p1..pN (json_schema)", "json_schema", old=True, strict=True),
    Format("verdict+ids (structured_outputs)", "structured_outputs"),
    Format("verdict+ids (json_schema)", "json_schema"),
    Format("verdict+ids strict (json_schema)", "json_schema", strict=True),
)


def make_batch(counts: Sequence[int], rng: random.Random, document: str) -> list[PromptChunk]:
    """One passage per chunk, ``counts[i]`` sentences in chunk i, each cited for one claim."""
    chunks = []
    for i, count in enumerate(counts):
        sentences, start = [], 0
        for index in range(1, count + 1):
            numbers = {"a": rng.randint(11, 99), "b": rng.randint(1, 9), "c": rng.randint(2, 12)}
            what = rng.choice(_WHAT).format(y=rng.randint(2019, 2027), **numbers)
            text = f"{rng.choice(_WHO)} {rng.choice(_SAID)} {what}."
            sentences.append(Sentence(index, start, start + len(text), text))
            start += len(text) + 1
        chunks.append(PromptChunk(f"{document}-c{i:04d}", sentences, CLAIMS[i % len(CLAIMS)]))
    return chunks


def schema_for(
    fmt: Format, chunks: Sequence[PromptChunk], max_per_chunk: int = MAX_PER_CHUNK
) -> JSON:
    counts = [len(c.sentences) for c in chunks]
    if fmt.old:
        schema = old_schema(counts, max_per_chunk)
        return old_strict(schema) if fmt.strict else schema
    schema = narrowed_schema([ChunkChoice(n) for n in counts], max_per_chunk)
    return STRICT.shape(schema) if fmt.strict else schema


def request_parts(
    fmt: Format, chunks: Sequence[PromptChunk], max_per_chunk: int = MAX_PER_CHUNK
) -> tuple[list[JSON], JSON]:
    """Messages and schema of one batch in one format."""
    system = (
        OLD_SYSTEM.format(max_per_chunk=max_per_chunk) if fmt.old else system_prompt(max_per_chunk)
    )
    user = user_prompt(QUERY, " ".join(CLAIMS), list(chunks))
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": user},
    ]
    return messages, schema_for(fmt, chunks, max_per_chunk)


def reply_positions(reply: Any) -> list[list[Any]]:
    """The choice a reply names, one list per passage in batch order, as written (verdict and
    ids, or ids alone); the old strict form's keys ``p1`` .. ``pN`` in order."""
    results = reply["results"]
    if isinstance(results, dict):
        results = [results[f"p{n}"] for n in range(1, len(results) + 1)]
    return [list(items) for items in results]


def floor_texts(positions: Sequence[Sequence[Any]]) -> tuple[str, str]:
    """The shortest replies that name the choice: ``{"results":[["yes",2,5],["no"]]}`` and the
    bare ``[["yes",2,5],["no"]]`` (before the verdicts: ``[[2,5],[]]``)."""
    bare = json.dumps([list(items) for items in positions], separators=(",", ":"))
    return '{"results":' + bare + "}", bare


def longest_reply(fmt: Format, chunks: Sequence[PromptChunk]) -> str:
    """The longest compact reply the format's schema allows (the most passages, each its top
    ids): a token budget."""
    counts = [len(c.sentences) for c in chunks]
    if fmt.old:
        tops: list[list[Any]] = [list(range(n, max(n - MAX_PER_CHUNK, 0), -1)) for n in counts]
        if fmt.strict:
            keyed = {f"p{n}": ids for n, ids in enumerate(tops, 1)}
            return json.dumps({"results": keyed}, separators=(",", ":"))
        return floor_texts(tops)[0]
    bound, most = id_bound(max(counts)), passage_bounds(len(counts))[1]
    top = ["part", *range(bound, bound - MAX_PER_CHUNK, -1)]
    return floor_texts([top] * most)[0]


class Server:
    def __init__(self, base_url: str) -> None:
        root = base_url.rstrip("/").removesuffix("/v1")
        self.http = httpx.AsyncClient(base_url=root, timeout=1800)
        self.llm = openai.AsyncOpenAI(base_url=f"{root}/v1", api_key="-", max_retries=0)
        self.model, self.context = "", 0

    async def connect(self) -> None:
        card = (await self.http.get("/v1/models")).raise_for_status().json()["data"][0]
        self.model, self.context = card["id"], int(card.get("max_model_len") or 0)

    async def tokens(self, text: str | None = None, messages: list[JSON] | None = None) -> int:
        """Tokens of a text (no special tokens added), or of a chat prompt as the model sees it."""
        body: JSON = {"prompt": text, "add_special_tokens": False}
        if messages is not None:
            body = {"messages": messages, "add_generation_prompt": True}
        response = await self.http.post("/tokenize", json={"model": self.model, **body})
        return int(response.raise_for_status().json()["count"])

    async def ask(
        self, fmt: Format, messages: list[JSON], schema: JSON | None, max_tokens: int
    ) -> tuple[Any, float]:
        """The completion and its wall time in seconds; no schema: unconstrained."""
        request: JSON = {"model": self.model, "messages": messages, "temperature": 0}
        if schema is not None and fmt.tier == "json_schema":
            named = {"name": "HighlightBatchResult", "schema": schema, "strict": True}
            request["response_format"] = {"type": "json_schema", "json_schema": named}
        elif schema is not None:
            request["extra_body"] = {"structured_outputs": {"json": schema}}
        started = time.perf_counter()
        reply = await self.llm.chat.completions.create(**request, max_tokens=max_tokens)
        return reply, time.perf_counter() - started


def table(head: str, rows: Sequence[Sequence[object]]) -> None:
    cells = [head.split("|"), *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    for row in cells:
        pairs = enumerate(zip(row, widths, strict=True))
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in pairs).rstrip())


async def token_rows(server: Server, sizes: Sequence[int], reps: int) -> list[list[object]]:
    rows: list[list[object]] = []
    for size, fmt in ((size, fmt) for size in sizes for fmt in FORMATS):
        rng = random.Random(size)  # the same batch in every format and every run
        chunks = make_batch([rng.randint(8, 15) for _ in range(size)], rng, "hansard-2025-11-20")
        messages, schema = request_parts(fmt, chunks)
        max_tokens = 2 * len(longest_reply(fmt, chunks)) + 16
        if (prompt := await server.tokens(messages=messages)) + max_tokens > server.context:
            print(f"skipped {size} citations, {fmt.label}: prompt {prompt} + max_tokens "
                  f"{max_tokens} > the server's context, {server.context} tokens")  # fmt: skip
            continue
        try:
            runs = [await server.ask(fmt, messages, schema, max_tokens) for _ in range(reps)]
        except openai.BadRequestError as exc:
            print(f"refused {size} citations, {fmt.label}: {exc.message[:300]}")
            continue
        choice, decoded = runs[0][0].choices[0], [r.usage.completion_tokens for r, _ in runs]
        try:
            positions = reply_positions(json.loads(choice.message.content or ""))
        except (ValueError, KeyError, TypeError) as exc:
            print(f"unreadable reply, {size} citations, {fmt.label} ({choice.finish_reason}): "
                  f"{exc!r}: {(choice.message.content or '')[:200]!r}")  # fmt: skip
            continue
        full, bare = floor_texts(positions)
        floor = await server.tokens(full) + 1  # + the stop token
        median, low, high = statistics.median(decoded), min(decoded), max(decoded)
        ids = sum(isinstance(i, int) for items in positions for i in items)
        cells = [f"{median:.0f}" + (f" ({low}-{high})" if low < high else ""), floor]
        cells += [await server.tokens(bare) + 1, f"{median / floor:.2f}", len(positions), ids]
        cells += [choice.finish_reason, f"{statistics.median(s for _, s in runs):.2f}"]
        rows.append([f"{size} citations", fmt.label, prompt, *cells])
    return rows


async def reuse_rows(server: Server, sizes: Sequence[int]) -> list[list[object]]:
    rng = random.Random(time.time_ns())  # shapes this server has not compiled yet
    rows: list[list[object]] = []
    for size, fmt in ((size, fmt) for size in sizes for fmt in FORMATS):

        def counts(n: int) -> list[int]:
            return [rng.randint(8, 15) for _ in range(n)]

        if fmt.old:
            # (b) the same sentence counts; (c) other counts.
            limit, shape = MAX_PER_CHUNK, counts(size)
            batches = (shape, shape, counts(size))
        else:
            # (b) other counts in the same bucket; (c) half the passages, another bucket. The
            # new schemas are few and the rows above compiled theirs: a number of ids per
            # passage this server has not seen makes (a) a schema it has not compiled.
            limit = rng.randint(6, 99)
            batches = (counts(size), counts(size), counts(max(size // 2, 1)))
        cells, prefills, schemas = [], [], []
        for batch in batches:
            document = f"report-{rng.randrange(10**6):06d}"  # other text, other chunk ids
            messages, schema = request_parts(fmt, make_batch(batch, rng, document), limit)
            schemas.append(json.dumps(schema))  # vLLM's grammar cache key
            if await server.tokens(messages=messages) + 1 > server.context:
                cells.append("does not fit")
                continue
            # Unconstrained first, so that the timed requests find their prompt in the cache.
            prefills.append((await server.ask(fmt, messages, None, 1))[1])
            try:
                first, again = [(await server.ask(fmt, messages, schema, 1))[1] for _ in "12"]
            except openai.BadRequestError as exc:
                cells.append(f"refused: {exc.message[:60]}")
                continue
            cells.append(f"{first:.3f} / {again:.3f}")
        same = ["same (cached)" if schemas[0] == other else "differs" for other in schemas[1:]]
        prefill = f"{statistics.median(prefills):.2f}" if prefills else "-"
        rows.append([f"{size} citations", fmt.label, prefill, *cells, *same])
    return rows


def default_url() -> str:
    script = ["bash", str(ROOT / "scripts" / "vllm.sh"), "url"]
    url = os.environ.get("HIGHLIGHT_TEST_VLLM_URL")
    return url or subprocess.run(script, capture_output=True, text=True).stdout.strip()


async def main(base_url: str, sizes: Sequence[int], reps: int) -> int:
    server = Server(base_url)
    try:
        await server.connect()
        print(f"{server.model} at {base_url}: context {server.context} tokens; at most "
              f"{MAX_PER_CHUNK} ids per passage, temperature 0, {reps} reps\n")  # fmt: skip
        rows = await token_rows(server, sizes, reps)
        table("batch|format (tier)|prompt tok|decoded|floor|bare floor|decoded/floor|"
              "passages|ids|finish|wall s (median)", rows)  # fmt: skip
        print()
        for row in rows:
            verdict = "met" if float(str(row[6])) <= TARGET else "not met"
            baseline = " (baseline)" if str(row[1]).startswith("old") else ""
            print(f"target decoded <= {TARGET} x floor, {row[0]}, {row[1]}: {row[6]} "
                  f"{verdict}{baseline}")  # fmt: skip
        print("\ngrammar reuse: seconds of max_tokens=1 requests whose prompt is in the prefix")
        print("cache, first / again (schema check, grammar compile unless cached, one token);")
        print(
            "(b) old: same sentence counts, new: same bucket; (c) old: other counts, new: another"
        )
        print("passage bucket; each with other text and chunk ids")
        reuse = await reuse_rows(server, sizes)
        table("batch|format (tier)|prefill s|(a) unseen schema|(b) other text|(c) other batch|"
              "(b)'s schema vs (a)'s|(c)'s vs (a)'s", reuse)  # fmt: skip
    except (httpx.TransportError, httpx.HTTPStatusError, openai.APIConnectionError) as exc:
        print(f"no vLLM server answers at {base_url} ({type(exc).__name__}: {exc}); start "
              "one with `scripts/vllm.sh start` (or pass --base-url)", file=sys.stderr)  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="OpenAI base URL, ending in /v1")
    parser.add_argument("--sizes", default="10,50", help="citations per batch, comma-separated")
    parser.add_argument("--reps", type=int, default=3, help="requests per batch and format")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    sys.exit(asyncio.run(main(args.base_url or default_url(), sizes, args.reps)))
