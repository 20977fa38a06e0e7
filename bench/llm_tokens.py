"""Tokens a real vLLM server decodes per highlight batch, the reply as positional ids
(``{"results": [[2, 5], [1], []]}``) against the old per-chunk objects (``{"chunk_id": ...,
"relevant_sentences": [{"sentence_id": 2}, ...]}``, before 39c0533), and whether a batch's grammar
serves the next batch of the same shape.

Batches of 10 and 50 citations, each a chunk of 8-15 generated sentences cited for one claim, at
most 5 ids per passage (the service's default), go out in each format with its prompts (the
service's builders; the old wording for the old format), temperature 0, ``--reps`` times, through
``structured_outputs`` and, for the new format, ``response_format`` (the service's first tier).
*Decoded*: ``usage.completion_tokens``. *Floor*: the server's /tokenize count of that reply's
choice written ``{"results":[[2,5],[1],[]]}``, plus the stop token the decoded count holds too
(*bare*: ``[[2,5],[1],[]]``). Target, printed, not asserted: new format <= 1.5 x floor. Grammar
reuse: max_tokens=1 requests whose prompt is in vLLM's prefix cache, sent twice, for (a) a shape
the server has not seen, (b) its sentence counts with other text and chunk ids, (c) a new shape.

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

from app.core.config import Settings
from app.highlights.contract import ChunkChoice, narrowed_schema
from app.highlights.prompts import PromptChunk, system_prompt, user_prompt
from app.selection.sentences import Sentence

ROOT = Path(__file__).resolve().parents[1]
MAX_PER_CHUNK: int = Settings.model_fields["max_highlights_per_chunk"].default
TARGET = 1.5
JSON = dict[str, Any]

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

# The old format's instructions, as app/highlights/prompts.py worded them before 39c0533.
OLD_SYSTEM = """\
You check which sentences of cited source passages support an answer that was given to a user.
For every passage, list the ids of the sentences that state facts the answer relies on, most \
important first, at most {max_per_chunk} per passage. Choose only sentences that support the \
answer; if no sentence of a passage does, give an empty list for it. Include every passage once, \
in the order given, with its chunk_id exactly as written."""


@dataclass(frozen=True)
class Format:
    label: str
    tier: str  # "structured_outputs" or "json_schema"
    old: bool = False


FORMATS = (
    Format("old objects (structured_outputs)", "structured_outputs", old=True),
    Format("positional ids (structured_outputs)", "structured_outputs"),
    Format("positional ids (json_schema)", "json_schema"),
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


def old_user_prompt(chunks: Sequence[PromptChunk]) -> str:
    parts = [f"Question:\n{QUERY}\n", f"Answer:\n{' '.join(CLAIMS)}\n", "Passages:"]
    for chunk in chunks:
        lines = "\n".join(f"[{s.index}] {s.text}" for s in chunk.sentences)
        parts.append(f'<passage chunk_id="{chunk.chunk_id}">\n{lines}\n</passage>')
    return "\n".join(parts)


def _closed(title: str, **properties: JSON) -> JSON:
    required = list(properties)
    return {"title": title, "type": "object", "properties": properties, "required": required}


def old_schema(chunks: Sequence[PromptChunk], max_per_chunk: int) -> JSON:
    """What narrowed_schema built before 39c0533: per chunk an object, its id a ``const`` and its
    sentence ids ``{"sentence_id": <enum>}`` objects, in a ``prefixItems`` tuple."""
    defs: JSON = {}
    for i, chunk in enumerate(chunks):
        ids = {"type": "integer", "enum": list(range(1, len(chunk.sentences) + 1))}
        defs[f"SentenceOfChunk{i}"] = _closed(f"SentenceOfChunk{i}", sentence_id=ids)
        sentences = {"type": "array", "items": {"$ref": f"#/$defs/SentenceOfChunk{i}"}}
        chunk_id = {"type": "string", "const": chunk.chunk_id}
        relevant = sentences | {"maxItems": max_per_chunk}
        defs[f"Chunk{i}"] = _closed(f"Chunk{i}", chunk_id=chunk_id, relevant_sentences=relevant)
    for definition in defs.values():
        definition["additionalProperties"] = False
    n = len(chunks)
    prefix = [{"$ref": f"#/$defs/Chunk{i}"} for i in range(n)]
    results = {"type": "array", "prefixItems": prefix, "minItems": n, "maxItems": n}
    top = _closed("HighlightBatchResult", results=results)
    return {**top, "$defs": defs, "additionalProperties": False}


def request_parts(fmt: Format, chunks: Sequence[PromptChunk]) -> tuple[list[JSON], JSON]:
    """Messages and schema of one batch in one format."""
    if fmt.old:
        system, user = OLD_SYSTEM.format(max_per_chunk=MAX_PER_CHUNK), old_user_prompt(chunks)
        schema = old_schema(chunks, MAX_PER_CHUNK)
    else:
        system = system_prompt(MAX_PER_CHUNK)
        user = user_prompt(QUERY, " ".join(CLAIMS), list(chunks))
        schema = narrowed_schema([ChunkChoice(len(c.sentences)) for c in chunks], MAX_PER_CHUNK)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}], schema


def reply_positions(reply: Any, chunk_ids: Sequence[str] | None = None) -> list[list[int]]:
    """The choice a reply names, one id list per passage in batch order: the new format's as it
    is; the old format's objects placed by chunk id (skipped chunk: [], unknown chunk: ignored)."""
    if chunk_ids is None:
        return [list(ids) for ids in reply["results"]]
    placed: dict[str, list[int]] = {cid: [] for cid in chunk_ids}
    for item in reply["results"]:
        if item["chunk_id"] in placed:
            placed[item["chunk_id"]] += [s["sentence_id"] for s in item["relevant_sentences"]]
    return [placed[cid] for cid in chunk_ids]


