"""Pure JSON-schema transforms for providers that accept only part of the standard."""

from __future__ import annotations

import copy
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

    return walk(copy.deepcopy(schema), 0)  # type: ignore[no-any-return]


# Keywords OpenAI's strict mode refuses (platform docs, "Supported schemas"); they only tighten
# a schema, so dropping them keeps every valid answer valid and the service re-checks the rest.
_OPENAI_UNSUPPORTED = (
    "prefixItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minLength",
    "maxLength",
)


def openai_strict(schema: JSON) -> JSON:
    """OpenAI strict mode: every object closed with all properties required, no tuple arrays.
    A ``prefixItems`` list becomes ``items: {anyOf: [...]}``, so each element must still be one of
    the allowed shapes, and the service puts them in order afterwards."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {k: walk(v) for k, v in node.items() if k not in _OPENAI_UNSUPPORTED}
        if "const" in out:
            # The documented subset names enum, not const; a one-value enum means the same.
            out["enum"] = [out.pop("const")]
        if "prefixItems" in node:
            out["items"] = {"anyOf": walk(node["prefixItems"])}
        if out.get("type") == "object" and "properties" in out:
            out["additionalProperties"] = False
            out["required"] = list(out["properties"])
        return out

    return walk(copy.deepcopy(schema))  # type: ignore[no-any-return]
