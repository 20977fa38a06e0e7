"""A batch is bounded: past its deadline the LLM call is abandoned and the lexical answer given,
and a shutdown with requests in flight answers them at once instead of waiting for the LLM."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.api.helpers import CHUNK_MAIN, ingest_sample
from tests.api.test_highlights import batch, post
from tests.fixtures.app import make_settings
from tests.fixtures.live import ingest_with_cli, live_service
from tests.fixtures.llm_server import ScriptedLLM

SLOW_LLM_S = 30.0


async def test_past_the_deadline_the_llm_is_abandoned_for_the_lexical_answer(
    database_url: str, pdf_root: Path, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.slow_down(SLOW_LLM_S)
    settings = make_settings(
        database_url,
        pdf_root,
        llm_provider="vllm",
        llm_base_url=scripted_llm.base_url,
        llm_model="scripted-model",
        llm_timeout_s=60,
        batch_deadline_s=1.0,
    )
    await ingest_sample(settings)
    started = time.monotonic()
    data = await post(settings, batch(CHUNK_MAIN))
    elapsed = time.monotonic() - started
    (result,) = data["results"]
    assert data["method"] == "lexical"
    assert (result["status"], result["reason"]) == ("highlighted", "llm_unavailable")
    assert "deadline (1 s)" in result["message"]
    assert len(scripted_llm.requests) == 1
    # Not a speed target: proof that the 30 s reply was not waited for.
    assert elapsed < SLOW_LLM_S / 2


@pytest.mark.slow
def test_shutdown_answers_requests_in_flight_without_waiting_for_the_llm(
    tmp_path: Path, scripted_llm: ScriptedLLM, sample_pdf: Path
) -> None:
    scripted_llm.slow_down(SLOW_LLM_S)
    env = {
        "HIGHLIGHT_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'live.db'}",
        "HIGHLIGHT_PDF_ROOT": str(tmp_path / "pdfs"),
        "HIGHLIGHT_INDEX_CACHE_DIR": str(tmp_path / "cache"),
        "HIGHLIGHT_LLM_PROVIDER": "vllm",
        "HIGHLIGHT_LLM_BASE_URL": scripted_llm.base_url,
        "HIGHLIGHT_LLM_MODEL": "scripted-model",
        "HIGHLIGHT_LLM_TIMEOUT_S": "120",
        "HIGHLIGHT_BATCH_DEADLINE_S": "120",
        "HIGHLIGHT_SHUTDOWN_GRACE_S": "5",
    }
    ingest_with_cli(env, sample_pdf, "sample")
    replies: list[httpx.Response] = []
    with live_service(tmp_path, env, "serve") as service:
        worker = threading.Thread(
            target=lambda: replies.append(
                httpx.post(f"{service.url}/v2/highlights/batch", json=batch(CHUNK_MAIN), timeout=90)
            )
        )
        worker.start()
        deadline = time.monotonic() + 30
        while not scripted_llm.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert scripted_llm.requests, "the batch never reached the LLM"
        stopped_at = time.monotonic()
        service.process.send_signal(signal.SIGTERM)
        service.process.wait(timeout=60)
        stopped_in = time.monotonic() - stopped_at
        worker.join(timeout=10)
    # uvicorn re-raises the signal it handled once it has shut down cleanly.
    assert service.process.returncode in (0, -signal.SIGTERM), service.output()
    (reply,) = replies
    assert reply.status_code == 200
    (result,) = reply.json()["results"]
    assert (result["status"], result["reason"]) == ("highlighted", "llm_unavailable")
    assert "shutting down" in result["message"]
    # Within the grace period, not after the LLM's 30 s.
    assert stopped_in < SLOW_LLM_S / 2, stopped_in
