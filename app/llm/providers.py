"""Provider profiles: which structured-output strategies to try, in order, and the request extras
each provider needs. Checked against each provider's documentation (2026-11; notes in
``scripts/vllm/README.md`` and docs/llm.md).

- vllm: ``response_format`` json_schema, then ``extra_body.structured_outputs.json`` (vLLM >= 0.10;
  the older ``guided_json`` was removed in 0.12 and is now accepted and silently ignored, so it is
  never sent), then prompted JSON. The full schema: ``$defs``, ``prefixItems``, ``const``.
  ``chat_template_kwargs`` (``enable_thinking: false`` for reasoning models) ride along.
- openai: json_schema in strict mode, in OpenAI's documented subset (no ``prefixItems``: an array
  of ``anyOf`` chunk shapes; one-value enums; minItems/maxItems kept), within its 1000-enum
  limit; ``max_completion_tokens`` (``max_tokens`` is deprecated and refused by reasoning models);
  then prompted JSON.
- openrouter: the same strict subset first (OpenAI models behind OpenRouter refuse ``prefixItems``
  as "array schema missing items"), with ``provider.require_parameters`` so OpenRouter only routes
  to providers that honour the schema; then a basic variant without array and number bounds and
  without ``$defs`` for routes that refuse those (Anthropic refuses maxItems); then prompted JSON.

The reasoning effort (``HIGHLIGHT_LLM_REASONING_EFFORT``). Reasoning models spend
``max_tokens`` on reasoning first: at their default effort (medium) a 1024-token budget is gone
before the answer starts, and the reply comes back empty with finish_reason "length". So an
effort is sent with every request, each provider in its own form:

- openai: top-level ``reasoning_effort``. The API documents ``none``, ``minimal``, ``low``,
  ``medium``, ``high`` and ``xhigh``, each model taking a subset: o-series low/medium/high,
  gpt-5 minimal to high, gpt-5.1 none/low/medium/high, default medium before gpt-5.1 (OpenAI's
  ReasoningEffort schema, as generated into agentsdk-openai and Azure's ai-projects reference).
  A model that does not reason refuses the parameter ("Unrecognized request argument supplied:
  reasoning_effort"); one that reasons refuses a value it does not take, naming the values it
  does (refusals.py).
- vllm: top-level ``reasoning_effort``. vLLM 0.32's ChatCompletionRequest takes
  ``Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]``
  (``vllm/entrypoints/openai/chat_completion/protocol.py``) and hands it to the chat template;
  unless ``chat_template_kwargs`` sets ``enable_thinking``, it also sets ``enable_thinking`` to
  ``effort != "none"`` (Qwen3, Gemma). gpt-oss (Harmony) takes only low/medium/high and refuses
  the rest with a 400 naming ``reasoning_effort``; a template that reads neither is unaffected.
- openrouter: ``reasoning: {"effort": ...}`` in the body, normalised by OpenRouter for every
  upstream; its docs (guides/best-practices/reasoning-tokens) list ``xhigh``, ``high``,
  ``medium``, ``low``, ``minimal`` and ``none`` (none: reasoning off). A model whose reasoning is
  ``mandatory`` rejects ``none`` ("Reasoning is mandatory for this endpoint and cannot be
  disabled."; OpenRouter's ModelReasoning reference). ``{"enabled": false}`` is refused the same
  way by those models (UKGovernmentBEIS/inspect_ai#2824), so ``effort: none`` is what is sent.
  ``exclude`` is not sent: the reasoning text comes back in ``message.reasoning`` and is what
  shows that an empty reply was spent reasoning. Behind ``require_parameters`` a model that does
  not reason has no endpoint for ``reasoning`` (404 "No endpoints found"), as for temperature.

``auto`` (the default) starts from the lowest value of ``EFFORTS`` and, when the model refuses a
value, steps up to the lowest one it names (or the next), learned per model; when it refuses
the parameter, it is left out. An explicit value is sent as is and, if refused, left out (with
a warning), never changed to another; ``off`` never sends a reasoning parameter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from app.core.config import ALL_TIERS, LLMTier
from app.llm.schema import JSON, OPENAI_ENUM_BUDGET, inline_refs, portable

Variant = Literal["full", "strict", "basic"]
TokenParam = Literal["max_tokens", "max_completion_tokens"]
ReasoningEffort = Literal["auto", "off", "none", "minimal", "low", "medium", "high"]
# Every provider documents all five (see above), lowest first: ``auto`` walks up this ladder.
EFFORTS: tuple[str, ...] = ("none", "minimal", "low", "medium", "high")


@dataclass(frozen=True)
class Strategy:
    tier: LLMTier
    variant: Variant = "full"
    enum_budget: int | None = None

    @property
    def name(self) -> str:
        return self.tier if self.variant == "full" else f"{self.tier}+{self.variant}"

    def shape(self, schema: JSON) -> JSON:
        if self.variant == "strict":
            return portable(schema, bounds=True, enum_budget=self.enum_budget)
        if self.variant == "basic":
            return inline_refs(portable(schema, bounds=False, enum_budget=self.enum_budget))
        return schema


@dataclass(frozen=True)
class ProviderProfile:
    name: str
    strategies: tuple[Strategy, ...]
    extra_body: JSON = field(default_factory=dict)  # sent with every tier
    schema_extra_body: JSON = field(default_factory=dict)  # only with the schema tiers
    headers: dict[str, str] = field(default_factory=dict)
    token_param: TokenParam = "max_tokens"
    reasoning_effort: ReasoningEffort = "off"

    def effort_body(self, effort: str) -> JSON:
        """The request's fields that ask for ``effort``, in this provider's form."""
        if self.name == "openrouter":
            return {"reasoning": {"effort": effort}}
        return {"reasoning_effort": effort}


def merge_extra(base: JSON, extra: JSON) -> JSON:
    """Deep-merge request extras so one feature never clobbers another's keys
    (``chat_template_kwargs`` beside ``structured_outputs``, two sets of ``provider`` options)."""
    merged: JSON = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_extra(merged[key], value)
        else:
            merged[key] = value
    return merged


_STRATEGIES: dict[str, tuple[Strategy, ...]] = {
    "vllm": (Strategy("json_schema"), Strategy("structured_outputs"), Strategy("prompted")),
    "openrouter": (
        Strategy("json_schema", "strict", OPENAI_ENUM_BUDGET),
        Strategy("json_schema", "basic", OPENAI_ENUM_BUDGET),
        Strategy("prompted"),
    ),
    "openai": (Strategy("json_schema", "strict", OPENAI_ENUM_BUDGET), Strategy("prompted")),
}


def build_profile(
    provider: str,
    *,
    tiers: Sequence[LLMTier] = tuple(ALL_TIERS),
    chat_template_kwargs: dict[str, Any] | None = None,
    reasoning_effort: ReasoningEffort = "auto",
) -> ProviderProfile:
    if provider not in _STRATEGIES:
        raise ValueError(f"unknown LLM provider {provider!r}")
    if reasoning_effort not in ("auto", "off", *EFFORTS):
        raise ValueError(f"unknown reasoning effort {reasoning_effort!r}")
    strategies = tuple(s for s in _STRATEGIES[provider] if s.tier in tiers)
    if not strategies:
        raise ValueError(f"no structured-output tier of {provider!r} is enabled by {list(tiers)}")
    extra: JSON = {}
    schema_extra: JSON = {}
    headers: dict[str, str] = {}
    if provider == "vllm" and chat_template_kwargs:
        extra["chat_template_kwargs"] = dict(chat_template_kwargs)
    if provider == "openrouter":
        # Only where there is a schema to honour: on the prompted tier it would only exclude
        # providers for ordinary parameters (temperature on some reasoning models).
        schema_extra["provider"] = {"require_parameters": True}
        headers["X-Title"] = "highlight-service"
    token_param: TokenParam = "max_completion_tokens" if provider == "openai" else "max_tokens"
    return ProviderProfile(
        provider, strategies, extra, schema_extra, headers, token_param, reasoning_effort
    )
