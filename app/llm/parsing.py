"""Read a chat completion's answer (whatever the server put in its 200), and turn the model's text
into JSON: reasoning blocks and markdown fences are not the answer."""

from __future__ import annotations

import json
import re
from typing import Any

from app.llm.errors import LLMInvalidOutput, LLMRejected, LLMUnavailable
from app.llm.refusals import read_refusal

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def extract_json(text: str | None) -> Any:
    """Parse the first JSON object in ``text``; raise LLMInvalidOutput when there is none."""
    if not text or not text.strip():
        raise LLMInvalidOutput("the model returned an empty reply")
    cleaned = _THINK.sub("", text).strip()
    fenced = _FENCE.search(cleaned)
    if fenced:
        cleaned = fenced.group(1).strip()
    # strict=False: xgrammar builds length-bounded strings as [^"\\\r\n]{0,N}, so a constrained
    # reply can carry raw control characters that strict JSON refuses.
    decoder = json.JSONDecoder(strict=False)
    try:
        return decoder.decode(cleaned)
    except json.JSONDecodeError:
        pass
    start = cleaned.find("{")
    if start >= 0:
        try:
            value, _ = decoder.raw_decode(cleaned[start:])
            return value
        except json.JSONDecodeError:
            pass
    preview = cleaned[:120].replace("\n", " ")
    raise LLMInvalidOutput(f"the model's reply is not JSON: {preview!r}")


def read_completion(response: Any) -> tuple[str | None, str | None]:
    """(content, finish_reason) of a chat completion, whatever the server put in the 200."""
    if isinstance(response, str | bytes | list) or response is None:
        preview = str(response)[:80].replace("\n", " ")
        raise LLMInvalidOutput(f"the LLM server's 200 is not a chat completion: {preview!r}")
    error = getattr(response, "error", None)
    choices = getattr(response, "choices", None)
    if error and not choices:
        # OpenRouter: an upstream failure after the 200 status was sent.
        raise LLMUnavailable(f"the LLM server reported an error: {read_refusal(error, '').text}")
    if not isinstance(choices, list) or not choices:
        raise LLMInvalidOutput("the LLM server's reply has no choices")
    choice = choices[0]
    finish = getattr(choice, "finish_reason", None)
    if finish == "error":
        raise LLMUnavailable("the LLM provider failed while generating (finish_reason 'error')")
    message = getattr(choice, "message", None)
    if message is None:
        raise LLMInvalidOutput("the LLM server's choice has no message")
    refusal = getattr(message, "refusal", None)
    if isinstance(refusal, str) and refusal:
        raise LLMRejected(f"the model refused to answer: {refusal[:200]}")
    content = getattr(message, "content", None)
    if content is not None and not isinstance(content, str):
        raise LLMInvalidOutput("the LLM server's message content is not text")
    return content, finish if isinstance(finish, str) else None
