"""Read what an OpenAI-compatible server says when it refuses a request, and decide what it means.

Bodies as the providers really send them:
- OpenAI: ``{"error": {"message", "type", "param", "code"}}`` (``code`` a string or null), e.g.
  ``param: "max_tokens", code: "unsupported_parameter"`` from reasoning models, or
  ``"Invalid schema for response_format '…': … array schema missing items."``.
- OpenRouter: ``{"error": {"message": "Provider returned error", "code": 400, "metadata":
  {"raw": "<the provider's own error body, as a JSON string or plain text>",
  "provider_name": "OpenAI", ...}}}``; the useful words are inside ``metadata.raw``. With
  ``provider.require_parameters``, a 404 ``"No endpoints found that can handle the requested
  parameters."`` means no provider takes what was sent.
- vLLM: ``{"error": {"message", "type": "BadRequestError", "param", "code": 400}}``; before 0.9
  the same fields without the ``error`` wrapper.

The reasoning effort is refused in two ways, told apart because they call for different answers
(client.py): the *parameter* (a model that does not reason: omit it) or the *value* (a model that
reasons but not at that effort: a higher one may do).
- parameter: OpenAI ``"Unrecognized request argument supplied: reasoning_effort"`` (param and
  code null; davidmigloz/langchain_dart#712, gpt-4o-mini) or ``"Unsupported parameter:
  'reasoning_effort' is not supported with this model."``; Groq and Cerebras
  ``"reasoning_effort is not supported with this model"`` (brendanlong/lion-reader#1325).
- value: OpenAI ``"Unsupported value: 'reasoning_effort' does not support 'none' with this
  model. Supported values are: 'minimal', 'low', 'medium', and 'high'."`` (Kilo-Org/cloud#3807);
  vLLM 0.32 serving gpt-oss (Harmony): ``"reasoning_effort='none' is not supported by Harmony.
  Supported values are: high, medium, low."``, param ``reasoning_effort``
  (``vllm/entrypoints/openai/parser/harmony_utils.py``); OpenRouter for a model whose reasoning is
  mandatory: ``"Reasoning is mandatory for this endpoint and cannot be disabled."``
  (UKGovernmentBEIS/inspect_ai#2824, earendil-works/pi#8454).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# Phrases with which OpenAI, OpenRouter's providers and vLLM (xgrammar/outlines) refuse a
# structured-output request; any other 400 (context too long, bad message) is not about the tier.
_SCHEMA = re.compile(
    r"json_schema|response_format|structured.?output|schema|grammar"
    r"|unrecognized request argument|extra inputs are not permitted|extra_forbidden"
    r"|unknown (?:field|parameter)|'(?:prefixItems|minItems|maxItems|const|\$defs)'",
    re.IGNORECASE,
)
# A schema refused for its size (OpenAI's enum and property limits, a grammar too large to
# compile): this batch's schema, not the tier, is the problem.
_TOO_BIG = re.compile(
    r"expected at most|too (?:large|big|many|complex|long)|exceed|maximum (?:number|size)",
    re.IGNORECASE,
)
# A 5xx of vLLM's structured-output backend failing on the schema itself, which no retry mends:
# "Failed to transform json schema into a grammar: …" (xgrammar, raised as a ValueError that
# vLLM's fallback handler turned into a 500, vllm-project/vllm#57725), "Grammar error: Invalid
# type", a grammar that compiles but admits no token ("grammar rejected tokens", "Failed to
# advance FSM", killed mid-generation, the second half of #57725), guidance's and outlines'
# "failed to compile" and "not supported" wordings.
_GRAMMAR_FAILED = re.compile(
    r"failed to (?:transform json schema|compile|advance fsm|build (?:the )?grammar)"
    r"|grammar (?:error|rejected tokens|compilation failed)"
    r"|(?:schema|features?) (?:is |are )?not supported"
    r"|not supported by (?:xgrammar|guidance|llguidance|outlines)"
    r"|invalid json schema|(?:json )?schema (?:cannot|could not) be (?:compiled|validated)",
    re.IGNORECASE,
)
_NO_ENDPOINTS = re.compile(r"no endpoints found that (?:can handle|support)", re.IGNORECASE)
# "Unsupported parameter: 'max_tokens' …", "Unsupported value: 'temperature' does not support 0"
_PARAMETER = re.compile(r"unsupported (?:parameter|value): '(\w+)'", re.IGNORECASE)
ADJUSTABLE = frozenset({"max_tokens", "temperature"})
# The reasoning effort, however the request or the refusal names it (OpenRouter's ``reasoning``
# object, a validation error's ``body.reasoning_effort``).
REASONING_EFFORT = "reasoning_effort"
_EFFORT_PARAMS = frozenset(
    {"reasoning_effort", "reasoning", "reasoning.effort", "body.reasoning_effort", "body.reasoning"}
)
_ABOUT_EFFORT = re.compile(
    r"reasoning_effort|reasoning\.effort|argument supplied: reasoning|parameter: 'reasoning"
    r"|reasoning is mandatory",
    re.IGNORECASE,
)
_EFFORT_VALUE = re.compile(
    r"unsupported value|does not support '|supported values|input should be|is mandatory"
    r"|cannot be disabled|not supported by harmony",
    re.IGNORECASE,
)
_EFFORT_PARAMETER = re.compile(
    r"unrecognized request argument|unsupported parameter|not supported|extra inputs are not "
    r"permitted|extra_forbidden|unknown (?:field|parameter)",
    re.IGNORECASE,
)
# To the end of the sentence, or of pydantic's quoted "msg" inside a validation error's repr.
_SUPPORTED = re.compile(r"(?:supported values (?:are|is)|input should be)\s*:?\s*([^.\"\n]*)", re.I)


@dataclass(frozen=True)
class Refusal:
    """The provider's own words (OpenRouter's wrapper and the inner error joined) and, when the
    body names one, the request parameter it refused."""

    text: str
    param: str | None = None

    @property
    def refused_parameter(self) -> str | None:
        if self.refuses_effort is not None:
            return REASONING_EFFORT
        named = self.param if self.param in ADJUSTABLE else None
        found = _PARAMETER.search(self.text)
        if found and found.group(1) in ADJUSTABLE:
            return found.group(1)
        return named if named and re.search(r"unsupported|not support", self.text, re.I) else None

    @property
    def refuses_effort(self) -> str | None:
        """``"value"`` when the body refuses the reasoning effort's value, ``"parameter"`` when
        it refuses the parameter itself, None when it is not about the reasoning effort."""
        if self.param not in _EFFORT_PARAMS and not _ABOUT_EFFORT.search(self.text):
            return None
        if _EFFORT_VALUE.search(self.text):
            return "value"
        return "parameter" if _EFFORT_PARAMETER.search(self.text) else None

    @property
    def supported_values(self) -> tuple[str, ...]:
        """The values the body says the refused parameter takes ("Supported values are: 'low',
        'medium', and 'high'.", pydantic's "Input should be 'low', 'medium' or 'high'")."""
        found = _SUPPORTED.search(self.text)
        if found is None:
            return ()
        words = re.findall(r"[a-z]+", found.group(1).lower())
        return tuple(w for w in words if w not in ("and", "or"))

    @property
    def no_endpoints(self) -> bool:
        return bool(_NO_ENDPOINTS.search(self.text))

    @property
    def about_schema(self) -> bool:
        return bool(_SCHEMA.search(self.text)) or bool(
            re.search(r"not supported|unsupported", self.text, re.I)
        )

    @property
    def grammar_failed(self) -> bool:
        """A 5xx body saying the structured-output backend cannot compile the schema."""
        return bool(_GRAMMAR_FAILED.search(self.text))

    @property
    def schema_too_big(self) -> bool:
        return self.about_schema and bool(_TOO_BIG.search(self.text))


def _inner(raw: Any) -> tuple[str | None, str | None]:
    """Message and param of OpenRouter's ``metadata.raw``: a JSON string, plain text or a dict."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return raw.strip()[:1000] or None, None
    if isinstance(raw, dict):
        error = raw.get("error", raw)
        if isinstance(error, dict):
            message = error.get("message")
            param = error.get("param")
            return (str(message) if message else None), (str(param) if param else None)
        if isinstance(error, str):
            return error, None
    return None, None


def read_refusal(body: Any, fallback: str) -> Refusal:
    if not isinstance(body, dict):
        return Refusal(str(body)[:1000] if body else fallback)
    error = body.get("error", body)
    if not isinstance(error, dict):
        return Refusal(str(error)[:1000])
    message = str(error.get("message") or fallback)
    param = error.get("param")
    metadata = error.get("metadata")
    if isinstance(metadata, dict):
        inner, inner_param = _inner(metadata.get("raw"))
        if inner and inner not in message:
            message = f"{message}: {inner}"
        param = param or inner_param
        kind = metadata.get("error_type")
        if kind and not inner:
            message = f"{message} ({kind})"
    return Refusal(message, str(param) if param else None)
