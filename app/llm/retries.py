"""When to send a failed request again, and after how long (client.py's retry loop).

- A wait the server asks for is honoured: the ``Retry-After`` header in both of its forms
  (delta-seconds, or an HTTP-date; RFC 9110 section 10.2.3), and OpenRouter's
  ``error.metadata.retry_after_seconds`` in the body of a 429 relayed from a provider (with the
  provider's own headers in ``error.metadata.headers``), e.g. ``{"error": {"message": "Provider
  returned error", "code": 429, "metadata": {"raw": "… is temporarily rate-limited upstream …",
  "provider_name": "Venice", "retry_after_seconds": 17, "retry_after_seconds_raw": 16.007,
  "headers": {"Retry-After": "17"}}}}``. Several at once: the longest, as every one of them has
  to have passed.
- Otherwise exponential backoff with full jitter (a uniform draw between 0 and the exponential
  step, capped; AWS Architecture Blog, "Exponential Backoff And Jitter"): replicas that failed
  together do not come back together.
- Either is bounded by what is left of the call's deadline: a wait that would end past it is not
  slept at all, the failure is reported at once with the upstream status and the wait asked for.

No ``openai`` import: the SDK's errors are read by their attributes (``response``, ``body``).
"""

from __future__ import annotations

import datetime
import email.utils
import math
import random
import time
from typing import Any

from app.llm.errors import LLMUnavailable

# The longest exponential step; a wait the server asks for is not capped by it.
MAX_BACKOFF_S = 8.0
# Without a deadline, the longest wait the server may ask for before the failure is reported.
MAX_ASKED_WAIT_S = 60.0


def parse_retry_after(value: str, now: float | None = None) -> float | None:
    """Seconds from ``now`` (wall clock) that a ``Retry-After`` value asks for, never negative;
    None for a value that is neither delta-seconds nor an HTTP-date."""
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(seconds, 0.0) if math.isfinite(seconds) else None
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:  # an HTTP-date is GMT by definition (asctime's form has no zone)
        moment = moment.replace(tzinfo=datetime.UTC)
    return max(moment.timestamp() - (time.time() if now is None else now), 0.0)


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    return parse_retry_after(str(value))


def asked_wait(exc: BaseException) -> float | None:
    """The longest wait the failed response asks for, in seconds; None when it asks none."""
    found: list[float | None] = []
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is not None:
        found.append(_seconds(headers.get("retry-after")))
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    metadata = error.get("metadata") if isinstance(error, dict) else None
    if isinstance(metadata, dict):
        found.append(_seconds(metadata.get("retry_after_seconds")))
        relayed = metadata.get("headers")
        if isinstance(relayed, dict):
            found += [_seconds(v) for k, v in relayed.items() if str(k).lower() == "retry-after"]
    waits = [w for w in found if w is not None]
    return max(waits) if waits else None


def backoff(attempt: int, base_s: float, rng: random.Random) -> float:
    """Full jitter: uniform in [0, min(MAX_BACKOFF_S, base_s * 2**attempt)]."""
    return rng.uniform(0.0, min(MAX_BACKOFF_S, base_s * 2**attempt))


def wait_before_retry(
    exc: BaseException, attempt: int, *, base_s: float, rng: random.Random, left_s: float | None
) -> float:
    """Seconds to wait before sending again after ``exc`` (``attempt`` counts from 0), or
    LLMUnavailable at once when that wait would end past the deadline (``left_s`` seconds
    away; None: no deadline)."""
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    asked = asked_wait(exc)
    if asked is not None:
        bound = MAX_ASKED_WAIT_S if left_s is None else left_s
        if asked > bound:
            what = f"HTTP {status}" if status else type(exc).__name__
            raise LLMUnavailable(
                f"the LLM server answered {what} and asks to wait {asked:.0f} s, longer than "
                f"the {max(bound, 0.0):.1f} s left: {exc}",
                status=status,
                retry_after_s=asked,
            )
        return asked
    delay = backoff(attempt, base_s, rng)
    if left_s is not None and delay >= left_s:
        raise LLMUnavailable(
            f"the LLM server failed and the deadline leaves no time for attempt {attempt + 2} "
            f"({max(left_s, 0.0):.1f} s left): {exc}",
            status=status,
        )
    return delay