def floor_texts(positions: Sequence[Sequence[int]]) -> tuple[str, str]:
    """The shortest replies that name the choice: ``{"results":[[2,5],[1],[]]}`` and the bare
    ``[[2,5],[1],[]]``."""
    bare = json.dumps([list(ids) for ids in positions], separators=(",", ":"))
    return '{"results":' + bare + "}", bare


def longest_reply(fmt: Format, chunks: Sequence[PromptChunk]) -> str:
    """The longest compact reply the format allows (each passage its top ids): a token budget."""
    tops = [list(range(len(c.sentences), len(c.sentences) - MAX_PER_CHUNK, -1)) for c in chunks]
    if not fmt.old:
        return floor_texts(tops)[0]
    objects = [
        {"chunk_id": c.chunk_id, "relevant_sentences": [{"sentence_id": n} for n in ids]}
        for c, ids in zip(chunks, tops, strict=True)
    ]
    return json.dumps({"results": objects}, separators=(",", ":"))


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
        old_ids = [c.chunk_id for c in chunks] if fmt.old else None
        ids = reply_positions(json.loads(choice.message.content or "{}"), old_ids)
        full, bare = floor_texts(ids)
        floor = await server.tokens(full) + 1  # + the stop token
        median, low, high = statistics.median(decoded), min(decoded), max(decoded)
        cells = [f"{median:.0f}" + (f" ({low}-{high})" if low < high else ""), floor]
        cells += [await server.tokens(bare) + 1, f"{median / floor:.2f}", sum(map(len, ids))]
        cells += [choice.finish_reason, f"{statistics.median(s for _, s in runs):.2f}"]
        rows.append([f"{size} citations", fmt.label, prompt, *cells])
    return rows


async def reuse_rows(server: Server, sizes: Sequence[int]) -> list[list[object]]:
    rng = random.Random(time.time_ns())  # shapes this server has not compiled yet
    rows: list[list[object]] = []
    for size, fmt in ((size, fmt) for size in sizes for fmt in FORMATS):
        shape, other = ([rng.randint(8, 15) for _ in range(size)] for _ in range(2))
        cells, prefills, schemas = [], [], []
        for counts in (shape, shape, other):
            document = f"report-{rng.randrange(10**6):06d}"  # other text, other chunk ids
            messages, schema = request_parts(fmt, make_batch(counts, rng, document))
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
        reused = "same (cached)" if schemas[0] == schemas[1] else "differs (compiled)"
        prefill = f"{statistics.median(prefills):.2f}" if prefills else "-"
        rows.append([f"{size} citations", fmt.label, prefill, *cells, reused])
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
              "ids chosen|finish|wall s (median)", rows)  # fmt: skip
        print()
        for row in (row for row in rows if not str(row[1]).startswith("old")):
            verdict = "met" if float(str(row[6])) <= TARGET else "not met"
            print(f"target decoded <= {TARGET} x floor, {row[0]}, {row[1]}: {row[6]} {verdict}")
        print("\ngrammar reuse: seconds of max_tokens=1 requests whose prompt is in the prefix")
        print("cache, first / again (schema check, grammar compile unless cached, one token)")
        reuse = await reuse_rows(server, sizes)
        table("batch|format (tier)|prefill s|(a) new shape|(b) same shape, other text|"
              "(c) other new shape|(b)'s schema vs (a)'s", reuse)  # fmt: skip
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
