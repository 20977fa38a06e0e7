"""The real service against a real vLLM server (CPU build, tiny random-weight model).

A random model picks arbitrary sentences; what these tests prove is the protocol: the narrowed
`$defs` schema compiles and constrains decoding, each tier works against vLLM, refusals move down
a tier and are remembered, truncation is reported, and `guided_json` is never sent.
"""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest

from app.highlights.contract import ChunkChoice, Selection, narrowed_schema, validate_reply
from app.highlights.prompts import PromptChunk, system_prompt, user_prompt
from app.llm.client import CapabilityMemory, StructuredClient
from app.llm.errors import LLMInvalidOutput, LLMTruncated
from app.llm.providers import build_profile
from app.selection.sentences import split_sentences
from tests.api.helpers import CHUNK_LIGATURES, CHUNK_MAIN, ingest_sample, similarity, text_under
from tests.fixtures.app import app_client, make_settings
from tests.vllm.test_protocol import response_format

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


def vllm_client(
    vllm_server: Any, recorder: Recorder, max_tokens: int, memory: CapabilityMemory | None = None
) -> StructuredClient:
    """The structured client on the suite's server, no retries, its requests recorded."""
    return StructuredClient(
        base_url=vllm_server.base_url,
        model=vllm_server.model,
        api_key="",
        profile=build_profile("vllm"),
        max_tokens=max_tokens,
        max_retries=0,
        timeout_s=120,
        memory=memory,
        http_client=recorder.client(),
    )


def assert_valid_llm_highlights(data: dict[str, Any], pdf: Path) -> None:
    assert data["method"] == "llm", data
    # The schema bounds ids by the batch's longest chunk (15 sentences: up to 16), so the random
    # model may name, for the one-sentence chunk, only ids it does not have: that chunk falls
    # back alone. The longest chunk's passage is always the model's.
    reasons = [result["reason"] for result in data["results"]]
    assert reasons[0] in (None, "unsupported"), data
    assert set(reasons) <= {None, "unsupported", "llm_invalid_output"}, data
    for result in data["results"]:
        # The model's verdict, whatever it is, reaches the answer: "no" lights nothing.
        if result["reason"] != "llm_invalid_output":
            assert result["support"] in ("supported", "partial", "unsupported"), result
            if result["support"] == "unsupported":
                assert not result["highlights"], result
            assert 0.0 <= result["support_score"] <= 1.0, result
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
    assert data["status"] in ("complete", "partial")
    assert data["llm_tier"] == "json_schema"
    assert_valid_llm_highlights(data, pdf_root / "sample" / "sample-assembly.pdf")
    (body,) = recorder.bodies
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema == narrowed_schema([ChunkChoice(15), ChunkChoice(1)], 5)  # the bucketed one
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
    assert data["status"] in ("complete", "partial")
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
    # vLLM: "max_tokens=N cannot be greater than max_model_len=2048 ..." (more than the context).
    too_many = vllm_server.max_model_len() + 1000
    settings = settings_for(vllm_server, sqlite_url, pdf_root, llm_max_tokens=too_many)
    await ingest_sample(settings)
    data = await run_batch(settings, recorder, CHUNK_MAIN)
    assert data["results"][0]["reason"] == "llm_rejected"
    assert len(recorder.bodies) == 1


async def test_refused_schema_feature_moves_down_a_tier_and_is_remembered(
    vllm_server: Any, recorder: Recorder
) -> None:
    choices = [ChunkChoice(4), ChunkChoice(3)]
    schema = narrowed_schema(choices, 2)
    # xgrammar refuses uniqueItems: "features not supported by xgrammar".
    schema["properties"]["results"]["uniqueItems"] = True
    memory = CapabilityMemory()
    client = vllm_client(vllm_server, recorder, max_tokens=64, memory=memory)

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


def verdict_batch(counts: list[int]) -> tuple[list[ChunkChoice], str]:
    """The service's prompt for chunks of ``counts`` numbered sentences, one passage each."""
    chunks = [
        PromptChunk(
            f"doc-c{i:04d}",
            split_sentences(" ".join(f"Clause {n} of part {i} applies." for n in range(count))),
            "The programme costs 12.5 billion shillings.",
        )
        for i, count in enumerate(counts)
    ]
    assert [len(c.sentences) for c in chunks] == counts
    return [ChunkChoice(n) for n in counts], user_prompt("What does it cost?", ANSWER, chunks)


