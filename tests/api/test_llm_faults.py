"""What the LLM does wrong never becomes a 500 or a false "nothing supports the answer": the batch
answers 200 with the lexical selector and a reason, and a provider route that works is used."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.api.helpers import CHUNK_LIGATURES, CHUNK_MAIN, ingest_sample
from tests.api.test_highlights import batch, post
from tests.fixtures.app import make_settings
from tests.fixtures.llm_server import Reply, ScriptedLLM, completion
from tests.fixtures.providers import OpenAIModel, OpenRouter


def settings_for(
    database_url: str, pdf_root: Path, server: ScriptedLLM, provider: str = "vllm", **extra: Any
) -> Any:
    model = "openai/gpt-4o-mini" if provider == "openrouter" else "scripted-model"
    values: dict[str, Any] = {
        "llm_provider": provider,
        "llm_base_url": server.base_url,
        "llm_model": model,
        "llm_api_key": "sk-test",
        "llm_max_retries": 0,
    }
    return make_settings(database_url, pdf_root, **{**values, **extra})


async def test_openrouter_with_an_openai_model_uses_the_llm(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.handler = OpenRouter(scripted_llm, OpenAIModel(scripted_llm))
    settings = settings_for(database_url, pdf_root, scripted_llm, "openrouter")
    await ingest_sample(settings)
    data = await post(settings, batch(CHUNK_MAIN, CHUNK_LIGATURES))
    assert (data["status"], data["method"], data["llm_tier"]) == (
        "complete",
        "llm",
        "json_schema+strict",
    )
    assert [r["reason"] for r in data["results"]] == [None, None]
    assert len(scripted_llm.requests) == 1


NOT_A_COMPLETION = {
    "html": Reply(
        body="<html><body><h1>502 Bad Gateway</h1></body></html>", content_type="text/html"
    ),
    "text": Reply(body="upstream connect error", content_type="text/plain"),
    "broken-json": Reply(body='{"id": "chatcmpl-1", "choices": [', content_type="application/json"),
    "no-choices": Reply(body={"id": "chatcmpl-1", "object": "chat.completion", "choices": []}),
    "choice-without-message": Reply(
        body={"id": "chatcmpl-1", "choices": [{"index": 0, "finish_reason": "stop"}]}
    ),
    "choices-not-a-list": Reply(body={"id": "chatcmpl-1", "choices": {"0": {}}}),
    "content-not-text": Reply(
        body={
            "id": "chatcmpl-1",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": 7},
                    "finish_reason": "stop",
                }
            ],
        }
    ),
    "a-json-list": Reply(body="[1, 2, 3]"),
}


@pytest.mark.parametrize("reply", list(NOT_A_COMPLETION.values()), ids=list(NOT_A_COMPLETION))
async def test_a_200_that_is_not_a_chat_completion_is_invalid_output(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM, reply: Reply
) -> None:
    scripted_llm.handler = lambda body: reply
    settings = settings_for(database_url, pdf_root, scripted_llm)
    await ingest_sample(settings)
    data = await post(settings, batch(CHUNK_MAIN))
    assert data["method"] == "lexical"
    (result,) = data["results"]
    assert (result["status"], result["reason"]) == ("highlighted", "llm_invalid_output")


async def test_an_openrouter_error_inside_a_200_is_llm_unavailable(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    # OpenRouter's docs: an error after generation started comes back in a 200 body.
    body = {"error": {"message": "Provider returned error", "code": 502}, "user_id": "u"}
    scripted_llm.handler = lambda request: Reply(body=body)
    settings = settings_for(database_url, pdf_root, scripted_llm, "openrouter")
    await ingest_sample(settings)
    (result,) = (await post(settings, batch(CHUNK_MAIN)))["results"]
    assert (result["status"], result["reason"]) == ("highlighted", "llm_unavailable")


async def test_only_unknown_sentence_ids_is_invalid_output_not_unsupported(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    def unknown_ids(body: dict[str, Any]) -> Reply:
        # One id list per passage, in the prompt's order: only ids no chunk has.
        return completion(json.dumps({"results": [[900, 901], [900, 901]]}))

    scripted_llm.handler = unknown_ids
    settings = settings_for(database_url, pdf_root, scripted_llm)
    await ingest_sample(settings)
    data = await post(settings, batch(CHUNK_MAIN, CHUNK_LIGATURES))
    assert data["method"] == "lexical"
    assert [(r["status"], r["reason"]) for r in data["results"]] == [
        ("highlighted", "llm_invalid_output"),
        ("highlighted", "llm_invalid_output"),
    ]
    # Every tier was asked before giving up on the LLM for this batch.
    assert len(scripted_llm.requests) == 3


async def test_one_chunk_with_only_unknown_ids_falls_back_alone(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    def half_unknown(body: dict[str, Any]) -> Reply:
        return completion(json.dumps({"results": [[5], [77]]}))

    scripted_llm.handler = half_unknown
    settings = settings_for(database_url, pdf_root, scripted_llm)
    await ingest_sample(settings)
    data = await post(settings, batch(CHUNK_MAIN, CHUNK_LIGATURES))
    assert data["method"] == "llm"
    main, ligatures = data["results"]
    assert (main["status"], main["reason"]) == ("highlighted", None)
    assert [h["sentence_id"] for h in main["highlights"]] == [5]
    assert (ligatures["status"], ligatures["reason"]) == ("highlighted", "llm_invalid_output")
