"""Reasoning models against the scripted server in its reasoning mode (ScriptedLLM.reasoning_model),
over real HTTP: the effort each provider is sent and in which form, the step up past an effort the
model refuses, a model that takes none, and a reply whose whole budget went on reasoning.

Sources of the bodies: app/llm/refusals.py and app/llm/providers.py.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from app.highlights.contract import ChunkChoice, narrowed_schema, validate_reply
from app.llm.client import CapabilityMemory, StructuredClient
from app.llm.errors import LLMTruncated
from app.llm.providers import build_profile
from app.llm.refusals import read_refusal
from tests.fixtures.llm_server import Reply, ScriptedLLM, completion, effort_of, error
from tests.fixtures.providers import OpenAIModel, OpenRouter, openai_error

CHOICES = [ChunkChoice(4), ChunkChoice(3)]
O_SERIES = ("low", "medium", "high")
GPT_5 = ("minimal", "low", "medium", "high")


def make_client(
    server: ScriptedLLM,
    provider: str,
    effort: Any = "auto",
    memory: CapabilityMemory | None = None,
    **kwargs: Any,
) -> StructuredClient:
    return StructuredClient(
        base_url=server.base_url,
        model="m",
        api_key="k",
        profile=build_profile(provider, reasoning_effort=effort),
        memory=memory or CapabilityMemory(),
        backoff_s=0.01,
        max_retries=0,
        **kwargs,
    )


async def ask(client: StructuredClient) -> str:
    """One call; the strategy that served it."""
    done = await client.complete_json(
        system="Pick sentences.",
        user="<passage>...</passage>",
        schema=narrowed_schema(CHOICES, 2),
        schema_name="HighlightBatchResult",
        validate=lambda raw: validate_reply(raw, CHOICES, 2),
    )
    return done.strategy


async def call(server: ScriptedLLM, provider: str, effort: Any = "auto", **kwargs: Any) -> str:
    client = make_client(server, provider, effort, **kwargs)
    try:
        return await ask(client)
    finally:
        await client.close()


def efforts(server: ScriptedLLM) -> list[str | None]:
    return [effort_of(body) for body in server.requests]


@pytest.mark.parametrize("provider", ["openai", "vllm", "openrouter"])
async def test_auto_sends_the_lowest_effort_in_the_providers_own_form(
    scripted_llm: ScriptedLLM, provider: str
) -> None:
    scripted_llm.reasoning_model("openrouter")
    assert await call(scripted_llm, provider) != "prompted"
    (body,) = scripted_llm.requests
    if provider == "openrouter":
        assert body["reasoning"] == {"effort": "none"}
        assert "reasoning_effort" not in body
        # Beside, not instead of, the routing option of the schema tiers.
        assert body["provider"] == {"require_parameters": True}
    else:
        assert body["reasoning_effort"] == "none"
        assert "reasoning" not in body


@pytest.mark.parametrize("provider", ["openai", "vllm", "openrouter"])
async def test_off_sends_no_reasoning_parameter(scripted_llm: ScriptedLLM, provider: str) -> None:
    await call(scripted_llm, provider, "off")
    (body,) = scripted_llm.requests
    assert "reasoning_effort" not in body
    assert "reasoning" not in body


@pytest.mark.parametrize("dialect", ["openrouter", "vllm", "deepseek"])
async def test_an_explicit_effort_is_sent_and_only_the_content_is_read(
    scripted_llm: ScriptedLLM, dialect: str
) -> None:
    # "low" reasons 256 tokens, which come back as text beside the JSON answer: the answer is
    # read from the content alone.
    scripted_llm.reasoning_model(dialect)
    provider = "openrouter" if dialect == "openrouter" else "vllm"
    assert await call(scripted_llm, provider, "low") != "prompted"
    assert efforts(scripted_llm) == ["low"]


@pytest.mark.parametrize(
    ("provider", "dialect", "accepts", "stepped_to"),
    [
        ("openai", "openai", O_SERIES, "low"),  # named in "Supported values are: ..."
        ("openai", "openai", GPT_5, "minimal"),
        ("vllm", "vllm", O_SERIES, "low"),  # gpt-oss: "not supported by Harmony"
        ("openrouter", "openrouter", GPT_5, "minimal"),  # "Reasoning is mandatory": one step
    ],
    ids=["openai-o-series", "openai-gpt-5", "vllm-gpt-oss", "openrouter-mandatory"],
)
async def test_auto_steps_up_past_a_refused_effort_and_remembers_it(
    scripted_llm: ScriptedLLM,
    provider: str,
    dialect: str,
    accepts: tuple[str, ...],
    stepped_to: str,
) -> None:
    scripted_llm.reasoning_model(dialect, accepts=accepts)
    memory = CapabilityMemory()
    first = await call(scripted_llm, provider, memory=memory)
    assert efforts(scripted_llm) == ["none", stepped_to]
    # Per model, like the other quirks: the next call asks at once with what worked, on the
    # same tier (a refused effort is not a refused schema).
    assert await call(scripted_llm, provider, memory=memory) == first != "prompted"
    assert efforts(scripted_llm) == ["none", stepped_to, stepped_to]
    assert memory.start((scripted_llm.base_url, "m")) == 0


NOT_REASONING = {
    # davidmigloz/langchain_dart#712 (gpt-4o-mini): also the words of a schema refusal
    # ("unrecognized request argument"), which must not cost the tier.
    "openai-unrecognized": openai_error("Unrecognized request argument supplied: reasoning_effort"),
    "openai-unsupported": openai_error(
        "Unsupported parameter: 'reasoning_effort' is not supported with this model.",
        "reasoning_effort",
        "unsupported_parameter",
    ),
    # brendanlong/lion-reader#1325 (Groq, Cerebras)
    "groq": {"error": {"message": "reasoning_effort is not supported with this model"}},
}


@pytest.mark.parametrize("refusal", list(NOT_REASONING.values()), ids=list(NOT_REASONING))
async def test_a_model_that_does_not_reason_is_sent_no_effort_and_it_is_remembered(
    scripted_llm: ScriptedLLM, refusal: dict[str, Any]
) -> None:
    def handler(body: dict[str, Any]) -> Reply:
        if "reasoning_effort" in body:
            return Reply(status=400, body=refusal)
        return scripted_llm.honour_schema(body)

    scripted_llm.handler = handler
    memory = CapabilityMemory()
    assert await call(scripted_llm, "openai", memory=memory) == "json_schema+strict"
    assert efforts(scripted_llm) == ["none", None]
    assert await call(scripted_llm, "openai", memory=memory) == "json_schema+strict"
    assert efforts(scripted_llm) == ["none", None, None]
    assert memory.start((scripted_llm.base_url, "m")) == 0


async def test_openai_fixture_model_without_reasoning_refuses_the_effort(
    scripted_llm: ScriptedLLM,
) -> None:
    scripted_llm.handler = OpenAIModel(scripted_llm, refuses_effort=True)
    assert await call(scripted_llm, "openai") == "json_schema+strict"
    assert efforts(scripted_llm) == ["none", None]
    # Only the effort was left out: temperature 0 still goes, on the same tier.
    assert [b["temperature"] for b in scripted_llm.requests] == [0, 0]


async def test_openrouter_without_an_endpoint_for_reasoning_leaves_out_only_the_effort(
    scripted_llm: ScriptedLLM,
) -> None:
    # require_parameters and a model that does not reason: no endpoint takes `reasoning`.
    scripted_llm.handler = OpenRouter(scripted_llm, refuses_reasoning_when_required=True)
    memory = CapabilityMemory()
    assert await call(scripted_llm, "openrouter", memory=memory) == "json_schema+strict"
    sent = [("temperature" in b, "reasoning" in b) for b in scripted_llm.requests]
    assert sent == [(True, True), (False, True), (True, False)]
    # Temperature was not to blame and is kept; the effort is left out from now on.
    await call(scripted_llm, "openrouter", memory=memory)
    assert [("temperature" in b, "reasoning" in b) for b in scripted_llm.requests[3:]] == [
        (True, False)
    ]


async def test_an_explicit_effort_that_is_refused_is_left_out_with_one_warning(
    scripted_llm: ScriptedLLM, caplog: pytest.LogCaptureFixture
) -> None:
    scripted_llm.reasoning_model("openai", accepts=O_SERIES)
    memory = CapabilityMemory()
    caplog.set_level(logging.INFO, logger="app.llm.client")
    # Left out, the model reasons at its default (medium, 2048 tokens): a budget that holds it.
    budget = {"memory": memory, "max_tokens": 4096}
    assert await call(scripted_llm, "openai", "minimal", **budget) != "prompted"
    # Never changed to another value ("low" would have been taken): the deployment chose it.
    assert efforts(scripted_llm) == ["minimal", None]
    await call(scripted_llm, "openai", "minimal", **budget)
    assert efforts(scripted_llm) == ["minimal", None, None]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "'minimal'" in warnings[0]
    assert "HIGHLIGHT_LLM_REASONING_EFFORT" in warnings[0]


@pytest.mark.parametrize("dialect", ["openai", "openrouter", "vllm", "deepseek"])
@pytest.mark.parametrize("effort", ["off", "medium"])
async def test_a_budget_spent_reasoning_is_reported_as_such(
    scripted_llm: ScriptedLLM, dialect: str, effort: str
) -> None:
    # off: the model reasons at its default (medium, 2048 tokens); both are over 1024.
    scripted_llm.reasoning_model(dialect)
    provider = {"openai": "openai", "openrouter": "openrouter"}.get(dialect, "vllm")
    with pytest.raises(LLMTruncated) as raised:
        await call(scripted_llm, provider, effort)
    assert raised.value.by_reasoning
    message = raised.value.message
    assert "whole token budget (1024) reasoning before answering" in message
    assert "HIGHLIGHT_LLM_MAX_TOKENS" in message
    assert "HIGHLIGHT_LLM_REASONING_EFFORT" in message
    # Reported, never retried on another tier (it would reason just as long there).
    assert len(scripted_llm.requests) == 1


async def test_a_reply_cut_after_the_reasoning_is_an_ordinary_truncation(
    scripted_llm: ScriptedLLM,
) -> None:
    # 256 tokens of reasoning leave 4 for the answer: the JSON is cut, not missing.
    scripted_llm.reasoning_model("openrouter")
    with pytest.raises(LLMTruncated) as raised:
        await call(scripted_llm, "openrouter", "low", max_tokens=260)
    assert not raised.value.by_reasoning
    assert "max_tokens=260 before the JSON was complete" in raised.value.message


@pytest.mark.parametrize(
    "reply",
    [
        completion('{"results": [', "length"),
        completion("", "length"),  # empty, but nothing says the model reasoned
    ],
    ids=["cut-json", "empty-without-reasoning"],
)
async def test_ordinary_truncation_keeps_its_message(
    scripted_llm: ScriptedLLM, reply: Reply
) -> None:
    scripted_llm.handler = lambda body: reply
    with pytest.raises(LLMTruncated) as raised:
        await call(scripted_llm, "vllm")
    assert not raised.value.by_reasoning
    assert "max_tokens=1024 before the JSON was complete" in raised.value.message


def test_the_identity_names_the_effort() -> None:
    """The result cache keys on the identity: a different effort is a different answer."""

    def identity(provider: str, effort: Any) -> Any:
        profile = build_profile(provider, reasoning_effort=effort)
        return StructuredClient(base_url="http://x/v1", model="m", api_key="", profile=profile)

    auto = identity("openai", "auto").identity
    assert {r["reasoning_effort"] for r in auto["requests"]} == {"none"}
    assert identity("openai", "low").identity != auto
    off = identity("openai", "off").identity
    assert off != auto
    assert not any("reasoning_effort" in r for r in off["requests"])
    routed = identity("openrouter", "auto").identity["requests"]
    assert {r["extra_body"]["reasoning"]["effort"] for r in routed} == {"none"}


def test_an_unknown_effort_is_refused_when_the_profile_is_built() -> None:
    with pytest.raises(ValueError, match="reasoning effort"):
        build_profile("openai", reasoning_effort="extreme")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("body", "refused", "kind", "supported"),
    [
        (
            openai_error(
                "Unsupported value: 'reasoning_effort' does not support 'none' with this model. "
                "Supported values are: 'minimal', 'low', 'medium', and 'high'.",
                "reasoning_effort",
                "unsupported_value",
            ),
            "reasoning_effort",
            "value",
            ("minimal", "low", "medium", "high"),
        ),
        (
            error(
                400,
                "reasoning_effort='none' is not supported by Harmony. Supported values are: "
                "high, medium, low. (parameter=reasoning_effort)",
            ).body,
            "reasoning_effort",
            "value",
            ("high", "medium", "low"),
        ),
        (
            {
                "error": {
                    "message": "Reasoning is mandatory for this endpoint and cannot be disabled.",
                    "code": 400,
                    "metadata": {"provider_name": None},
                }
            },
            "reasoning_effort",
            "value",
            (),
        ),
        (
            # vLLM's own validation of its Literal: pydantic's message inside the error's repr.
            {
                "error": {
                    "message": "1 validation error:\n  {'type': 'literal_error', 'loc': "
                    "('body', 'reasoning_effort'), 'msg': \"Input should be 'low', 'medium' "
                    "or 'high'\", 'input': 'none'}",
                    "param": "body.reasoning_effort",
                }
            },
            "reasoning_effort",
            "value",
            ("low", "medium", "high"),
        ),
        (NOT_REASONING["openai-unrecognized"], "reasoning_effort", "parameter", ()),
        (NOT_REASONING["groq"], "reasoning_effort", "parameter", ()),
        (
            openai_error(
                "Unsupported value: 'temperature' does not support 0 with this model. Only the "
                "default (1) value is supported.",
                "temperature",
                "unsupported_value",
            ),
            "temperature",
            None,
            (),
        ),
        (
            {"error": {"message": "No endpoints found that can handle the requested parameters."}},
            None,
            None,
            (),
        ),
    ],
    ids=[
        "openai-value",
        "vllm-harmony",
        "openrouter-mandatory",
        "vllm-literal",
        "openai-parameter",
        "groq-parameter",
        "temperature",
        "no-endpoints",
    ],
)
def test_refusals_of_the_effort_are_told_apart(
    body: dict[str, Any], refused: str | None, kind: str | None, supported: tuple[str, ...]
) -> None:
    refusal = read_refusal(body, "")
    assert refusal.refused_parameter == refused
    assert refusal.refuses_effort == kind
    if kind is not None:
        assert refusal.supported_values == supported