def assert_answers(selection: Selection, choices: list[ChunkChoice]) -> None:
    """Whatever the random model chose: a verdict per passage, ids of the passage's chunk."""
    assert sorted([*selection.by_position, *selection.invalid]) == list(range(len(choices)))
    for position, answer in selection.by_position.items():
        assert answer.verdict in ("supported", "partial", "unsupported")
        if answer.verdict == "unsupported":
            assert answer.ids == []
        else:
            assert 1 <= len(answer.ids) <= 5
            assert all(1 <= i <= choices[position].sentence_count for i in answer.ids)


STRICT = build_profile("openai").strategies[0]
VERDICT_FORMS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "response_format": lambda schema: {"response_format": response_format(schema)},
    "structured_outputs": lambda schema: {"extra_body": {"structured_outputs": {"json": schema}}},
    "strict_response_format": lambda schema: {
        "response_format": response_format(STRICT.shape(schema))
    },
}


@pytest.mark.parametrize("form", list(VERDICT_FORMS))
async def test_the_verdict_schema_constrains_the_reply_in_each_form(
    form: str, vllm_server: Any, schema_validator: Any
) -> None:
    # Chunks of 8 sentences: every id the bucket allows (1..8) names a sentence, so whatever the
    # random model writes within the grammar validates.
    choices, user = verdict_batch([8, 8, 8])
    schema = narrowed_schema(choices, 5)
    sent = VERDICT_FORMS[form](schema)
    offset = vllm_server.log_size()
    async with openai.AsyncOpenAI(
        base_url=vllm_server.base_url, api_key="unused", max_retries=0, timeout=120
    ) as client:
        completion = await client.chat.completions.create(
            model=vllm_server.model,
            messages=[
                {"role": "system", "content": system_prompt(5)},
                {"role": "user", "content": user},
            ],
            max_tokens=400,
            temperature=0,
            **sent,
        )
    choice = completion.choices[0]
    assert choice.finish_reason == "stop", choice.message.content
    content = choice.message.content or ""
    reply = json.loads(content)
    assert content == json.dumps(reply, separators=(",", ":"))  # compact, no padding
    schema_validator(reply, STRICT.shape(schema) if form.startswith("strict") else schema)
    # Each passage a verdict first, then ids (the strict form's items may mix them: read again).
    for items in reply["results"]:
        assert isinstance(items[0], str) or form.startswith("strict")
    if not any(isinstance(i, int) for items in reply["results"] for i in items):
        # The strict form's relaxed items let the random model write words only ("yes", "yes",
        # ...): no passage named a sentence, and the reply is refused as such.
        assert form.startswith("strict")
        with pytest.raises(LLMInvalidOutput, match="only sentence ids that do not exist"):
            validate_reply(reply, choices, 5)
    else:
        assert_answers(validate_reply(reply, choices, 5), choices)
    assert "Failed to transform" not in vllm_server.log_since(offset)


async def test_a_second_batch_in_the_same_bucket_sends_the_same_schema(
    vllm_server: Any, recorder: Recorder
) -> None:
    client = vllm_client(vllm_server, recorder, max_tokens=400)
    try:
        # Other sentence counts, other text: the same bucket (ids up to 8, three passages).
        for counts in ([8, 5, 6], [7, 8, 3]):
            choices, user = verdict_batch(counts)
            completion = await client.complete_json(
                system=system_prompt(5),
                user=user,
                schema=narrowed_schema(choices, 5),
                schema_name="HighlightBatchResult",
                validate=functools.partial(validate_reply, choices=choices, max_per_chunk=5),
            )
            assert completion.strategy == "json_schema"
            assert_answers(completion.value, choices)
    finally:
        await client.close()
    first, second = (json.dumps(b["response_format"]["json_schema"]) for b in recorder.bodies)
    assert first == second  # vLLM's grammar cache key: compiled once
