"""Request shapes of each provider profile, checked on the wire against the scripted server.

Documented behaviour the profiles follow:
- vLLM (docs "Structured Outputs", 0.12+): ``structured_outputs: {"json": schema}`` in the body;
  ``guided_json`` was removed and is ignored; ``chat_template_kwargs`` in the body.
- OpenRouter (docs "Structured Outputs" / "Provider Routing"): ``response_format`` json_schema, and
  ``provider: {"require_parameters": true}`` routes only to providers that support it; when none
  does, it answers HTTP 404 ``{"error": {"message": "No endpoints found that can handle the
  requested parameters.", "code": 404}}`` (reported in block/buzz#3018, xorbitsai/xagent#1575).
- OpenAI (docs "Structured Outputs", supported schemas): strict mode needs every object closed
  (``additionalProperties: false``) with all properties required.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.highlights.contract import ChunkChoice, narrowed_schema, validate_reply
from app.llm.client import StructuredClient
from app.llm.errors import LLMRejected
from app.llm.providers import build_profile, merge_extra
from app.llm.schema import inline_refs, openai_strict
from tests.fixtures.llm_server import Reply, ScriptedLLM, error

CHOICES = [ChunkChoice("a-c0001", 4), ChunkChoice("a-c0002", 2)]


def walk(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        return [node, *(n for v in node.values() for n in walk(v))]
    if isinstance(node, list):
        return [n for v in node for n in walk(v)]
    return []


async def call(server: ScriptedLLM, provider: str, **profile: Any) -> str:
    client = StructuredClient(
        base_url=server.base_url,
        model="m",
        api_key="k",
        profile=build_profile(provider, **profile),
        backoff_s=0.01,
    )
    try:
        done = await client.complete_json(
            system="s",
            user="u",
            schema=narrowed_schema(CHOICES, 2),
            schema_name="HighlightBatchResult",
            validate=lambda raw: validate_reply(raw, CHOICES, 2),
        )
        return done.strategy
    finally:
        await client.close()


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


async def test_openrouter_requires_parameters_and_inlines_defs_when_refused(
    scripted_llm: ScriptedLLM,
) -> None:
    def handler(body: dict[str, Any]) -> Reply:
        schema = body.get("response_format", {}).get("json_schema", {}).get("schema", {})
        if "$defs" in schema:
            return error(400, "Provider returned error: Invalid schema: $ref is not supported")
        return scripted_llm.honour_schema(body)

    scripted_llm.handler = handler
    assert await call(scripted_llm, "openrouter") == "json_schema+inlined"
    first, second = scripted_llm.requests
    for body in (first, second):
        assert body["provider"] == {"require_parameters": True}
        assert body["response_format"]["type"] == "json_schema"
        assert body["_headers"]["authorization"] == "Bearer k"
    flat = second["response_format"]["json_schema"]["schema"]
    assert "$defs" not in flat
    assert not any("$ref" in n for n in walk(flat))


async def test_openai_profile_sends_strict_subset(scripted_llm: ScriptedLLM) -> None:
    assert await call(scripted_llm, "openai") == "json_schema+openai_strict"
    (body,) = scripted_llm.requests
    schema = body["response_format"]["json_schema"]["schema"]
    assert "structured_outputs" not in body
    assert "provider" not in body
    for node in walk(schema):
        assert "prefixItems" not in node
        assert "maxItems" not in node
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert sorted(node["required"]) == sorted(node["properties"])
    assert len(schema["properties"]["results"]["items"]["anyOf"]) == 2
    assert schema["$defs"]["Chunk1"]["properties"]["chunk_id"] == {
        "type": "string",
        "enum": ["a-c0002"],
    }
    assert not any("const" in node for node in walk(schema))


def test_inline_refs_resolves_every_reference() -> None:
    schema = narrowed_schema(CHOICES, 2)
    flat = inline_refs(schema)
    items = flat["properties"]["results"]["prefixItems"]
    assert items[1]["properties"]["chunk_id"]["const"] == "a-c0002"
    assert items[0]["properties"]["relevant_sentences"]["items"]["properties"]["sentence_id"][
        "enum"
    ] == [1, 2, 3, 4]


def test_openai_strict_keeps_every_chunk_shape() -> None:
    strict = openai_strict(narrowed_schema(CHOICES, 2))
    refs = [n["$ref"] for n in strict["properties"]["results"]["items"]["anyOf"]]
    assert refs == ["#/$defs/Chunk0", "#/$defs/Chunk1"]


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
    assert [r["provider"] for r in refused] == [{"require_parameters": True}] * 2
    assert "provider" not in prompted
    assert "response_format" not in prompted


async def test_every_tier_refused_is_rejected_not_unknown(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.handler = lambda body: error(
        404, "No endpoints found that can handle the requested parameters."
    )
    with pytest.raises(LLMRejected, match="no structured-output tier is supported"):
        await call(scripted_llm, "openrouter")
