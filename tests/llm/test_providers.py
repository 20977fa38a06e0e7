"""Each provider profile as the provider really behaves, on the wire, against scripted stand-ins
that answer with the providers' real error bodies (tests/fixtures/providers.py lists the sources).

- vLLM (docs "Structured Outputs", 0.12+): ``structured_outputs: {"json": schema}`` in the body;
  ``guided_json`` was removed and is ignored; ``chat_template_kwargs`` in the body.
- OpenAI (docs "Structured model outputs", "Supported schemas"): strict mode takes anyOf, $defs,
  enum, minItems/maxItems and minimum/maximum, refuses tuple arrays ("array schema missing
  items"), and allows 1000 enum values per schema; reasoning models refuse max_tokens and
  temperature 0.
- OpenRouter (docs "Errors", "Provider Routing", "Structured Outputs"): relays a provider's
  refusal as "Provider returned error" with the body in ``metadata.raw``; with
  ``require_parameters`` a 404 "No endpoints found that can handle the requested parameters."
"""

from __future__ import annotations

from typing import Any

import pytest

from app.highlights.contract import ChunkChoice, narrowed_schema, validate_reply
from app.highlights.prompts import PromptChunk, user_prompt
from app.llm.client import CapabilityMemory, StructuredClient
from app.llm.errors import LLMRejected
from app.llm.providers import build_profile, merge_extra
from app.llm.schema import count_enum_values, inline_refs
from app.selection.sentences import split_sentences
from tests.fixtures.llm_server import Reply, ScriptedLLM, error, passages
from tests.fixtures.providers import (
    OpenAIModel,
    OpenRouter,
    anthropic_schema_problem,
    openai_schema_problem,
    openrouter_relay,
)


