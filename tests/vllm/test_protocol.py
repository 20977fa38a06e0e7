"""What the highlight service relies on from vLLM's OpenAI server, proven against a real one.

The model has random weights, so nothing here checks *what* it says, only the protocol: which
structured-output requests compile and constrain the output, which are rejected and with what
message (the service downgrades its schema tier on those), and how finish_reason behaves.

Greedy decoding (temperature 0) keeps every answer deterministic for a given model.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam
from openai.types.shared_params import ResponseFormatJSONSchema

from app.llm.client import CapabilityMemory, StructuredClient
from app.llm.providers import build_profile
from tests.vllm.conftest import VllmServer

pytestmark = pytest.mark.vllm

MESSAGES: list[ChatCompletionMessageParam] = [
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


def response_format(schema: dict[str, Any], name: str = "highlights") -> ResponseFormatJSONSchema:
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


@pytest.mark.parametrize(
    "schema_kwargs",
    [
        {"response_format": response_format(BATCH_SCHEMA)},
        {"extra_body": {"structured_outputs": {"json": BATCH_SCHEMA}}},
    ],
    ids=["response_format", "structured_outputs"],
)
async def test_batch_schema_constrains_the_answer(
    client: AsyncOpenAI,
    vllm_server: VllmServer,
    schema_validator: Any,
    schema_kwargs: dict[str, Any],
) -> None:
    offset = vllm_server.log_size()
    completion = await client.chat.completions.create(
        model=vllm_server.model,
        messages=MESSAGES,
        max_tokens=MAX_TOKENS,
        temperature=0,
        **schema_kwargs,
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


async def test_response_format_wins_over_structured_outputs(
    client: AsyncOpenAI, vllm_server: VllmServer
) -> None:
    # Sending both is not an error: vLLM silently uses response_format and drops the other.
    completion = await client.chat.completions.create(
        model=vllm_server.model,
        messages=MESSAGES,
        response_format=response_format({"const": "from-response-format"}),
        extra_body={"structured_outputs": {"json": {"const": "from-structured-outputs"}}},
        max_tokens=MAX_TOKENS,
        temperature=0,
    )
    assert completion.choices[0].message.content == '"from-response-format"'


@pytest.mark.parametrize(
    "chunk_id",
    ['a"b', "back\\slash", "é/数据", "tab\there", "line\nbreak", "doc-7/chunk-001#p3"],
    ids=["quote", "backslash", "unicode", "tab", "newline", "path-like"],
)
async def test_const_chunk_id_survives_json_escaping(
    chunk_id: str, client: AsyncOpenAI, vllm_server: VllmServer
) -> None:
    # Chunk ids go into the schema as `const`; xgrammar must emit them properly escaped.
    schema = batch_schema({chunk_id: 3})
    completion = await client.chat.completions.create(
        model=vllm_server.model,
        messages=MESSAGES,
        extra_body={"structured_outputs": {"json": schema}},
        max_tokens=MAX_TOKENS,
        temperature=0,
    )
    content = completion.choices[0].message.content
    assert content is not None
    assert json.loads(content)["chunks"][0]["chunk_id"] == chunk_id


async def test_large_batch_schema_compiles(
    client: AsyncOpenAI, vllm_server: VllmServer, schema_validator: Any
) -> None:
    # A realistic batch: 20 chunks of 60 sentences, 20 $defs with a 60-value enum each.
    chunks = {f"doc-7/chunk-{i:03d}": 60 for i in range(20)}
    schema = batch_schema(chunks)
    completion = await client.chat.completions.create(
        model=vllm_server.model,
        messages=MESSAGES,
        response_format=response_format(schema),
        max_tokens=2000,
        temperature=0,
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.content is not None
    answer = json.loads(choice.message.content)
    schema_validator(answer, schema)
    assert [chunk["chunk_id"] for chunk in answer["chunks"]] == list(chunks)


async def test_concurrent_requests_keep_their_own_schemas(
    client: AsyncOpenAI, vllm_server: VllmServer, schema_validator: Any
) -> None:
    # The service sends batches in parallel; each grammar must stay with its own request.
    batches = [{f"b{b}-c{c}": 3 + b + c for c in range(1 + b % 3)} for b in range(6)]
    schemas = [batch_schema(batch) for batch in batches]

    async def ask(schema: dict[str, Any]) -> Any:
        return await client.chat.completions.create(
            model=vllm_server.model,
            messages=MESSAGES,
            extra_body={"structured_outputs": {"json": schema}},
            max_tokens=MAX_TOKENS,
            temperature=0,
        )

    completions = await asyncio.gather(*(ask(schema) for schema in schemas))
    for batch, schema, completion in zip(batches, schemas, completions, strict=True):
        content = completion.choices[0].message.content
        assert content is not None
        answer = json.loads(content)
        schema_validator(answer, schema)
        assert [chunk["chunk_id"] for chunk in answer["chunks"]] == list(batch)


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
        "properties": {"score": {"anyOf": [{"enum": [0, 1, 2]}, {"type": "null"}]}},
        "required": ["score"],
        "additionalProperties": False,
    },
    "bounded-number": {
        "type": "object",
        "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1}},
        "required": ["score"],
        "additionalProperties": False,
    },
    "string-maxLength": {
        "type": "object",
        "properties": {"quote": {"type": "string", "maxLength": 12}},
        "required": ["quote"],
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
    # xgrammar 0.2.8 compiles a string with maxLength/minLength to `[^"\\\r\n]{0,N}`: raw control
    # characters (U+0000-U+001F other than CR/LF) are allowed, which strict JSON forbids, and
    # escapes are not. So such output needs json.loads(strict=False).
    strict = name != "string-maxLength"
    schema_validator(json.loads(choice.message.content, strict=strict), schema)
    assert GRAMMAR_FAILURE not in vllm_server.log_since(offset)


# Rejected schemas and the exact start of vLLM's 400 message (the service keys tier downgrades on
# these). The "Failed to transform" messages go on with xgrammar's timestamp, source line and
# detail, e.g. "...grammar: [20:29:14] <path>:4950: Cannot find field $defs in #/$defs/missing".
UNSUPPORTED = "The provided JSON schema contains features not supported by xgrammar."
UNTRANSFORMABLE = "Failed to transform json schema into a grammar: "
REJECTED_SCHEMAS: dict[str, tuple[dict[str, Any], str]] = {
    "uniqueItems": (
        {"type": "array", "items": {"enum": [0, 1, 2]}, "uniqueItems": True},
        UNSUPPORTED,
    ),
    "contains": (
        {"type": "array", "items": {"enum": [0, 1]}, "contains": {"const": 1}},
        UNSUPPORTED,
    ),
    "allOf-two-branches": (
        {"allOf": [{"type": "integer"}, {"type": "integer", "minimum": 0, "maximum": 3}]},
        UNSUPPORTED,
    ),
    "dangling-ref": (
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}},
        UNTRANSFORMABLE + "[",
    ),
    "unknown-type": ({"type": "foo"}, UNTRANSFORMABLE + "["),
}


@pytest.mark.parametrize("style", ["response_format", "structured_outputs"])
@pytest.mark.parametrize("name", list(REJECTED_SCHEMAS))
async def test_rejected_schema_gets_400_with_known_message(
    name: str, style: str, client: AsyncOpenAI, vllm_server: VllmServer
) -> None:
    schema, message_start = REJECTED_SCHEMAS[name]
    offset = vllm_server.log_size()
    if style == "response_format":
        request: dict[str, Any] = {"response_format": response_format(schema)}
    else:
        request = {"extra_body": {"structured_outputs": {"json": schema}}}
    with pytest.raises(openai.BadRequestError) as excinfo:
        await client.chat.completions.create(
            model=vllm_server.model,
            messages=MESSAGES,
            max_tokens=MAX_TOKENS,
            temperature=0,
            **request,
        )
    assert excinfo.value.status_code == 400
    assert isinstance(excinfo.value.body, dict)
    assert excinfo.value.body["message"].startswith(message_start)
    assert excinfo.value.body["type"] == "BadRequestError"
    # The server log shows only the access line; the reason is in the response alone.
    if vllm_server.log_path is not None:
        log = vllm_server.wait_for_log('"POST /v1/chat/completions HTTP/1.1" 400', offset)
        assert GRAMMAR_FAILURE not in log


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
    # vLLM says so only in its log, and only once per server process (hence offset 0).
    if vllm_server.log_path is not None:
        vllm_server.wait_for_log("removed guided-decoding field(s) ['guided_json']", 0)


async def test_tool_choice_required_needs_a_tool_parser(
    client: AsyncOpenAI, vllm_server: VllmServer
) -> None:
    tool: ChatCompletionToolParam = {
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
    assert isinstance(excinfo.value.body, dict)
    assert excinfo.value.body["message"] == (
        'tool_choice="required" requires --tool-call-parser to be set'
    )


@pytest.mark.parametrize(
    "field", [{"type": "string"}, {"type": "number"}], ids=["string", "number"]
)
async def test_unbounded_field_runs_to_max_tokens(
    field: dict[str, Any], client: AsyncOpenAI, vllm_server: VllmServer
) -> None:
    # A random model never closes a free string (nor stops adding digits to an unbounded number):
    # the service must cap these with max_tokens and expect finish_reason "length".
    schema = {
        "type": "object",
        "properties": {"reason": field},
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
    assert content.startswith('{"reason":')
    with pytest.raises(ValueError, match=r"."):
        json.loads(content)


async def test_the_reasoning_effort_the_client_sends_is_accepted_and_reaches_the_template(
    vllm_server: VllmServer, schema_validator: Any
) -> None:
    """What StructuredClient sends provider vllm under the default setting (auto), sent by the
    client itself: vLLM 0.32 takes it (nothing refused, nothing learned, the first tier serves)
    and, with no chat_template_kwargs setting enable_thinking, turns effort "none" into
    enable_thinking=False for the chat template."""
    sent: list[dict[str, Any]] = []

    async def record(request: Any) -> None:
        sent.append(json.loads(request.content))

    async def ask(effort: Any) -> Any:
        memory = CapabilityMemory()
        llm = StructuredClient(
            base_url=vllm_server.base_url,
            model=vllm_server.model,
            api_key="",
            profile=build_profile("vllm", reasoning_effort=effort),
            max_tokens=MAX_TOKENS,
            max_retries=0,
            timeout_s=120,
            memory=memory,
            http_client=openai.DefaultAsyncHttpxClient(event_hooks={"request": [record]}),
        )
        try:
            done = await llm.complete_json(
                system="Answer with JSON only.",
                user="Which sentences of each chunk support the answer?",
                schema=BATCH_SCHEMA,
                schema_name="highlights",
                validate=lambda raw: raw,
            )
        finally:
            await llm.close()
        assert memory.quirks((vllm_server.base_url, vllm_server.model)) == frozenset()
        return done

    with_effort = await ask("auto")
    (body,) = sent
    assert body["reasoning_effort"] == "none"
    assert with_effort.strategy == "json_schema"
    schema_validator(with_effort.value, BATCH_SCHEMA)
    without = await ask("off")
    assert "reasoning_effort" not in sent[-1]
    # The tiny model's template adds an empty <think></think> block for enable_thinking=False,
    # as Qwen3's does: the effort reached the template.
    assert with_effort.prompt_tokens > without.prompt_tokens
