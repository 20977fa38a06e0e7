from __future__ import annotations

import pytest

from app.highlights.contract import ChunkChoice, narrowed_schema, validate_reply
from app.llm.errors import LLMInvalidOutput
from app.llm.parsing import extract_json


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('<think>maybe {"a": 0}?</think>\n{"a": 1}', {"a": 1}),
        ('<think>never closed {"a": 0}', None),
        ('Here you go: {"a": 1} Hope that helps!', {"a": 1}),
        ('{"a": "raw\x1bcontrol"}', {"a": "raw\x1bcontrol"}),
    ],
)
def test_extract_json(text: str, expected: object) -> None:
    if expected is None:
        with pytest.raises(LLMInvalidOutput):
            extract_json(text)
    else:
        assert extract_json(text) == expected


@pytest.mark.parametrize("text", [None, "", "   ", "no braces at all", '{"a": '])
def test_not_json_is_invalid_output(text: str | None) -> None:
    with pytest.raises(LLMInvalidOutput):
        extract_json(text)


CHOICES = [ChunkChoice(3), ChunkChoice(2)]


def test_validate_reply_drops_unknown_ids_and_duplicates() -> None:
    raw = {"results": [[2, 2, 9, 0, 1], [], [1]]}
    selection = validate_reply(raw, CHOICES, max_per_chunk=5)
    assert selection.by_position == {0: [2, 1], 1: []}
    assert selection.dropped_ids == 3  # 9, 0, and the one id of a position past the batch
    assert selection.missing == []


def test_a_short_reply_leaves_the_rest_missing() -> None:
    selection = validate_reply({"results": [[3]]}, CHOICES, max_per_chunk=5)
    assert selection.by_position == {0: [3]}
    assert selection.missing == [1]


def test_validate_reply_caps_per_chunk() -> None:
    assert validate_reply({"results": [[3, 1, 2]]}, CHOICES, max_per_chunk=2).by_position == {
        0: [3, 1]
    }


def test_the_strict_subsets_keyed_form_is_read_in_position_order() -> None:
    raw = {"results": {"p2": [2], "p1": [3, 1]}}
    assert validate_reply(raw, CHOICES, max_per_chunk=5).by_position == {0: [3, 1], 1: [2]}


def test_a_position_the_keyed_form_leaves_out_is_missing_not_empty() -> None:
    selection = validate_reply({"results": {"p1": [2], "p3": [1]}}, [*CHOICES, ChunkChoice(2)], 5)
    assert selection.by_position == {0: [2], 2: [1]}
    assert selection.missing == [1]


def test_a_position_naming_only_unknown_ids_is_invalid_not_empty() -> None:
    selection = validate_reply({"results": [[1], [7]]}, CHOICES, max_per_chunk=5)
    assert selection.by_position == {0: [1]}
    assert selection.invalid == [1]
    assert selection.missing == [1]


@pytest.mark.parametrize(
    "raw",
    [
        {"results": []},
        {"results": [[9]]},
        {"results": [["one"]]},
        {"results": [[True]]},
        {"results": {"chunk1": [1]}},
        {"results": [{"chunk_id": "c1", "relevant_sentences": [{"sentence_id": 1}]}]},
        {"answer": "c1"},
        [1, 2],
    ],
)
def test_unusable_replies_are_invalid_output(raw: object) -> None:
    with pytest.raises(LLMInvalidOutput):
        validate_reply(raw, CHOICES, max_per_chunk=2)


def test_narrowed_schema_is_valid_json_schema_that_accepts_only_the_batch() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = narrowed_schema(CHOICES, 2)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    good = {"results": [[3], []]}
    assert validator.is_valid(good)
    for bad in (
        {"results": [[], [3]]},  # the second chunk has two sentences
        {"results": [[1, 2, 3], []]},  # more than 2 per chunk
        {"results": [[1]]},  # a passage left out
        {"results": [[1], [], []]},  # one too many
        {"results": [["1"], []]},
    ):
        assert not validator.is_valid(bad), bad


def test_batches_of_one_shape_send_one_schema() -> None:
    # The grammar a server compiles is the schema: the same shape must give the same text.
    import json

    first = narrowed_schema([ChunkChoice(3), ChunkChoice(2), ChunkChoice(3)], 2)
    again = narrowed_schema([ChunkChoice(3), ChunkChoice(2), ChunkChoice(3)], 2)
    assert json.dumps(first) == json.dumps(again)
    assert sorted(first["$defs"]) == ["S2", "S3"]  # one definition per sentence count
