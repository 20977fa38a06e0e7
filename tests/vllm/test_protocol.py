"""What the highlight service relies on from vLLM's OpenAI server, proven against a real one.

The model has random weights, so nothing here checks *what* it says, only the protocol: which
structured-output requests compile and constrain the output, which are rejected and with what
message (the service downgrades its schema tier on those), and how finish_reason behaves.

Greedy decoding (temperature 0) keeps every answer deterministic for a given model.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI

from tests.vllm.conftest import VllmServer

pytestmark = pytest.mark.vllm

MESSAGES = [
    {"role": "system", "content": "Answer with JSON only."},
    {"role": "user", "content": "Which sentences of each chunk support the answer?"},
]
# Enough for every constrained schema below to finish with "stop"; small enough to stay fast.
MAX_TOKENS = 400

GRAMMAR_FAILURE = "Failed to transform"


@pytest.fixture
async def client(vllm_server: VllmServer) -> AsyncIterator[AsyncOpenAI]:
    # max_retries=0: a 400 must surface at once, not after the client's retries.
    async with AsyncOpenAI(
        base_url=vllm_server.base_url, api_key="unused", max_retries=0, timeout=120
    ) as client:
        yield client


def chunk_schema(chunk_id: str, n_sentences: int) -> dict[str, Any]:
    """One chunk's answer: its id (const) and the indices of its supporting sentences (enum)."""
    return {
        "type": "object",
        "properties": {
            "chunk_id": {"const": chunk_id},
            "sentences": {
                "type": "array",
                "items": {"enum": list(range(n_sentences))},
                "maxItems": n_sentences,
            },
        },
        "required": ["chunk_id", "sentences"],
        "additionalProperties": False,
    }


def batch_schema(chunks: dict[str, int]) -> dict[str, Any]:
    """The per-batch schema: one `$defs` entry per chunk, in order via `prefixItems`."""
    defs = {f"chunk_{i}": chunk_schema(cid, n) for i, (cid, n) in enumerate(chunks.items())}
    return {
        "$defs": defs,
        "type": "object",
        "properties": {
            "chunks": {
                "type": "array",
                "prefixItems": [{"$ref": f"#/$defs/{name}"} for name in defs],
                "items": False,
                "minItems": len(defs),
                "maxItems": len(defs),
            }
        },
        "required": ["chunks"],
        "additionalProperties": False,
    }


BATCH = {"chunk-a1": 4, "chunk-b2": 7, "chunk-c3": 2}
BATCH_SCHEMA = batch_schema(BATCH)


def response_format(schema: dict[str, Any], name: str = "highlights") -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def assert_batch_answer(content: str | None, schema_validator: Any) -> None:
    assert content is not None
    answer = json.loads(content)
    schema_validator(answer, BATCH_SCHEMA)
    # The checks the service will make itself, by hand, in case the validator is too lenient.
    assert [chunk["chunk_id"] for chunk in answer["chunks"]] == list(BATCH)
    for chunk, n in zip(answer["chunks"], BATCH.values(), strict=True):
        assert all(0 <= i < n for i in chunk["sentences"])
    # disable_any_whitespace: compact JSON, no padding.
    assert content == json.dumps(answer, separators=(",", ":"), ensure_ascii=False)


async def test_model_is_served(client: AsyncOpenAI, vllm_server: VllmServer) -> None:
    models = [model.id async for model in client.models.list()]
    assert vllm_server.model in models


