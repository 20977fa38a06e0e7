"""The real service against a real vLLM server (CPU build, tiny random-weight model).

A random model picks arbitrary sentences; what these tests prove is the protocol: the narrowed
`$defs` schema compiles and constrains decoding, each tier works against vLLM, refusals move down
a tier and are remembered, truncation is reported, and `guided_json` is never sent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import openai
import pytest

from app.highlights.contract import ChunkChoice, narrowed_schema, validate_reply
from app.llm.client import CapabilityMemory, StructuredClient
from app.llm.errors import LLMInvalidOutput, LLMTruncated
from app.llm.providers import build_profile
from tests.api.helpers import CHUNK_LIGATURES, CHUNK_MAIN, ingest_sample, similarity, text_under
from tests.fixtures.app import app_client, make_settings

pytestmark = pytest.mark.vllm

ANSWER = "The programme costs 12.5 billion shillings; counties pay one third of running costs."


class Recorder:
    """Keeps every JSON body the service sends to vLLM, as it leaves on the wire."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def hook(self, request: Any) -> None:
        self.bodies.append(json.loads(request.content or b"{}"))

    def client(self) -> openai.DefaultAsyncHttpxClient:
        return openai.DefaultAsyncHttpxClient(event_hooks={"request": [self.hook]})

    def assert_never_guided(self) -> None:
        for body in self.bodies:
            assert not [k for k in body if k.startswith("guided_")], body.keys()


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def sqlite_url(tmp_path: Path, sqlite_template: Path) -> str:
    shutil.copyfile(sqlite_template, tmp_path / "v.db")
    return f"sqlite+aiosqlite:///{tmp_path / 'v.db'}"


def settings_for(server: Any, url: str, pdf_root: Path, **extra: Any) -> Any:
    values = {
        "llm_provider": "vllm",
        "llm_base_url": server.base_url,
        "llm_model": server.model,
        "llm_max_tokens": 400,
        "llm_timeout_s": 120.0,
        "llm_max_retries": 0,
    }
    return make_settings(url, pdf_root, **(values | extra))


async def run_batch(settings: Any, recorder: Recorder, *chunks: str) -> dict[str, Any]:
    body = {
        "query": "What does the water programme cost?",
        "answer": ANSWER,
        "citations": [{"chunk_id": c} for c in chunks],
    }
    async with app_client(settings, recorder.client()) as client:
        response = await client.post("/v2/highlights/batch", json=body)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def assert_valid_llm_highlights(data: dict[str, Any], pdf: Path) -> None:
    assert data["method"] == "llm", data
    for result in data["results"]:
        assert result["reason"] in (None, "no_relevant_sentences"), result
        for h in result["highlights"]:
            assert result["page_start"] <= h["page"] <= result["page_end"]
            assert similarity(text_under(pdf, h["rects"]), h["text"]) >= 90, h


async def test_batch_through_tier1_json_schema(
    vllm_server: Any, sqlite_url: str, pdf_root: Path, recorder: Recorder
) -> None:
    offset = vllm_server.log_size()
    settings = settings_for(vllm_server, sqlite_url, pdf_root)
    await ingest_sample(settings)
    data = await run_batch(settings, recorder, CHUNK_MAIN, CHUNK_LIGATURES)
    # Greedy decoding of a fixed-seed model is deterministic: it names a sentence in each chunk.
    assert data["status"] == "complete"
    assert data["llm_tier"] == "json_schema"
    assert_valid_llm_highlights(data, pdf_root / "sample" / "sample-assembly.pdf")
    (body,) = recorder.bodies
    assert "$defs" in body["response_format"]["json_schema"]["schema"]
    recorder.assert_never_guided()
    assert "Failed to transform" not in vllm_server.log_since(offset)


async def test_batch_through_tier2_when_tier1_is_disabled(
    vllm_server: Any, sqlite_url: str, pdf_root: Path, recorder: Recorder
) -> None:
    settings = settings_for(
        vllm_server,
        sqlite_url,
        pdf_root,
        llm_tiers=["structured_outputs", "prompted"],
        llm_chat_template_kwargs={"enable_thinking": False},
    )
    await ingest_sample(settings)
    data = await run_batch(settings, recorder, CHUNK_MAIN, CHUNK_LIGATURES)
    assert data["status"] == "complete"
    assert data["llm_tier"] == "structured_outputs"
    assert_valid_llm_highlights(data, pdf_root / "sample" / "sample-assembly.pdf")
    (body,) = recorder.bodies
    assert "response_format" not in body
    assert "$defs" in body["structured_outputs"]["json"]
    # Both extras arrive side by side: neither clobbers the other.
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    recorder.assert_never_guided()


async def test_too_small_max_tokens_is_reported_as_truncation(
    vllm_server: Any, sqlite_url: str, pdf_root: Path, recorder: Recorder
) -> None:
    settings = settings_for(vllm_server, sqlite_url, pdf_root, llm_max_tokens=16)
    await ingest_sample(settings)
    data = await run_batch(settings, recorder, CHUNK_MAIN, CHUNK_LIGATURES)
    assert data["method"] == "lexical"
    assert {r["reason"] for r in data["results"]} == {"llm_truncated"}
    # Truncation is not a reason to change tier or to "repair" the JSON: one request only.
    assert len(recorder.bodies) == 1


async def test_other_400_is_not_a_downgrade(
    vllm_server: Any, sqlite_url: str, pdf_root: Path, recorder: Recorder
) -> None:
    # vLLM: "max_tokens=5000 cannot be greater than max_model_len=2048 ..."
    settings = settings_for(vllm_server, sqlite_url, pdf_root, llm_max_tokens=5000)
    await ingest_sample(settings)
    data = await run_batch(settings, recorder, CHUNK_MAIN)
    assert data["results"][0]["reason"] == "llm_rejected"
    assert len(recorder.bodies) == 1


async def test_refused_schema_feature_moves_down_a_tier_and_is_remembered(
    vllm_server: Any, recorder: Recorder
) -> None:
    choices = [ChunkChoice(4), ChunkChoice(3)]
    schema = narrowed_schema(choices, 2)
    for position in schema["properties"]["results"]["prefixItems"]:
        # xgrammar refuses uniqueItems: "features not supported by xgrammar".
        position["uniqueItems"] = True
    memory = CapabilityMemory()
    client = StructuredClient(
        base_url=vllm_server.base_url,
        model=vllm_server.model,
        api_key="",
        profile=build_profile("vllm"),
        max_tokens=64,
        max_retries=0,
        timeout_s=120,
        memory=memory,
        http_client=recorder.client(),
    )

    async def ask() -> None:
        # Tier 3 has no grammar: a random-weight model writes noise, so the call still fails;
        # what matters here is which tiers were tried.
        with pytest.raises((LLMInvalidOutput, LLMTruncated)):
            await client.complete_json(
                system="Pick sentences.",
                user="[1] One. [2] Two.",
                schema=schema,
                schema_name="HighlightBatchResult",
                validate=lambda raw: validate_reply(raw, choices, 2),
            )

    await ask()
    tiers = [
        "json_schema"
        if "response_format" in b
        else "structured"
        if "structured_outputs" in b
        else "prompted"
        for b in recorder.bodies
    ]
    assert tiers == ["json_schema", "structured", "prompted"]
    assert memory.start((vllm_server.base_url.rstrip("/"), vllm_server.model)) == 2
    await ask()
    assert len(recorder.bodies) == 4
    assert "response_format" not in recorder.bodies[3]
    assert "structured_outputs" not in recorder.bodies[3]
    recorder.assert_never_guided()
    await client.close()
