"""A reasoning model behind the service: with the default setting (HIGHLIGHT_LLM_REASONING_EFFORT
auto) a batch is answered by the LLM, not pushed onto word overlap because the model spent
HIGHLIGHT_LLM_MAX_TOKENS reasoning; without a low effort the batch falls back with a reason and a
message that say so. The scripted server reasons as real models do (ScriptedLLM.reasoning_model).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.core.config import Settings
from tests.api.helpers import CHUNK_LIGATURES, CHUNK_MAIN, ingest_sample
from tests.api.test_highlights import batch, post
from tests.api.test_llm_faults import settings_for as faults_settings
from tests.fixtures.app import app_client
from tests.fixtures.llm_server import ScriptedLLM, effort_of
from tests.fixtures.providers import OpenAIModel, OpenRouter

O_SERIES = ("low", "medium", "high")


def settings_for(
    database_url: str, pdf_root: Path, server: ScriptedLLM, provider: str, **extra: Any
) -> Settings:
    """The fault tests' settings, with a reasoning model's name."""
    model = "openai/o4-mini" if provider == "openrouter" else "o4-mini"
    settings: Settings = faults_settings(
        database_url, pdf_root, server, provider, **{"llm_model": model, **extra}
    )
    return settings


def reasoning_model(server: ScriptedLLM, provider: str) -> None:
    """The scripted server as ``provider`` serving a reasoning model: OpenAI's o-series (refuses
    temperature 0 and efforts below low), one through OpenRouter, gpt-oss on vLLM."""
    if provider == "openai":
        server.handler = OpenAIModel(server, reasoning=True)
        server.reasoning_model("openai", accepts=O_SERIES)
    elif provider == "openrouter":
        server.handler = OpenRouter(server)
        server.reasoning_model("openrouter")
    else:
        server.reasoning_model("vllm", accepts=O_SERIES)


# What the default setting ends up sending each provider's reasoning model.
SERVED_WITH = {"openai": "low", "openrouter": "none", "vllm": "low"}


@pytest.mark.parametrize("provider", ["openai", "openrouter", "vllm"])
async def test_a_reasoning_model_answers_the_batch_with_the_default_setting(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM, provider: str
) -> None:
    reasoning_model(scripted_llm, provider)
    settings = settings_for(database_url, pdf_root, scripted_llm, provider)
    assert settings.llm_reasoning_effort == "auto"
    await ingest_sample(settings)
    data = await post(settings, batch(CHUNK_MAIN, CHUNK_LIGATURES))
    assert (data["status"], data["method"]) == ("complete", "llm")
    assert [r["reason"] for r in data["results"]] == [None, None]
    # The effort went in the provider's own form, and the one served is the lowest it takes.
    served = scripted_llm.requests[-1]
    assert effort_of(served) == SERVED_WITH[provider]
    if provider == "openrouter":
        assert served["reasoning"] == {"effort": "none"}
    else:
        assert served["reasoning_effort"] == SERVED_WITH[provider]


async def test_the_effort_learned_is_kept_for_the_next_batch(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    reasoning_model(scripted_llm, "openai")
    settings = settings_for(database_url, pdf_root, scripted_llm, "openai")
    await ingest_sample(settings)
    async with app_client(settings) as client:
        first = await client.post("/v2/highlights/batch", json=batch(CHUNK_MAIN))
        learned = len(scripted_llm.requests)
        second = await client.post("/v2/highlights/batch", json=batch(CHUNK_LIGATURES))
    assert [first.json()["method"], second.json()["method"]] == ["llm", "llm"]
    # First: none refused, low with temperature 0 refused, low served.
    assert [effort_of(b) for b in scripted_llm.requests[:learned]] == ["none", "low", "low"]
    # Then straight to what worked.
    assert [effort_of(b) for b in scripted_llm.requests[learned:]] == ["low"]


@pytest.mark.parametrize("effort", ["off", "medium"])
@pytest.mark.parametrize("provider", ["openai", "openrouter"])
async def test_without_a_low_effort_the_budget_goes_on_reasoning_and_the_batch_says_so(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM, provider: str, effort: str
) -> None:
    # off: the model reasons at its default, medium: 2048 tokens, over the 1024 of the default
    # HIGHLIGHT_LLM_MAX_TOKENS.
    reasoning_model(scripted_llm, provider)
    settings = settings_for(
        database_url, pdf_root, scripted_llm, provider, llm_reasoning_effort=effort
    )
    assert settings.llm_max_tokens == 1024
    await ingest_sample(settings)
    data = await post(settings, batch(CHUNK_MAIN, CHUNK_LIGATURES))
    assert data["method"] == "lexical"
    for result in data["results"]:
        assert (result["status"], result["reason"]) == ("highlighted", "llm_truncated")
        assert "spent its whole token budget reasoning" in result["message"]
    served = scripted_llm.requests[-1]
    assert effort_of(served) == (None if effort == "off" else effort)
