"""The batch schema and its transforms: batches of similar size send byte-identical schemas (a
server compiles each grammar once), the strict subset's form stays in OpenAI's subset and keeps
ids bounded for any batch, and the transforms build new schemas without changing what they are
given (a transform that changed its input in place would corrupt a later batch's schema)."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest

from app.highlights.contract import ChunkChoice, narrowed_schema, validate_reply
from app.llm.providers import build_profile
from app.llm.schema import OPENAI_ENUM_BUDGET, count_enum_values, inline_refs, portable
from tests.fixtures.providers import openai_schema_problem


def _choices(n: int, sentences: int) -> list[ChunkChoice]:
    return [ChunkChoice(sentences) for _ in range(n)]


def nodes(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        return [node, *(n for v in node.values() for n in nodes(v))]
    if isinstance(node, list):
        return [n for v in node for n in nodes(v)]
    return []


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    (strategy, *_) = build_profile("openai").strategies
    return strategy.shape(schema)


def basic(schema: dict[str, Any]) -> dict[str, Any]:
    return build_profile("openrouter").strategies[1].shape(schema)


def test_transforms_leave_their_input_unchanged() -> None:
    schema = narrowed_schema(_choices(3, 4), 2)
    schema["$defs"]["Id"] = {"type": "integer", "enum": [1, 2, 3, 4]}  # as a caller might
    before = copy.deepcopy(schema)
    shaped = [
        portable(schema, bounds=True),
        portable(schema, bounds=False),
        portable(schema, bounds=True, enum_budget=2),  # integer enums become ranges
        inline_refs(schema),
        inline_refs(portable(schema, bounds=False)),
    ]
    assert schema == before
    assert count_enum_values(shaped[2]) == 3  # yes, part, no: the ids are a range now
    for out in shaped:
        # Changing an output reaches neither the input nor the other outputs.
        out["$defs"] = {"changed": True}
        out.setdefault("properties", {})["results"] = None
    assert schema == before
    assert "prefixItems" not in json.dumps(shaped[0])


def test_narrowed_schemas_do_not_share_state() -> None:
    first = narrowed_schema(_choices(2, 3), 2)
    expected = copy.deepcopy(narrowed_schema(_choices(2, 3), 2))
    first["required"].append("spoiled")
    first["$defs"]["Id"]["type"] = "spoiled"
    first["$defs"]["Passage"]["anyOf"][1]["maxItems"] = 99
    assert narrowed_schema(_choices(2, 3), 2) == expected
    other = narrowed_schema(_choices(1, 70), 1)
    assert other["$defs"]["Id"] == {"type": "integer", "minimum": 1, "maximum": 128}


@pytest.mark.parametrize("form", [lambda s: s, strict, basic], ids=["full", "strict", "basic"])
def test_batches_in_one_bucket_send_byte_identical_schemas(form: Any) -> None:
    # Sentence counts differ (3, 12, 9 against 16, 1, 7, 2) but round to the same bound, 16,
    # and three and four passages share a bucket: one grammar serves both.
    first = form(narrowed_schema([ChunkChoice(3), ChunkChoice(12), ChunkChoice(9)], 5))
    again = form(narrowed_schema([ChunkChoice(n) for n in (16, 1, 7, 2)], 5))
    assert json.dumps(first) == json.dumps(again)
    if form is basic:
        return  # no bounds at all: one schema for every batch
    # A chunk past the bound, or a fifth passage, is another bucket.
    assert form(narrowed_schema([ChunkChoice(17), ChunkChoice(1), ChunkChoice(1)], 5)) != first
    assert form(narrowed_schema(_choices(5, 3), 5)) != first


def test_the_full_form_shape() -> None:
    schema = narrowed_schema([ChunkChoice(12), ChunkChoice(30)], 5)
    assert schema["$defs"]["Id"] == {"type": "integer", "minimum": 1, "maximum": 32}
    no, supported = schema["$defs"]["Passage"]["anyOf"]
    assert no["prefixItems"] == [{"type": "string", "const": "no"}]
    assert no["items"] is False
    assert supported["prefixItems"] == [{"type": "string", "enum": ["yes", "part"]}]
    assert supported["items"] == {"$ref": "#/$defs/Id"}
    assert (supported["minItems"], supported["maxItems"]) == (2, 6)
    results = schema["properties"]["results"]
    assert results == {
        "type": "array",
        "items": {"$ref": "#/$defs/Passage"},
        "minItems": 2,
        "maxItems": 2,
    }


def test_the_strict_form_is_in_openais_subset() -> None:
    schema = strict(narrowed_schema(_choices(12, 40), 5))
    assert openai_schema_problem(schema, "HighlightBatchResult") is None
    for node in nodes(schema):
        assert "prefixItems" not in node
        assert "const" not in node
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert node["required"] == list(node["properties"])
        if node.get("type") == "array":
            assert isinstance(node["items"], dict)
    no, supported = schema["$defs"]["Passage"]["anyOf"]
    assert no == {
        "type": "array",
        "minItems": 1,
        "maxItems": 1,
        "items": {"type": "string", "enum": ["no"]},
    }
    assert supported["items"] == {
        "anyOf": [{"type": "string", "enum": ["yes", "part"]}, {"$ref": "#/$defs/Id"}]
    }


def test_a_large_batchs_strict_form_bounds_ids_within_the_enum_budget() -> None:
    # 50 citations of 200 sentences each: the old schema enumerated 10,000 ids, past OpenAI's
    # 1000 enum values, and sent them unbounded-per-chunk ranges.
    schema = strict(narrowed_schema(_choices(50, 200), 5))
    assert count_enum_values(schema) <= OPENAI_ENUM_BUDGET
    assert count_enum_values(schema) == 3
    assert schema["$defs"]["Id"] == {"type": "integer", "minimum": 1, "maximum": 200}
    assert openai_schema_problem(schema, "HighlightBatchResult") is None
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"results": [["yes", 200]] * 50})
    assert not validator.is_valid({"results": [["yes", 201]] * 50})
    assert not validator.is_valid({"results": [["yes", 0]] * 50})


@pytest.mark.parametrize("form", [strict, basic], ids=["strict", "basic"])
def test_relaxed_forms_take_every_reply_the_full_form_takes(form: Any) -> None:
    choices = [ChunkChoice(3), ChunkChoice(2), ChunkChoice(9)]
    full = narrowed_schema(choices, 2)
    relaxed = form(full)
    jsonschema.Draft202012Validator.check_schema(relaxed)
    for reply in (
        {"results": [["yes", 2, 1], ["no"], ["part", 9]]},
        {"results": [["no"], ["no"], ["no"], ["no"]]},
    ):
        assert jsonschema.Draft202012Validator(full).is_valid(reply)
        assert jsonschema.Draft202012Validator(relaxed).is_valid(reply)
    # What only the relaxed form takes is read again: a word where an id belongs is dropped.
    loose = {"results": [["yes", "part", 2], [1, "yes"], ["part", 4]]}
    assert jsonschema.Draft202012Validator(relaxed).is_valid(loose)
    assert not jsonschema.Draft202012Validator(full).is_valid(loose)
    selection = validate_reply(loose, choices, 2)
    assert [a.ids for a in selection.by_position.values()] == [[2], [1], [4]]
    assert selection.dropped_ids == 2


def test_the_basic_form_is_flat_and_unbounded() -> None:
    schema = basic(narrowed_schema(_choices(3, 4), 2))
    assert "$defs" not in schema
    text = json.dumps(schema)
    for keyword in ("$ref", "minItems", "maxItems", "minimum", "maximum", "prefixItems"):
        assert keyword not in text
    passage = schema["properties"]["results"]["items"]
    assert passage["anyOf"][1]["items"]["anyOf"][1] == {"type": "integer"}


def test_a_tuple_without_a_rest_keeps_its_length() -> None:
    schema = {"type": "array", "prefixItems": [{"const": "a"}, {"type": "integer"}], "items": False}
    assert portable(schema, bounds=True) == {
        "type": "array",
        "items": {"anyOf": [{"enum": ["a"]}, {"type": "integer"}]},
        "maxItems": 2,
    }
