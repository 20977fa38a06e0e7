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
    ``prefixItems`` tuple becomes an object with keys ``p1`` .. ``pN``, so each position keeps
    its own shape; whoever reads the reply takes both forms), ``const`` as a one-value ``enum``.
    ``bounds``: keep minItems/maxItems/minimum/maximum. When the integer enums (sentence ids) would
    exceed ``enum_budget``, they become ranges (or plain integers without bounds): a smaller
    schema for this one batch, rather than a refusal that would cost the tier."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "prefixItems" in node:
            return walk(_keyed_tuple(node))
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


def _keyed_tuple(node: JSON) -> JSON:
    """A tuple array as an object: position n (1-based) under key ``pn``. Only the tuple's own
    positions: extra items are not expressible, and strict mode closes the object anyway."""
    keyed: JSON = {
        "type": "object",
        "properties": {f"p{n}": item for n, item in enumerate(node["prefixItems"], 1)},
    }
    if "description" in node:
        keyed["description"] = node["description"]
    return keyed


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
