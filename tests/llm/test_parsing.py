from __future__ import annotations

import pytest

from app.highlights.contract import (
    ChunkChoice,
    PassageAnswer,
    id_bound,
    narrowed_schema,
    passage_bounds,
    validate_reply,
)
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


def yes(*ids: int) -> PassageAnswer:
    return PassageAnswer(list(ids), "supported")


def test_verdicts_and_ids_per_position() -> None:
    raw = {"results": [["yes", 2, 1], ["part", 2]]}
    selection = validate_reply(raw, CHOICES, max_per_chunk=5)
    assert selection.by_position == {0: yes(2, 1), 1: PassageAnswer([2], "partial")}
    assert (selection.dropped_ids, selection.missing, selection.invalid) == (0, [], [])
    no = validate_reply({"results": [["no"], ["yes", 1]]}, CHOICES, 5)
    assert no.by_position == {0: PassageAnswer([], "unsupported"), 1: yes(1)}


def test_validate_reply_drops_unknown_ids_and_duplicates() -> None:
    raw = {"results": [["yes", 2, 2, 9, 0, 1], ["no"], ["yes", 1]]}
    selection = validate_reply(raw, CHOICES, max_per_chunk=5)
    assert selection.by_position == {0: yes(2, 1), 1: PassageAnswer([], "unsupported")}
    assert selection.dropped_ids == 3  # 9, 0, and the one id of a position past the batch
    assert selection.extra_positions == 1
    assert selection.missing == []


def test_ids_after_no_are_ignored() -> None:
    selection = validate_reply({"results": [["no", 2, 9], ["yes", 1]]}, CHOICES, 5)
    assert selection.by_position[0] == PassageAnswer([], "unsupported")
    assert selection.dropped_ids == 0


@pytest.mark.parametrize("answer", [["yes"], ["part"], ["yes", 4, 7], ["part", 0]])
def test_supported_without_an_existing_sentence_is_invalid(answer: list[object]) -> None:
    selection = validate_reply({"results": [answer, ["yes", 1]]}, CHOICES, 5)
    assert selection.by_position == {1: yes(1)}
    assert selection.invalid == [0]
    assert selection.missing == [0]


def test_ids_without_a_verdict_are_a_yes_and_an_empty_list_a_no() -> None:
    # An older or sloppy model: the format before verdicts.
    selection = validate_reply({"results": [[3, 1], []]}, CHOICES, max_per_chunk=5)
    assert selection.by_position == {0: yes(3, 1), 1: PassageAnswer([], "unsupported")}


def test_a_word_where_an_id_belongs_is_dropped() -> None:
    # The strict form's relaxed items take a verdict word at any place.
    selection = validate_reply({"results": [["yes", "part", 2], [2, "yes"]]}, CHOICES, 5)
    assert selection.by_position == {0: yes(2), 1: yes(2)}
    assert selection.dropped_ids == 2


def test_positions_past_the_batch_are_dropped_and_counted() -> None:
    raw = {"results": [["yes", 1], ["no"], ["yes", 1, 2], ["no"]]}
    selection = validate_reply(raw, CHOICES, max_per_chunk=5)
    assert sorted(selection.by_position) == [0, 1]
    assert (selection.extra_positions, selection.dropped_ids) == (2, 2)


def test_a_short_reply_leaves_the_rest_missing() -> None:
    selection = validate_reply({"results": [["yes", 3]]}, CHOICES, max_per_chunk=5)
    assert selection.by_position == {0: yes(3)}
    assert selection.missing == [1]


def test_validate_reply_caps_per_chunk() -> None:
    raw = {"results": [["yes", 3, 1, 2]]}
    assert validate_reply(raw, CHOICES, max_per_chunk=2).by_position == {0: yes(3, 1)}


def test_the_old_keyed_form_is_read_in_position_order() -> None:
    raw = {"results": {"p2": ["part", 2], "p1": [3, 1]}}
    assert validate_reply(raw, CHOICES, max_per_chunk=5).by_position == {
        0: yes(3, 1),
        1: PassageAnswer([2], "partial"),
    }


def test_a_position_the_keyed_form_leaves_out_is_missing_not_empty() -> None:
    selection = validate_reply({"results": {"p1": [2], "p3": [1]}}, [*CHOICES, ChunkChoice(2)], 5)
    assert selection.by_position == {0: yes(2), 2: yes(1)}
    assert selection.missing == [1]


def test_a_position_naming_only_unknown_ids_is_invalid_not_empty() -> None:
    selection = validate_reply({"results": [["yes", 1], ["yes", 7]]}, CHOICES, max_per_chunk=5)
    assert selection.by_position == {0: yes(1)}
    assert selection.invalid == [1]
    assert selection.missing == [1]


@pytest.mark.parametrize(
    "raw",
    [
        {"results": []},
        {"results": [[9]]},
        {"results": [["yes", 9], ["part"]]},
        {"results": [["one"]]},
        {"results": [["maybe", 1]]},
        {"results": [[True]]},
        {"results": [["yes", True]]},
        {"results": {"chunk1": [1]}},
        {"results": [{"chunk_id": "c1", "relevant_sentences": [{"sentence_id": 1}]}]},
        {"answer": "c1"},
        [1, 2],
    ],
)
def test_unusable_replies_are_invalid_output(raw: object) -> None:
    with pytest.raises(LLMInvalidOutput):
        validate_reply(raw, CHOICES, max_per_chunk=2)


def test_the_schema_is_valid_json_schema_that_takes_the_format() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = narrowed_schema(CHOICES, 2)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for good in (
        {"results": [["yes", 3], ["no"]]},
        {"results": [["part", 8, 1], ["yes", 2]]},  # ids up to the bucket's bound, 8
    ):
        assert validator.is_valid(good), good
    for bad in (
        {"results": [["yes", 9], ["no"]]},  # past the bound
        {"results": [["yes", 1, 2, 3], ["no"]]},  # more than 2 ids
        {"results": [["no", 1], ["no"]]},  # ids after "no"
        {"results": [["yes"], ["no"]]},  # "yes" without an id
        {"results": [[1], ["no"]]},  # no verdict
        {"results": [["maybe", 1], ["no"]]},
        {"results": [["no"]]},  # a passage left out
        {"results": [["no"], ["no"], ["no"]]},  # one too many
        {"results": [["yes", "1"], ["no"]]},
    ):
        assert not validator.is_valid(bad), bad


@pytest.mark.parametrize(
    ("largest", "bound"),
    [(1, 8), (8, 8), (9, 16), (33, 64), (129, 200), (200, 200), (201, 256), (600, 1024)],
)
def test_id_bound_rounds_up_the_ladder(largest: int, bound: int) -> None:
    assert id_bound(largest) == bound


@pytest.mark.parametrize(
    ("count", "bounds"),
    [
        (1, (1, 1)),
        (2, (2, 2)),
        (3, (3, 4)),
        (4, (3, 4)),
        (5, (5, 8)),
        (10, (9, 16)),
        (150, (129, 256)),
    ],
)
def test_passage_bounds_are_power_of_two_buckets(count: int, bounds: tuple[int, int]) -> None:
    assert passage_bounds(count) == bounds