def walk(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        return [node, *(n for v in node.values() for n in walk(v))]
    if isinstance(node, list):
        return [n for v in node for n in walk(v)]
    return []


def batch_of(chunks: int, sentences: int) -> tuple[list[ChunkChoice], str]:
    text = " ".join(f"Sentence number {i} of the passage is here." for i in range(sentences))
    prompt_chunks = [PromptChunk(f"a-c{n:04d}", split_sentences(text)) for n in range(chunks)]
    choices = [ChunkChoice(len(c.sentences)) for c in prompt_chunks]
    return choices, user_prompt("q?", "an answer", prompt_chunks)


def make_client(server: ScriptedLLM, provider: str, **profile: Any) -> StructuredClient:
    memory = profile.pop("memory", None) or CapabilityMemory()
    return StructuredClient(
        base_url=server.base_url,
        model="m",
        api_key="k",
        profile=build_profile(provider, **profile),
        backoff_s=0.01,
        memory=memory,
    )


async def ask(client: StructuredClient, chunks: int = 2, sentences: int = 4) -> str:
    choices, user = batch_of(chunks, sentences)
    done = await client.complete_json(
        system="s",
        user=user,
        schema=narrowed_schema(choices, 2),
        schema_name="HighlightBatchResult",
        validate=lambda raw: validate_reply(raw, choices, 2),
    )
    assert len(done.value.by_position) == chunks
    return done.strategy


async def call(server: ScriptedLLM, provider: str, **profile: Any) -> str:
    client = make_client(server, provider, **profile)
    try:
        return await ask(client)
    finally:
        await client.close()


def schema_sent(body: dict[str, Any]) -> dict[str, Any]:
    return body["response_format"]["json_schema"]["schema"]  # type: ignore[no-any-return]


async def test_vllm_merges_chat_template_kwargs_with_structured_outputs(
    scripted_llm: ScriptedLLM,
) -> None:
    scripted_llm.handler = lambda body: (
        error(400, "json_schema response_format is not supported")
        if "response_format" in body
        else scripted_llm.honour_schema(body)
    )
    strategy = await call(scripted_llm, "vllm", chat_template_kwargs={"enable_thinking": False})
    assert strategy == "structured_outputs"
    first, second = scripted_llm.requests
    assert first["chat_template_kwargs"] == {"enable_thinking": False}
    assert second["chat_template_kwargs"] == {"enable_thinking": False}
    assert "$defs" in second["structured_outputs"]["json"]
    assert not any(k.startswith("guided") for r in scripted_llm.requests for k in r)


async def test_openrouter_with_an_openai_model_is_served_by_the_first_schema_tier(
    scripted_llm: ScriptedLLM,
) -> None:
    # The README's own developer setting: openai/gpt-4o-mini through OpenRouter.
    scripted_llm.handler = OpenRouter(scripted_llm, OpenAIModel(scripted_llm))
    assert await call(scripted_llm, "openrouter") == "json_schema+strict"
    (body,) = scripted_llm.requests
    assert body["provider"] == {"require_parameters": True}
    assert body["_headers"]["authorization"] == "Bearer k"
    schema = schema_sent(body)
    assert openai_schema_problem(schema, "HighlightBatchResult") is None
    assert not any("prefixItems" in node or "const" in node for node in walk(schema))
    # A uniform array of passages, each ["no"] or a verdict and ids, the ids a range in $defs.
    results = schema["properties"]["results"]
    assert results["type"] == "array"
    assert results["items"] == {"$ref": "#/$defs/Passage"}
    assert schema["$defs"]["Id"] == {"type": "integer", "minimum": 1, "maximum": 8}


def test_the_full_schema_is_what_openai_refuses() -> None:
    # Why the strict form exists: OpenAI refuses prefixItems (and the route above never used
    # the LLM while both schema tiers sent it).
    choices, _ = batch_of(2, 4)
    for schema in (narrowed_schema(choices, 2), inline_refs(narrowed_schema(choices, 2))):
        problem = openai_schema_problem(schema, "HighlightBatchResult")
        assert problem is not None
        assert "prefixItems" in problem


async def test_openrouter_with_an_anthropic_model_drops_bounds_and_remembers(
    scripted_llm: ScriptedLLM,
) -> None:
    scripted_llm.handler = OpenRouter(scripted_llm, anthropic=True)
    memory = CapabilityMemory()
    assert await call(scripted_llm, "openrouter", memory=memory) == "json_schema+basic"
    refused, served = scripted_llm.requests
    assert "maxItems" in str(schema_sent(refused))
    basic = schema_sent(served)
    assert anthropic_schema_problem(basic) is None
    assert "$defs" not in basic
    assert not any("$ref" in node for node in walk(basic))
    # Learned: the next call goes straight to the basic variant.
    assert await call(scripted_llm, "openrouter", memory=memory) == "json_schema+basic"
    assert len(scripted_llm.requests) == 3


async def test_openai_reasoning_model_gets_max_completion_tokens_and_learns_temperature(
    scripted_llm: ScriptedLLM,
) -> None:
    scripted_llm.handler = OpenAIModel(scripted_llm, reasoning=True)
    memory = CapabilityMemory()
    assert await call(scripted_llm, "openai", memory=memory) == "json_schema+strict"
    refused, served = scripted_llm.requests
    for body in (refused, served):
        assert "max_tokens" not in body
        assert body["max_completion_tokens"] == 1024
    assert refused["temperature"] == 0
    assert "temperature" not in served
    # Per model, like the tier memory: the next call is one request, and the tier is kept.
    assert await call(scripted_llm, "openai", memory=memory) == "json_schema+strict"
    assert len(scripted_llm.requests) == 3
    assert "temperature" not in scripted_llm.requests[-1]
    assert memory.start((scripted_llm.base_url, "m")) == 0


async def test_openrouter_relayed_parameter_refusals_are_read_from_metadata_raw(
    scripted_llm: ScriptedLLM,
) -> None:
    scripted_llm.handler = OpenRouter(scripted_llm, OpenAIModel(scripted_llm, reasoning=True))
    memory = CapabilityMemory()
    assert await call(scripted_llm, "openrouter", memory=memory) == "json_schema+strict"
    sent = scripted_llm.requests
    assert [("max_tokens" in b, "temperature" in b) for b in sent] == [
        (True, True),
        (False, True),
        (False, False),
    ]
    assert sent[-1]["max_completion_tokens"] == 1024
    await call(scripted_llm, "openrouter", memory=memory)
    assert len(scripted_llm.requests) == 4


async def test_openrouter_no_endpoints_for_temperature_retries_without_it(
    scripted_llm: ScriptedLLM,
) -> None:
    scripted_llm.handler = OpenRouter(scripted_llm, refuses_temperature_when_required=True)
    memory = CapabilityMemory()
    assert await call(scripted_llm, "openrouter", memory=memory) == "json_schema+strict"
    refused, served = scripted_llm.requests
    assert "temperature" in refused
    assert "temperature" not in served
    assert served["provider"] == {"require_parameters": True}
    assert memory.start((scripted_llm.base_url, "m")) == 0


async def test_a_batch_of_long_chunks_keeps_its_ids_bounded_within_openais_limits(
    scripted_llm: ScriptedLLM,
) -> None:
    scripted_llm.handler = OpenAIModel(scripted_llm)
    client = make_client(scripted_llm, "openai")
    # 12 chunks of 90 sentences: the old schema enumerated 1,092 ids, over OpenAI's 1,000, and
    # had to fall back to ranges; the ids are a range in every batch now.
    assert await ask(client, chunks=12, sentences=90) == "json_schema+strict"
    (big,) = scripted_llm.requests
    assert schema_sent(big)["$defs"]["Id"] == {"type": "integer", "minimum": 1, "maximum": 128}
    assert count_enum_values(schema_sent(big)) == 3
    await client.close()


async def test_a_schema_refused_for_its_size_moves_on_for_that_call_only(
    scripted_llm: ScriptedLLM,
) -> None:
    def handler(body: dict[str, Any]) -> Reply:
        # A route with a smaller limit than OpenAI's (Azure: "The compiled grammar is too large")
        # on a big batch, whatever form its schema takes.
        if "response_format" in body and len(passages(body)) > 3:
            inner = {"error": {"message": "The compiled grammar is too large", "code": "400"}}
            return openrouter_relay(400, inner, "Azure")
        return scripted_llm.honour_schema(body)

    scripted_llm.handler = handler
    memory = CapabilityMemory()
    client = make_client(scripted_llm, "openrouter", memory=memory)
    assert await ask(client, chunks=4, sentences=40) == "prompted"
    assert memory.start((scripted_llm.base_url, "m")) == 0
    assert await ask(client, chunks=2, sentences=4) == "json_schema+strict"
    await client.close()


def test_inline_refs_resolves_every_reference() -> None:
    choices, _ = batch_of(2, 4)
    flat = inline_refs(narrowed_schema(choices, 2))
    passage = flat["properties"]["results"]["items"]
    assert "$defs" not in flat
    assert passage["anyOf"][1]["items"] == {"type": "integer", "minimum": 1, "maximum": 8}


def test_merge_extra_does_not_clobber_nested_keys() -> None:
    base = {"chat_template_kwargs": {"enable_thinking": False}, "provider": {"order": ["a"]}}
    extra = {"chat_template_kwargs": {"add_generation_prompt": True}, "structured_outputs": {}}
    assert merge_extra(base, extra) == {
        "chat_template_kwargs": {"enable_thinking": False, "add_generation_prompt": True},
        "provider": {"order": ["a"]},
        "structured_outputs": {},
    }
    assert base["chat_template_kwargs"] == {"enable_thinking": False}


async def test_openrouter_no_endpoints_404_moves_to_prompted_without_require_parameters(
    scripted_llm: ScriptedLLM,
) -> None:
    def handler(body: dict[str, Any]) -> Reply:
        if body.get("provider", {}).get("require_parameters"):
            return error(404, "No endpoints found that can handle the requested parameters.")
        return scripted_llm.honour_schema(body)

    scripted_llm.handler = handler
    assert await call(scripted_llm, "openrouter") == "prompted"
    *refused, prompted = scripted_llm.requests
    # Each schema variant is tried as it is, without temperature, without the reasoning effort
    # and without both, before giving up on it.
    tries = [(True, True), (False, True), (True, False), (False, False)]
    assert [("temperature" in r, "reasoning" in r, r["provider"]) for r in refused] == [
        (temperature, reasoning, {"require_parameters": True})
        for _ in ("strict", "basic")
        for temperature, reasoning in tries
    ]
    assert "provider" not in prompted
    assert "response_format" not in prompted


async def test_every_tier_refused_is_rejected_not_unknown(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.handler = lambda body: error(
        404, "No endpoints found that can handle the requested parameters."
    )
    with pytest.raises(LLMRejected, match="no structured-output tier is supported"):
        await call(scripted_llm, "openrouter")
