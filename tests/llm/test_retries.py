"""Waits between attempts (Retry-After in both forms, OpenRouter's retry_after_seconds, jittered
backoff), bounded by the call's deadline, and a schema the grammar backend cannot compile,
against the scripted OpenAI-protocol server. Waits are recorded by an injected sleep on a fake
clock, never timed."""

from __future__ import annotations

import email.utils
import json
import random
import time
from typing import Any

import pytest

from app.highlights.contract import ChunkChoice, Selection, narrowed_schema, validate_reply
from app.llm.client import CapabilityMemory, Completion, StructuredClient
from app.llm.errors import LLMUnavailable
from app.llm.providers import build_profile
from app.llm.retries import MAX_BACKOFF_S, asked_wait, parse_retry_after
from tests.fixtures.llm_server import Reply, ScriptedLLM, error, tier_of

CHOICES = [ChunkChoice(3), ChunkChoice(2)]
# vllm-project/vllm#57725: xgrammar's ValueError for a schema it cannot turn into a grammar,
# answered as a 500 by vLLM's fallback handler.
GRAMMAR_500 = (
    "Failed to transform json schema into a grammar: [09:12:44] json_schema_converter.cc:2181: "
    "items must be a boolean or an object"
)


class FakeClock:
    """A monotonic clock that only the recorded sleeps move."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class UpperRng(random.Random):
    """Jitter that always draws the top of its range: the longest waits backoff can give."""

    def uniform(self, a: float, b: float) -> float:
        return b


def make_client(
    server: ScriptedLLM, clock: FakeClock, *, real_time: bool = False, **kwargs: Any
) -> StructuredClient:
    """A client whose sleeps ``clock`` records; its deadlines are read on ``clock`` too, or on
    time.monotonic with ``real_time`` (a caller's deadline on the real clock)."""
    return StructuredClient(
        base_url=server.base_url,
        model="scripted-model",
        api_key="test-key",
        profile=build_profile(kwargs.pop("provider", "vllm")),
        timeout_s=5.0,
        max_retries=kwargs.pop("max_retries", 2),
        backoff_s=kwargs.pop("backoff_s", 1.0),
        sleep=clock.sleep,
        clock=time.monotonic if real_time else clock,
        **kwargs,
    )


async def ask(
    client: StructuredClient,
    deadline: float | None = None,
    choices: list[ChunkChoice] = CHOICES,
) -> Completion[Selection]:
    return await client.complete_json(
        system="Pick sentences.",
        user="<passage>...</passage>",
        schema=narrowed_schema(choices, 3),
        schema_name="HighlightBatchResult",
        validate=lambda raw: validate_reply(raw, choices, 3),
        deadline=deadline,
    )


def first_then_schema(server: ScriptedLLM, *replies: Reply) -> None:
    pending = iter(replies)
    server.handler = lambda body: next(pending, None) or server.honour_schema(body)


async def test_retry_after_as_an_http_date_is_waited_for(scripted_llm: ScriptedLLM) -> None:
    # Thirty seconds ahead, so the test's own speed cannot move the wait out of its bounds.
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    first_then_schema(
        scripted_llm, Reply(429, {"error": {"message": "slow down"}}, headers={"retry-after": date})
    )
    clock = FakeClock()
    client = make_client(scripted_llm, clock)
    assert (await ask(client)).strategy == "json_schema"
    (waited,) = clock.slept
    assert 25 < waited <= 30
    assert len(scripted_llm.requests) == 2
    await client.close()


async def test_openrouter_retry_after_seconds_in_the_error_metadata_is_waited_for(
    scripted_llm: ScriptedLLM,
) -> None:
    # A provider's rate limit relayed by OpenRouter: no Retry-After header of its own, the wait
    # in error.metadata (retry_after_seconds, and the provider's headers).
    relayed = {
        "error": {
            "message": "Provider returned error",
            "code": 429,
            "metadata": {
                "raw": "meta-llama/llama-3.3-70b-instruct:free is temporarily rate-limited "
                "upstream. Please retry shortly.",
                "provider_name": "Venice",
                "retry_after_seconds": 17,
                "retry_after_seconds_raw": 16.007,
                "headers": {"Retry-After": "17"},
            },
        },
        "user_id": "user_x",
    }
    first_then_schema(scripted_llm, Reply(429, relayed))
    clock = FakeClock()
    client = make_client(scripted_llm, clock, provider="openrouter")
    assert (await ask(client, deadline=clock() + 30)).strategy == "json_schema+strict"
    assert clock.slept == [17.0]
    assert len(scripted_llm.requests) == 2
    await client.close()


async def test_a_wait_past_the_deadline_gives_the_upstream_status_at_once(
    scripted_llm: ScriptedLLM,
) -> None:
    first_then_schema(
        scripted_llm,
        Reply(429, {"error": {"message": "slow down"}}, headers={"retry-after": "120"}),
    )
    clock = FakeClock()
    client = make_client(scripted_llm, clock)
    with pytest.raises(LLMUnavailable, match=r"HTTP 429 and asks to wait 120 s") as raised:
        await ask(client, deadline=clock() + 5)
    assert (raised.value.status, raised.value.retry_after_s) == (429, 120.0)
    assert clock.slept == [], "it slept although the wait could not end before the deadline"
    assert len(scripted_llm.requests) == 1
    await client.close()


async def test_backoff_is_full_jitter_from_the_injected_rng_and_capped(
    scripted_llm: ScriptedLLM,
) -> None:
    scripted_llm.handler = lambda body: error(503, "overloaded", "ServiceUnavailable")
    clock = FakeClock()
    client = make_client(scripted_llm, clock, max_retries=6, rng=random.Random(7))
    with pytest.raises(LLMUnavailable, match="7 attempts"):
        await ask(client)
    same = random.Random(7)
    steps = [min(MAX_BACKOFF_S, 1.0 * 2**n) for n in range(6)]
    assert clock.slept == [same.uniform(0.0, step) for step in steps]
    assert all(0 <= wait <= step for wait, step in zip(clock.slept, steps, strict=True))
    assert len(set(clock.slept)) == len(clock.slept), "no jitter"
    await client.close()


async def test_backoff_never_waits_past_the_deadline(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.handler = lambda body: error(502, "bad gateway", "BadGateway")
    clock = FakeClock()
    client = make_client(scripted_llm, clock, max_retries=6, rng=UpperRng())
    # Waits of 1 s and 2 s fit in 3.5 s; the next (4 s) would end past the deadline.
    with pytest.raises(LLMUnavailable, match="no time for attempt 4") as raised:
        await ask(client, deadline=clock() + 3.5)
    assert clock.slept == [1.0, 2.0]
    assert raised.value.status == 502
    assert len(scripted_llm.requests) == 3
    await client.close()


def _grammar_fails(server: ScriptedLLM) -> None:
    """vLLM whose structured-output backend cannot compile the schema: every request that asks
    for it (response_format or structured_outputs) gets the 500 of vllm#57725."""

    def handler(body: dict[str, Any]) -> Reply:
        if tier_of(body) != "prompted":
            return error(500, GRAMMAR_500, "InternalServerError")
        return server.honour_schema(body)

    server.handler = handler


async def test_a_schema_the_grammar_backend_cannot_compile_is_downgraded_once_per_process(
    scripted_llm: ScriptedLLM,
) -> None:
    _grammar_fails(scripted_llm)
    clock = FakeClock()
    memory = CapabilityMemory()
    client = make_client(scripted_llm, clock, memory=memory)
    first = await ask(client)
    assert first.strategy == "prompted"
    # Each grammar tier once, no retries, no waits.
    assert scripted_llm.tiers() == ["json_schema", "structured_outputs", "prompted"]
    assert clock.slept == []
    second = await ask(client)
    assert (second.strategy, second.tiers_tried) == ("prompted", 1)
    assert len(scripted_llm.requests) == 4
    # Remembered for that schema, not for the model: another schema still gets the grammar.
    assert memory.start((scripted_llm.base_url, "scripted-model")) == 0
    scripted_llm.handler = scripted_llm.honour_schema
    other = await ask(client, choices=[ChunkChoice(40)])
    assert other.strategy == "json_schema"
    await client.close()


async def test_a_500_that_is_not_about_the_schema_is_still_retried(
    scripted_llm: ScriptedLLM,
) -> None:
    first_then_schema(scripted_llm, error(500, "CUDA out of memory", "InternalServerError"))
    clock = FakeClock()
    client = make_client(scripted_llm, clock, rng=random.Random(1))
    assert (await ask(client)).strategy == "json_schema"
    assert scripted_llm.tiers() == ["json_schema", "json_schema"]
    assert len(clock.slept) == 1
    await client.close()


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("0", 0.0),
        (" 12 ", 12.0),
        ("1.5", 1.5),
        ("-3", 0.0),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # in the past: no wait
        ("inf", None),
        ("nan", None),
        ("soon", None),
        ("", None),
    ],
)
def test_parse_retry_after(value: str, seconds: float | None) -> None:
    assert parse_retry_after(value) == seconds