async def test_response_format_json_schema_batch(
    client: AsyncOpenAI, vllm_server: VllmServer, schema_validator: Any
) -> None:
    offset = vllm_server.log_size()
    completion = await client.chat.completions.create(
        model=vllm_server.model,
        messages=MESSAGES,
        response_format=response_format(BATCH_SCHEMA),
        max_tokens=MAX_TOKENS,
        temperature=0,
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert_batch_answer(choice.message.content, schema_validator)
    assert GRAMMAR_FAILURE not in vllm_server.log_since(offset)


async def test_structured_outputs_extra_body_batch(
    client: AsyncOpenAI, vllm_server: VllmServer, schema_validator: Any
) -> None:
    offset = vllm_server.log_size()
    completion = await client.chat.completions.create(
        model=vllm_server.model,
        messages=MESSAGES,
        extra_body={"structured_outputs": {"json": BATCH_SCHEMA}},
        max_tokens=MAX_TOKENS,
        temperature=0,
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert_batch_answer(choice.message.content, schema_validator)
    assert GRAMMAR_FAILURE not in vllm_server.log_since(offset)


async def test_extra_body_merges_structured_outputs_and_chat_template_kwargs(
    client: AsyncOpenAI, vllm_server: VllmServer, schema_validator: Any
) -> None:
    async def ask(extra_body: dict[str, Any]) -> Any:
        return await client.chat.completions.create(
            model=vllm_server.model,
            messages=MESSAGES,
            extra_body=extra_body,
            max_tokens=MAX_TOKENS,
            temperature=0,
        )

    structured = {"structured_outputs": {"json": BATCH_SCHEMA}}
    plain = await ask(structured)
    merged = await ask({**structured, "chat_template_kwargs": {"enable_thinking": False}})

    assert merged.choices[0].finish_reason == "stop"
    assert_batch_answer(merged.choices[0].message.content, schema_validator)
    # The tiny model's template adds an empty <think></think> block for enable_thinking=False,
    # as Qwen3's does: more prompt tokens prove the kwargs reached the template.
    assert plain.usage is not None
    assert merged.usage is not None
    assert merged.usage.prompt_tokens > plain.usage.prompt_tokens


# Each schema keyword the service may use, on its own, so a failure names the keyword.
KEYWORD_SCHEMAS = {
    "const-string": {
        "type": "object",
        "properties": {"id": {"const": "chunk-id"}},
        "required": ["id"],
        "additionalProperties": False,
    },
    "const-integer": {
        "type": "object",
        "properties": {"n": {"const": 7}},
        "required": ["n"],
        "additionalProperties": False,
    },
    "enum-strings": {
        "type": "object",
        "properties": {"label": {"enum": ["supported", "partial", "unsupported"]}},
        "required": ["label"],
        "additionalProperties": False,
    },
    "enum-integers": {
        "type": "array",
        "items": {"enum": [0, 1, 2, 3]},
        "maxItems": 4,
    },
    "single-value-enum": {
        "type": "object",
        "properties": {"id": {"enum": ["chunk-id"]}},
        "required": ["id"],
        "additionalProperties": False,
    },
    "prefixItems-items-false": {
        "type": "array",
        "prefixItems": [{"const": "a"}, {"type": "integer"}, {"type": "boolean"}],
        "items": False,
        "minItems": 3,
    },
    "defs-and-ref": {
        "$defs": {"idx": {"type": "integer", "minimum": 0, "maximum": 9}},
        "type": "object",
        "properties": {"first": {"$ref": "#/$defs/idx"}, "second": {"$ref": "#/$defs/idx"}},
        "required": ["first", "second"],
        "additionalProperties": False,
    },
    "nullable-anyOf": {
        "type": "object",
        "properties": {"score": {"anyOf": [{"type": "number"}, {"type": "null"}]}},
        "required": ["score"],
        "additionalProperties": False,
    },
    "min-max-items": {
        "type": "array",
        "items": {"type": "integer", "minimum": 0, "maximum": 50},
        "minItems": 1,
        "maxItems": 3,
    },
    "pydantic-style-title-description": {
        "title": "Answer",
        "description": "Pydantic adds titles and descriptions.",
        "type": "object",
        "properties": {
            "ok": {"title": "Ok", "type": "boolean", "default": False},
        },
        "required": ["ok"],
        "additionalProperties": False,
    },
}


@pytest.mark.parametrize("name", list(KEYWORD_SCHEMAS))
async def test_schema_keyword_compiles_and_constrains(
    name: str, client: AsyncOpenAI, vllm_server: VllmServer, schema_validator: Any
) -> None:
    schema = KEYWORD_SCHEMAS[name]
    offset = vllm_server.log_size()
    completion = await client.chat.completions.create(
        model=vllm_server.model,
        messages=MESSAGES,
        response_format=response_format(schema),
        max_tokens=MAX_TOKENS,
        temperature=0,
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "stop", choice.message.content
    assert choice.message.content is not None
    schema_validator(json.loads(choice.message.content), schema)
    assert GRAMMAR_FAILURE not in vllm_server.log_since(offset)


async def test_unique_items_is_rejected_as_unsupported_by_xgrammar(
    client: AsyncOpenAI, vllm_server: VllmServer
) -> None:
    schema = {"type": "array", "items": {"enum": [0, 1, 2]}, "uniqueItems": True}
    with pytest.raises(openai.BadRequestError) as excinfo:
        await client.chat.completions.create(
            model=vllm_server.model,
            messages=MESSAGES,
            response_format=response_format(schema),
            max_tokens=MAX_TOKENS,
            temperature=0,
        )
    assert excinfo.value.status_code == 400
    message = str(excinfo.value)
    assert "xgrammar" in message
    assert "not supported" in message


async def test_dangling_ref_is_rejected_as_untransformable(
    client: AsyncOpenAI, vllm_server: VllmServer
) -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}
    offset = vllm_server.log_size()
    with pytest.raises(openai.BadRequestError) as excinfo:
        await client.chat.completions.create(
            model=vllm_server.model,
            messages=MESSAGES,
            extra_body={"structured_outputs": {"json": schema}},
            max_tokens=MAX_TOKENS,
            temperature=0,
        )
    assert excinfo.value.status_code == 400
    assert "Failed to transform json schema into a grammar" in str(excinfo.value)
    # The fixture's log access works: the same failure is in the server log.
    if vllm_server.log_path is not None:
        assert GRAMMAR_FAILURE in vllm_server.log_since(offset)


async def test_server_still_serves_after_rejected_schemas(
    client: AsyncOpenAI, vllm_server: VllmServer, schema_validator: Any
) -> None:
    # A grammar failure must not take the engine down (it did in some vLLM versions).
    completion = await client.chat.completions.create(
        model=vllm_server.model,
        messages=MESSAGES,
        response_format=response_format(BATCH_SCHEMA),
        max_tokens=MAX_TOKENS,
        temperature=0,
    )
    assert_batch_answer(completion.choices[0].message.content, schema_validator)


async def test_guided_json_is_accepted_but_ignored(
    client: AsyncOpenAI, vllm_server: VllmServer
) -> None:
    # The pre-0.10 parameter: 200 OK, but nothing constrains the output any more.
    completion = await client.chat.completions.create(
        model=vllm_server.model,
        messages=MESSAGES,
        extra_body={"guided_json": BATCH_SCHEMA},
        max_tokens=32,
        temperature=0,
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "length"
    with pytest.raises(ValueError, match=r"."):
        json.loads(choice.message.content or "")


async def test_tool_choice_required_needs_a_tool_parser(
    client: AsyncOpenAI, vllm_server: VllmServer
) -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "highlight",
            "parameters": {
                "type": "object",
                "properties": {"sentences": {"type": "array", "items": {"type": "integer"}}},
                "required": ["sentences"],
            },
        },
    }
    with pytest.raises(openai.BadRequestError) as excinfo:
        await client.chat.completions.create(
            model=vllm_server.model,
            messages=MESSAGES,
            tools=[tool],
            tool_choice="required",
            max_tokens=MAX_TOKENS,
            temperature=0,
        )
    assert excinfo.value.status_code == 400


async def test_free_text_string_field_runs_to_max_tokens(
    client: AsyncOpenAI, vllm_server: VllmServer
) -> None:
    # A random model never closes a free string: the service must cap these and expect "length".
    schema = {
        "type": "object",
        "properties": {"reason": {"type": "string"}},
        "required": ["reason"],
        "additionalProperties": False,
    }
    completion = await client.chat.completions.create(
        model=vllm_server.model,
        messages=MESSAGES,
        response_format=response_format(schema),
        max_tokens=16,
        temperature=0,
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "length"
    content = choice.message.content or ""
    assert content.startswith('{"reason":"')
    with pytest.raises(ValueError, match=r"."):
        json.loads(content)
