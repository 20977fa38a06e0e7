"""Turn a model's text reply into JSON: reasoning blocks and markdown fences are not the answer."""

from __future__ import annotations

import json
import re
from typing import Any

from app.llm.errors import LLMInvalidOutput

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