def test_parse_retry_after_reads_an_http_date_against_the_given_time() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after(email.utils.formatdate(now + 90, usegmt=True), now) == 90.0


@pytest.mark.parametrize(
    "value",
    [
        "Sun, 06 Nov 1994 08:49:37 GMT",  # IMF-fixdate
        "Sunday, 06-Nov-94 08:49:37 GMT",  # obsolete RFC 850 form
        "Sun Nov  6 08:49:37 1994",  # asctime's form: no zone, GMT by definition (RFC 9110)
    ],
)
def test_every_http_date_form_is_read_as_gmt(value: str) -> None:
    assert parse_retry_after(value, 784_111_777.0 - 10) == 10.0


def test_the_longest_asked_wait_wins() -> None:
    class Response:
        headers = {"retry-after": "5"}

    class Failure(Exception):
        response = Response()
        body = json.loads('{"metadata": {"retry_after_seconds": 9}}')

    assert asked_wait(Failure()) == 9.0


async def test_a_batch_whose_llm_asks_to_wait_past_its_deadline_says_so_at_once(
    scripted_llm: ScriptedLLM,
) -> None:
    """The chooser hands the client its deadline: a 429 asking for two minutes answers the
    batch lexically now, with the status in the note, not when the deadline runs out."""
    from app.highlights.choosing import SentenceChooser
    from app.highlights.schemas import HighlightBatchRequest, Reason
    from app.selection.sentences import split_sentences

    scripted_llm.handler = lambda body: Reply(
        429, {"error": {"message": "slow down"}}, headers={"retry-after": "120"}
    )
    clock = FakeClock()
    # The chooser's deadline is on time.monotonic, the client's clock; only sleeps are faked.
    llm = make_client(scripted_llm, clock, real_time=True)
    chooser = SentenceChooser(llm, 3, max_in_flight=1, queue_timeout_s=30)
    request = HighlightBatchRequest.model_validate(
        {
            "query": "What will it cost?",
            "answer": "It costs 12.5 billion.",
            "citations": [{"chunk_id": "c1", "citation_id": "1"}],
        }
    )
    sentences = {"c1": split_sentences("The programme will cost 12.5 billion. It is paid.")}
    try:
        chosen = await chooser.choose(request, sentences, {"c1": [None]}, 20)
    finally:
        await llm.close()
    assert chosen.method == "lexical"
    assert chosen.per_chunk["c1"].reason == Reason.llm_unavailable
    assert chosen.note is not None
    assert "HTTP 429" in chosen.note
    assert "120 s" in chosen.note
    assert clock.slept == []
    assert len(scripted_llm.requests) == 1
