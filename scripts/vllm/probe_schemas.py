"""Send a list of JSON schemas to a running vLLM server and print what it does with each.

For deciding schema tiers: which keywords compile under xgrammar, which are rejected (and with
what exact 400 message), and which compile but let a random model run to max_tokens.

    scripts/vllm.sh start
    .venv/bin/python scripts/vllm/probe_schemas.py [BASE_URL] [--json]

BASE_URL defaults to http://127.0.0.1:8011/v1. Every schema goes through both request styles:
``response_format`` (json_schema) and ``extra_body={"structured_outputs": {"json": ...}}``.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import httpx

MODEL = "tiny-llama"
MESSAGES = [{"role": "user", "content": "Answer with JSON."}]


def obj(**properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


SCHEMAS: dict[str, dict[str, Any]] = {
    "const string": obj(id={"const": "chunk-id"}),
    "const integer": obj(n={"const": 7}),
    "const object": obj(o={"const": {"a": 1}}),
    "enum strings": obj(label={"enum": ["yes", "no"]}),
    "enum integers": obj(i={"enum": [0, 1, 2]}),
    "enum mixed": obj(v={"enum": ["a", 1, None, True]}),
    "prefixItems + items:false": {
        "type": "array",
        "prefixItems": [{"const": "a"}, {"type": "boolean"}],
        "items": False,
    },
    "$defs + $ref": {
        "$defs": {"b": {"type": "boolean"}},
        **obj(x={"$ref": "#/$defs/b"}),
    },
    "definitions + $ref (draft-07)": {
        "definitions": {"b": {"type": "boolean"}},
        **obj(x={"$ref": "#/definitions/b"}),
    },
    "recursive $ref": {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                "required": ["kids"],
                "additionalProperties": False,
            }
        },
        "$ref": "#/$defs/node",
    },
    "integer minimum/maximum": obj(i={"type": "integer", "minimum": 0, "maximum": 9}),
    "integer exclusiveMaximum": obj(i={"type": "integer", "minimum": 0, "exclusiveMaximum": 10}),
    "number (unbounded)": obj(x={"type": "number"}),
    "number minimum/maximum": obj(x={"type": "number", "minimum": 0, "maximum": 1}),
    "string (free)": obj(s={"type": "string"}),
    "string maxLength": obj(s={"type": "string", "maxLength": 8}),
    "string pattern": obj(s={"type": "string", "pattern": "^[a-z]{2,4}$"}),
    "string format date": obj(s={"type": "string", "format": "date"}),
    "anyOf null": obj(v={"anyOf": [{"enum": [0, 1]}, {"type": "null"}]}),
    "type list [integer, null]": obj(v={"type": ["integer", "null"], "maximum": 5, "minimum": 0}),
    "oneOf": obj(v={"oneOf": [{"const": "a"}, {"const": 1}]}),
    "allOf": obj(v={"allOf": [{"type": "integer"}, {"minimum": 0, "maximum": 3}]}),
    "not": obj(v={"not": {"type": "string"}}),
    "array minItems/maxItems": obj(a={"type": "array", "items": {"enum": [0, 1]}, "maxItems": 2}),
    "array contains": obj(a={"type": "array", "items": {"enum": [0, 1]}, "contains": {"const": 1}}),
    "uniqueItems": obj(a={"type": "array", "items": {"enum": [0, 1]}, "uniqueItems": True}),
    "object without additionalProperties:false": {
        "type": "object",
        "properties": {"a": {"type": "boolean"}},
        "required": ["a"],
    },
    "patternProperties": {
        "type": "object",
        "patternProperties": {"^c[0-9]$": {"type": "boolean"}},
        "additionalProperties": False,
        "maxProperties": 1,
    },
    "minProperties/maxProperties": {
        "type": "object",
        "additionalProperties": {"type": "boolean"},
        "minProperties": 1,
        "maxProperties": 2,
    },
    "dangling $ref": obj(a={"$ref": "#/$defs/missing"}),
    "if/then/else": obj(v={"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {}}),
    "empty schema {}": {},
}


def request(client: httpx.Client, style: str, schema: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": MODEL,
        "messages": MESSAGES,
        "max_tokens": 64,
        "temperature": 0,
    }
    if style == "response_format":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "probe", "schema": schema, "strict": True},
        }
    else:
        body["structured_outputs"] = {"json": schema}
    started = time.perf_counter()
    response = client.post("/chat/completions", json=body)
    seconds = round(time.perf_counter() - started, 3)
    if response.status_code != 200:
        try:
            message = response.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = response.text
        return {"status": response.status_code, "error": message, "seconds": seconds}
    choice = response.json()["choices"][0]
    content = choice["message"]["content"]
    try:
        json.loads(content)
        parses = True
    except (TypeError, ValueError):
        parses = False
    return {
        "status": 200,
        "finish_reason": choice["finish_reason"],
        "parses": parses,
        "content": content,
        "seconds": seconds,
    }


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    as_json = "--json" in sys.argv
    base_url = args[0] if args else "http://127.0.0.1:8011/v1"
    results = {}
    with httpx.Client(base_url=base_url, timeout=300) as client:
        for name, schema in SCHEMAS.items():
            for style in ("response_format", "structured_outputs"):
                result = request(client, style, schema)
                results[f"{name} / {style}"] = result
                if as_json:
                    continue
                if result["status"] != 200:
                    outcome = f"HTTP {result['status']}: {result['error']}"
                else:
                    outcome = (
                        f"200 finish={result['finish_reason']} parses={result['parses']} "
                        f"{result['content']!r:.70}"
                    )
                print(f"{name:44} {style:18} {result['seconds']:6.2f}s  {outcome}")
    if as_json:
        print(json.dumps(results, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
