"""The reasoning effort the structured-output client sends (providers.py), and what it learns
when the effort is refused, per (base URL, model) in the client's CapabilityMemory:

- a model that refuses the parameter (it does not reason) is sent none; under ``auto`` one that
  refuses the value gets the next higher value the server names, learned per model; an explicit
  value refused is left out, with one warning;
- behind OpenRouter's require_parameters, "no endpoints" may be a refusal of the effort (or of
  temperature 0) rather than of the schema: each is tried left out before the tier is;
- a truncated reply with no answer at all from a model that reasoned is reported as the budget
  spent reasoning; only ``content`` is read as the answer, the ``reasoning`` and
  ``reasoning_content`` text beside it only shows that the model reasoned.
"""

from __future__ import annotations

import logging
from typing import Any

from app.llm.errors import LLMParameterRefused, LLMRejected, LLMTruncated
from app.llm.memory import OMIT_TEMPERATURE, CapabilityMemory, Key
from app.llm.providers import EFFORTS, ReasoningEffort

# The client's logger: these are the client's decisions, logged under the name they always had.
log = logging.getLogger("app.llm.client")
# The reasoning effort: left out, or (``auto``) raised to the value after "=".
OMIT_REASONING = "omit_reasoning_effort"
EFFORT_QUIRK = "reasoning_effort="
# Behind OpenRouter's require_parameters, "no endpoints" may mean a parameter no provider takes
# rather than the schema: each of these is tried left out, in this order, before the tier is.
_ROUTING_RETRIES = (
    frozenset({OMIT_TEMPERATURE}),
    frozenset({OMIT_REASONING}),
    frozenset({OMIT_TEMPERATURE, OMIT_REASONING}),
)


def reasoned(response: Any) -> bool:
    """Whether a reply shows that the model reasoned: reasoning tokens in its usage (OpenAI,
    OpenRouter, vLLM with a reasoning parser), or reasoning text beside the content (OpenRouter's
    and vLLM 0.32's ``reasoning``, DeepSeek's and older vLLM's ``reasoning_content``)."""
    details = getattr(getattr(response, "usage", None), "completion_tokens_details", None)
    tokens = getattr(details, "reasoning_tokens", None)
    if isinstance(tokens, int) and tokens > 0:
        return True
    message = getattr(response.choices[0], "message", None)
    for field in ("reasoning", "reasoning_content"):
        text = getattr(message, field, None)
        if isinstance(text, str) and text.strip():
            return True
    return False


def spent_reasoning(effort: str | None, max_tokens: int) -> LLMTruncated:
    """The error for a reply whose whole budget went on reasoning, ``effort`` having been sent."""
    asked = f"reasoning effort {effort!r}" if effort else "no reasoning effort sent"
    return LLMTruncated(
        f"the model spent its whole token budget ({max_tokens}) reasoning "
        f"before answering ({asked}); raise HIGHLIGHT_LLM_MAX_TOKENS or lower "
        "HIGHLIGHT_LLM_REASONING_EFFORT",
        by_reasoning=True,
    )


def _step_up(effort: str, supported: tuple[str, ...]) -> str | None:
    """The effort to try after ``effort`` was refused: the lowest higher one the server named,
    else the next one up; None when there is none."""
    higher = EFFORTS[EFFORTS.index(effort) + 1 :]
    named = [e for e in higher if e in supported]
    if named:
        return named[0]
    if any(s in EFFORTS for s in supported):
        return None  # the server named what it takes, and nothing above this
    return higher[0] if higher else None


class ReasoningPolicy:
    """The effort setting (``HIGHLIGHT_LLM_REASONING_EFFORT``) of one client, applied to what is
    learned of its model."""

    def __init__(
        self, setting: ReasoningEffort, memory: CapabilityMemory, key: Key, model: str
    ) -> None:
        self.setting = setting
        self.memory = memory
        self._key = key
        self._model = model

    def effort(self, quirks: frozenset[str]) -> str | None:
        """The reasoning effort to send, given what is known of the model; None: send none."""
        if self.setting == "off" or OMIT_REASONING in quirks:
            return None
        if self.setting != "auto":
            return self.setting
        learned = [q.removeprefix(EFFORT_QUIRK) for q in quirks if q.startswith(EFFORT_QUIRK)]
        return EFFORTS[max((EFFORTS.index(e) for e in learned if e in EFFORTS), default=0)]

    def learn_refusal(self, exc: LLMParameterRefused, effort: str | None) -> None:
        """Learn what to send after the model refused the reasoning effort ``effort``."""
        if effort is None:
            raise LLMRejected(f"the LLM server keeps refusing: {exc.message}") from exc
        if self.setting == "auto" and exc.value_refused:
            higher = _step_up(effort, exc.supported)
            if higher is not None:
                log.info(
                    "model %s refuses reasoning effort %r; sending %r", self._model, effort, higher
                )
                self.memory.learn(self._key, EFFORT_QUIRK + higher)
                return
        if self.setting == "auto" and not exc.value_refused:
            log.info("model %s takes no reasoning effort; sending without it", self._model)
        else:
            # Not silently changed to another value: the deployment asked for this one.
            log.warning(
                "model %s refuses reasoning effort %r (HIGHLIGHT_LLM_REASONING_EFFORT=%s); "
                "sending without it, so the model reasons at its own default: %s",
                self._model,
                effort,
                self.setting,
                exc.message,
            )
        self.memory.learn(self._key, OMIT_REASONING)

    def routing_retry(self, tried: set[frozenset[str]]) -> frozenset[str] | None:
        """What to leave out next when OpenRouter found no endpoint for what was sent."""
        learned = self.memory.quirks(self._key)
        for option in _ROUTING_RETRIES:
            new = option - learned
            if not new or new in tried:
                continue
            if OMIT_REASONING in new and self.effort(learned) is None:
                continue  # no effort is sent: leaving it out changes nothing
            return new
        return None

    def learn_routing(self, left_out: frozenset[str]) -> None:
        """Learn what had to be left out (``routing_retry``) for OpenRouter to find an endpoint."""
        for quirk in left_out:
            self.memory.learn(self._key, quirk)
        if OMIT_REASONING in left_out and self.setting != "auto":
            log.warning(
                "no endpoint for model %s takes reasoning effort %r "
                "(HIGHLIGHT_LLM_REASONING_EFFORT); sending without it",
                self._model,
                self.setting,
            )
