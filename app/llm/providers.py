"""Provider profiles: which structured-output strategies to try, in order, and the request extras
each provider needs. Checked against each provider's documentation (2026-11; notes in
``scripts/vllm/README.md`` and the README's provider section).

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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from app.llm.schema import JSON, OPENAI_ENUM_BUDGET, inline_refs, portable

Tier = Literal["json_schema", "structured_outputs", "prompted"]
Variant = Literal["full", "strict", "basic"]
TokenParam = Literal["max_tokens", "max_completion_tokens"]


@dataclass(frozen=True)
class Strategy:
    tier: Tier
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
    tiers: Sequence[Tier] = ("json_schema", "structured_outputs", "prompted"),
    chat_template_kwargs: dict[str, Any] | None = None,
) -> ProviderProfile:
    if provider not in _STRATEGIES:
        raise ValueError(f"unknown LLM provider {provider!r}")
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
    return ProviderProfile(provider, strategies, extra, schema_extra, headers, token_param)
