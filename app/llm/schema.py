"""Pure JSON-schema transforms for providers that accept only part of the standard."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


def _resolve(ref: str, defs: JSON) -> JSON:
    prefix = "#/$defs/"
    if not ref.startswith(prefix) or ref[len(prefix) :] not in defs:
        raise ValueError(f"cannot inline $ref {ref!r}")
    return defs[ref[len(prefix) :]]  # type: ignore[no-any-return]


def inline_refs(schema: JSON) -> JSON:
    """Replace every local ``$ref`` with its definition and drop ``$defs``. Some models routed by
    OpenRouter only honour flat schemas; recursion is not used by this service, so this ends."""
    defs = schema.get("$defs", {})

    def walk(node: Any, depth: int) -> Any:
        if depth > 32:
            raise ValueError("schema nests too deeply to inline (recursive $ref?)")
        if isinstance(node, dict):
            if "$ref" in node:
                merged = {
                    **_resolve(node["$ref"], defs),
                    **{k: v for k, v in node.items() if k != "$ref"},
                }
                return walk(merged, depth + 1)
            return {k: walk(v, depth + 1) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(item, depth + 1) for item in node]
        return node

    # No deep copy first: every dict and list is rebuilt, never changed in place.
    return walk(schema, 0)  # type: ignore[no-any-return]


# Keywords outside OpenAI's strict subset ("Supported schemas", structured-outputs guide); they
# only tighten a schema, so dropping them keeps every valid answer valid, and the service checks
# the reply again. minItems/maxItems and minimum/maximum are in the subset and are kept.
_STRICT_UNSUPPORTED = ("prefixItems", "uniqueItems", "minLength", "maxLength", "title")
# Also refused by some routes OpenRouter reaches (Anthropic: "For 'array' type, property
# 'maxItems' is not supported", "For 'integer' type, property 'minimum' is not supported").
_BOUNDS = ("minItems", "maxItems", "minimum", "maximum")
# OpenAI: "A schema may have up to 1000 enum values across all enum properties"; 1000 itself was
# seen refused, so 999 is the budget.
OPENAI_ENUM_BUDGET = 999


def count_enum_values(schema: JSON) -> int:
    """Enum values in ``schema``, counting a definition once per reference (inlined, it would be
    repeated)."""
    defs = schema.get("$defs", {})

    def walk(node: Any, depth: int) -> int:
        if depth > 32:
            return 0
        if isinstance(node, list):
            return sum(walk(item, depth + 1) for item in node)
        if not isinstance(node, dict):
            return 0
        total = len(node["enum"]) if isinstance(node.get("enum"), list) else 0
        if isinstance(node.get("$ref"), str):
            total += walk(_resolve(node["$ref"], defs), depth + 1)
        return total + sum(walk(v, depth + 1) for k, v in node.items() if k != "$defs")

    return walk(schema, 0)


def portable(schema: JSON, *, bounds: bool, enum_budget: int | None = None) -> JSON:
    """The subset OpenAI's strict mode takes, which every major route behind OpenRouter also
    takes: every object closed with all its properties required, no tuple arrays (a
    ``prefixItems`` tuple becomes a uniform array, ``_uniform``), ``const`` as a one-value
    ``enum``. ``bounds``: keep minItems/maxItems/minimum/maximum. When the integer enums would
    exceed ``enum_budget``, they become ranges (or plain integers without bounds): a smaller
    schema for this one batch, rather than a refusal that would cost the tier.

    OpenAI's "Supported schemas" (structured-outputs guide; as profiled in
    jsonschemaprofiles.unitvectorylabs.com/schemas/openai, 2026-02 baseline) lists ``anyOf``
    (nested anywhere but the root, each branch in the subset), ``minimum``/``maximum`` for
    numbers and ``minItems``/``maxItems`` for arrays, and at most 1000 enum values; its "Objects
    provided via 'anyOf' must not share identical first keys" concerns object branches only."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "prefixItems" in node:
            return walk(_uniform(node))
        dropped = _STRICT_UNSUPPORTED + (() if bounds else _BOUNDS)
        out = {k: walk(v) for k, v in node.items() if k not in dropped}
        if "const" in out:
            out["enum"] = [out.pop("const")]
        if out.get("type") == "object" and "properties" in out:
            out["additionalProperties"] = False
            out["required"] = list(out["properties"])
        return out

    shaped: JSON = walk(schema)  # rebuilt, never changed in place: no deep copy needed
    if enum_budget is not None and count_enum_values(shaped) > enum_budget:
        shaped = _integer_enums_as_ranges(shaped, bounds)
    return shaped


def _uniform(node: JSON) -> JSON:
    """A tuple array (``prefixItems``, then ``items`` for the rest or ``false`` for none) as a
    uniform array whose items are any of the tuple's item shapes: ``["yes", 2, 5]`` against
    ``prefixItems: [verdict], items: Id`` becomes ``items: {anyOf: [verdict, Id]}``. A faithful
    relaxation: every array the tuple takes, the uniform array takes too (it also takes the
    shapes in another order), so whoever reads the reply checks the order again. Without a rest,
    the array is held to the tuple's length (``items`` left out is read as ``false``: this
    service always writes it)."""
    rest = node.get("items", False)
    shapes: list[Any] = []
    for shape in [*node["prefixItems"], *([rest] if isinstance(rest, dict) else [])]:
        if shape not in shapes:
            shapes.append(shape)
    out = {k: v for k, v in node.items() if k not in ("prefixItems", "items")}
    out["items"] = shapes[0] if len(shapes) == 1 else {"anyOf": shapes}
    if rest is False and "maxItems" not in out:
        out["maxItems"] = len(node["prefixItems"])
    return out


def _integer_enums_as_ranges(schema: JSON, bounds: bool) -> JSON:
    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {k: walk(v) for k, v in node.items()}
        values = out.get("enum")
        if out.get("type") == "integer" and isinstance(values, list) and values:
            del out["enum"]
            if bounds:
                out["minimum"], out["maximum"] = min(values), max(values)
        return out

    return walk(schema)  # type: ignore[no-any-return]
