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


CHOICES = [ChunkChoice("c1", 3), ChunkChoice("c2", 2)]


def test_validate_reply_drops_unknown_ids_and_duplicates() -> None:
    raw = {
        "results": [
            {"chunk_id": "c1", "relevant_sentences": [{"sentence_id": i} for i in (2, 2, 9, 0, 1)]},
            {"chunk_id": "ghost", "relevant_sentences": [{"sentence_id": 1}]},
        ]
    }
    selection = validate_reply(raw, CHOICES, max_per_chunk=5)
    assert selection.by_chunk == {"c1": [2, 1]}
    assert selection.dropped_ids == 4  # 9, 0, and the ghost chunk with its one id
    assert selection.missing_chunks == ["c2"]


def test_validate_reply_caps_per_chunk() -> None:
    raw = {
        "results": [
            {"chunk_id": "c1", "relevant_sentences": [{"sentence_id": i} for i in (3, 1, 2)]}
        ]
    }
    assert validate_reply(raw, CHOICES, max_per_chunk=2).by_chunk == {"c1": [3, 1]}


@pytest.mark.parametrize(
    "raw",
    [
        {"results": [{"chunk_id": "ghost", "relevant_sentences": []}]},
        {"results": [{"chunk_id": "c1"}]},
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
    good = {
        "results": [
            {"chunk_id": "c1", "relevant_sentences": [{"sentence_id": 3}]},
            {"chunk_id": "c2", "relevant_sentences": []},
        ]
    }
    assert validator.is_valid(good)
    swapped = {"results": list(reversed(good["results"]))}
    unknown = {
        "results": [
            good["results"][0],
            {"chunk_id": "c2", "relevant_sentences": [{"sentence_id": 3}]},
        ]
    }
    too_many = {
        "results": [
            {"chunk_id": "c1", "relevant_sentences": [{"sentence_id": i} for i in (1, 2, 3)]},
            good["results"][1],
        ]
    }
    for bad in (swapped, unknown, too_many, {"results": good["results"][:1]}):
        assert not validator.is_valid(bad)
