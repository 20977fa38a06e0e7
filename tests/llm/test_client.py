"""The tiered structured-output client against a real local HTTP server (scripted)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from app.highlights.contract import (
    ChunkChoice,
    PassageAnswer,
    Selection,
    narrowed_schema,
    validate_reply,
)
from app.llm.client import CapabilityMemory, Completion, StructuredClient
from app.llm.errors import LLMInvalidOutput, LLMRejected, LLMTruncated, LLMUnavailable
from app.llm.providers import build_profile
from tests.fixtures.llm_server import Reply, ScriptedLLM, completion, error, tier_of

CHOICES = [ChunkChoice(3), ChunkChoice(2)]
FIRST_SENTENCES = {0: PassageAnswer([1], "supported"), 1: PassageAnswer([1], "supported")}
UNSUPPORTED_SCHEMA = (
    "The provided JSON schema contains features not supported by xgrammar: uniqueItems"
)


def make_client(server: ScriptedLLM, provider: str = "vllm", **kwargs: Any) -> StructuredClient:
    profile_kwargs = {k: kwargs.pop(k) for k in ("chat_template_kwargs", "tiers") if k in kwargs}
    return StructuredClient(
        base_url=server.base_url,
        model="scripted-model",
        api_key="test-key",
        profile=build_profile(provider, **profile_kwargs),
        timeout_s=kwargs.pop("timeout_s", 5.0),
        max_retries=kwargs.pop("max_retries", 2),
        backoff_s=0.01,
        **kwargs,
    )


async def ask(client: StructuredClient) -> Completion[Selection]:
    return await client.complete_json(
        system="Pick sentences.",
        user="<passage>...</passage>",
        schema=narrowed_schema(CHOICES, 3),
        schema_name="HighlightBatchResult",
        validate=lambda raw: validate_reply(raw, CHOICES, 3),
    )


def reject_tiers(server: ScriptedLLM, *tiers: str, message: str = UNSUPPORTED_SCHEMA) -> None:
    def handler(body: dict[str, Any]) -> Reply:
        return error(400, message) if tier_of(body) in tiers else server.honour_schema(body)

    server.handler = handler


def assert_never_guided_json(server: ScriptedLLM) -> None:
    for body in server.requests:
        assert not any(key.startswith("guided_") for key in body), body.keys()


async def test_tier1_sends_json_schema_with_defs_and_is_served(scripted_llm: ScriptedLLM) -> None:
    client = make_client(scripted_llm)
    result = await ask(client)
    assert result.strategy == "json_schema"
    assert result.value.by_position == FIRST_SENTENCES
    (body,) = scripted_llm.requests
    assert body["_path"] == "/v1/chat/completions"
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert "$defs" in schema
    # Positions, not chunk ids: a verdict and ids per passage, the ids bounded in $defs.
    results = schema["properties"]["results"]
    assert results["items"] == {"$ref": "#/$defs/Passage"}
    assert schema["$defs"]["Id"] == {"type": "integer", "minimum": 1, "maximum": 8}
    assert "structured_outputs" not in body
    assert_never_guided_json(scripted_llm)
    await client.close()


async def test_rejected_json_schema_moves_to_tier2_and_is_remembered(
    scripted_llm: ScriptedLLM, caplog: pytest.LogCaptureFixture
) -> None:
    reject_tiers(scripted_llm, "json_schema")
    memory = CapabilityMemory()
    client = make_client(scripted_llm, memory=memory)
    caplog.set_level(logging.INFO, logger="app.llm.client")
    first = await ask(client)
    assert first.strategy == "structured_outputs"
    assert scripted_llm.tiers() == ["json_schema", "structured_outputs"]
    body = scripted_llm.requests[1]
    assert body["structured_outputs"]["json"]["$defs"]
    # A second call of the same kind goes straight to the tier that worked.
    second = await ask(client)
    assert second.strategy == "structured_outputs"
    assert second.tiers_tried == 1
    assert scripted_llm.tiers() == ["json_schema", "structured_outputs", "structured_outputs"]
    served = [r.getMessage() for r in caplog.records if "served by tier" in r.getMessage()]
    assert len(served) == 2
    assert all("structured_outputs" in m for m in served)
    # The memory is per (base URL, model): another client sharing it skips tier 1 as well.
    other = make_client(scripted_llm, memory=memory)
    await ask(other)
    assert scripted_llm.tiers()[-1] == "structured_outputs"
    assert_never_guided_json(scripted_llm)
    await client.close()
    await other.close()


@pytest.mark.parametrize("provider", ["vllm", "openai"])
async def test_a_scripted_verdict_is_answered_in_either_schema_form(
    scripted_llm: ScriptedLLM, provider: str
) -> None:
    # A chooser may give a verdict with its ids; the full form (vLLM) and the strict subset's
    # (OpenAI) decode to the same reply.
    scripted_llm.chooser = lambda passage, allowed, body: (
        ("part", [2]) if passage.n == 1 else ("no", [1])
    )
    client = make_client(scripted_llm, provider)
    result = await ask(client)
    assert result.strategy == ("json_schema" if provider == "vllm" else "json_schema+strict")
    assert result.value.by_position == {
        0: PassageAnswer([2], "partial"),
        1: PassageAnswer([], "unsupported"),
    }
    await client.close()


async def test_prompted_tier_strips_think_blocks_and_fences(scripted_llm: ScriptedLLM) -> None:
    reject_tiers(scripted_llm, "json_schema", "structured_outputs")
    client = make_client(scripted_llm)
    result = await ask(client)
    assert result.strategy == "prompted"
    prompted = scripted_llm.requests[-1]
    assert "response_format" not in prompted
    assert "structured_outputs" not in prompted
    assert "JSON Schema" in prompted["messages"][0]["content"]
    assert result.value.by_position == FIRST_SENTENCES
    await client.close()


async def test_reasoning_content_beside_the_answer_does_not_break_parsing(
    scripted_llm: ScriptedLLM,
) -> None:
    answer = {"results": [["part", 2]]}
    scripted_llm.handler = lambda body: completion(
        json.dumps(answer), reasoning_content="The second sentence {maybe} supports it."
    )
    client = make_client(scripted_llm)
    result = await ask(client)
    assert result.value.by_position == {0: PassageAnswer([2], "partial")}
    assert result.value.missing == [1]
    await client.close()


async def test_5xx_is_retried_on_the_same_tier_not_downgraded(scripted_llm: ScriptedLLM) -> None:
    replies = iter([error(503, "overloaded", "ServiceUnavailable"), error(500, "boom", "Internal")])

    def handler(body: dict[str, Any]) -> Reply:
        return next(replies, None) or scripted_llm.honour_schema(body)

    scripted_llm.handler = handler
    client = make_client(scripted_llm, max_retries=2)
    result = await ask(client)
    assert result.strategy == "json_schema"
    assert scripted_llm.tiers() == ["json_schema"] * 3
    await client.close()


async def test_persistent_5xx_gives_llm_unavailable_after_bounded_retries(
    scripted_llm: ScriptedLLM,
) -> None:
    scripted_llm.handler = lambda body: error(502, "bad gateway", "BadGateway")
    client = make_client(scripted_llm, max_retries=2)
    with pytest.raises(LLMUnavailable, match="3 attempts"):
        await ask(client)
    assert scripted_llm.tiers() == ["json_schema"] * 3
    await client.close()


async def test_timeout_is_retried_then_unavailable(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.handler = lambda body: Reply(body={}, delay_s=1.0)
    client = make_client(scripted_llm, timeout_s=0.2, max_retries=1)
    with pytest.raises(LLMUnavailable):
        await ask(client)
    assert scripted_llm.tiers() == ["json_schema", "json_schema"]
    await client.close()


async def test_rate_limit_honours_retry_after(scripted_llm: ScriptedLLM) -> None:
    replies = iter([Reply(429, {"error": {"message": "slow down"}}, headers={"retry-after": "0"})])
    scripted_llm.handler = lambda body: next(replies, None) or scripted_llm.honour_schema(body)
    client = make_client(scripted_llm)
    assert (await ask(client)).strategy == "json_schema"
    assert len(scripted_llm.requests) == 2
    await client.close()


async def test_truncation_is_reported_never_repaired_or_downgraded(
    scripted_llm: ScriptedLLM,
) -> None:
    scripted_llm.handler = lambda body: completion('{"results": [{"chunk_id": "doc-c0', "length")
    client = make_client(scripted_llm)
    with pytest.raises(LLMTruncated, match="max_tokens"):
        await ask(client)
    assert scripted_llm.tiers() == ["json_schema"]
    await client.close()


async def test_other_400_is_rejected_without_downgrade(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.handler = lambda body: error(
        400, "This model's maximum context length is 2048 tokens. However, you requested 5000."
    )
    memory = CapabilityMemory()
    client = make_client(scripted_llm, memory=memory)
    with pytest.raises(LLMRejected, match="context length"):
        await ask(client)
    assert scripted_llm.tiers() == ["json_schema"]
    assert memory.start((scripted_llm.base_url, "scripted-model")) == 0
    await client.close()


async def test_invalid_output_tries_next_tier_for_this_call_only(scripted_llm: ScriptedLLM) -> None:
    def handler(body: dict[str, Any]) -> Reply:
        if tier_of(body) == "json_schema":
            return completion("Sure! Sentence 2 of the first passage.")
        return scripted_llm.honour_schema(body)

    scripted_llm.handler = handler
    memory = CapabilityMemory()
    client = make_client(scripted_llm, memory=memory)
    assert (await ask(client)).strategy == "structured_outputs"
    assert memory.start((scripted_llm.base_url, "scripted-model")) == 0
    await client.close()


async def test_garbage_on_every_tier_is_invalid_output(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.handler = lambda body: completion('{"results": "none"}')
    client = make_client(scripted_llm)
    with pytest.raises(LLMInvalidOutput, match="HighlightBatchResult"):
        await ask(client)
    assert scripted_llm.tiers() == ["json_schema", "structured_outputs", "prompted"]
    await client.close()


async def test_bad_api_key_is_unavailable_without_retry(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.handler = lambda body: error(401, "Invalid API key", "AuthenticationError")
    client = make_client(scripted_llm)
    with pytest.raises(LLMUnavailable, match="API key"):
        await ask(client)
    assert len(scripted_llm.requests) == 1
    await client.close()


async def test_unreachable_server_is_unavailable() -> None:
    client = StructuredClient(
        base_url="http://127.0.0.1:9/v1",
        model="m",
        api_key="",
        profile=build_profile("vllm"),
        max_retries=1,
        backoff_s=0.01,
    )
    with pytest.raises(LLMUnavailable, match="did not answer"):
        await ask(client)
    await client.close()


def test_capability_memory_forgets_a_downgrade_after_its_ttl() -> None:
    now = [100.0]
    memory = CapabilityMemory(ttl_s=60, clock=lambda: now[0])
    key = ("http://vllm/v1", "m")
    memory.downgrade(key, 1)
    now[0] += 59
    assert memory.start(key) == 1
    memory.downgrade(key, 1)  # no refresh: the first refusal's time counts
    now[0] += 2
    assert memory.start(key) == 0


async def test_the_identity_changes_with_every_setting_that_shapes_the_request() -> None:
    """The result cache keys on the client's identity: each setting that changes what is sent
    changes it, and the same settings give the same identity (no second list in main.py)."""

    def identity(**overrides: Any) -> Any:
        settings: dict[str, Any] = {
            "base_url": "http://llm.local/v1",
            "model": "m",
            "api_key": "secret-key",
            "max_tokens": 512,
            "temperature": 0.0,
        }
        provider = overrides.pop("provider", "vllm")
        profile = build_profile(provider, **overrides.pop("profile", {}))
        return StructuredClient(**{**settings, **overrides}, profile=profile).identity

    base = identity()
    assert identity() == base
    assert identity(base_url="http://llm.local/v1/") == base  # the same endpoint
    assert "secret-key" not in json.dumps(base)
    for changed in (
        identity(provider="openrouter"),
        identity(base_url="http://other/v1"),
        identity(model="m2"),
        identity(max_tokens=1024),
        identity(temperature=0.2),
        identity(profile={"tiers": ("json_schema", "prompted")}),
        identity(profile={"chat_template_kwargs": {"enable_thinking": False}}),
    ):
        assert changed != base
