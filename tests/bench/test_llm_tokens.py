"""The token bench's pure parts: the floor a reply's choice is held to, reading both reply formats,
and the old format's schema (no vLLM server)."""

from __future__ import annotations

import json
import random

import jsonschema
import pytest

from bench.llm_tokens import (
    FORMATS,
    Format,
    floor_texts,
    longest_reply,
    make_batch,
    old_schema,
    reply_positions,
    request_parts,
)


def test_floor_is_the_compact_positional_reply() -> None:
    assert floor_texts([[2, 5], [1], []]) == ('{"results":[[2,5],[1],[]]}', "[[2,5],[1],[]]")
    assert floor_texts([]) == ('{"results":[]}', "[]")


def test_new_reply_is_read_as_it_is() -> None:
    assert reply_positions({"results": [[2, 5], [1], []]}) == [[2, 5], [1], []]


def test_old_reply_is_placed_by_chunk_id() -> None:
    reply = {
        "results": [
            {"chunk_id": "d-c0001", "relevant_sentences": [{"sentence_id": 1}]},
            {"chunk_id": "d-c0000", "relevant_sentences": [{"sentence_id": 2}, {"sentence_id": 5}]},
            {"chunk_id": "elsewhere", "relevant_sentences": [{"sentence_id": 3}]},
        ]
    }
    # The reply's order does not matter; a skipped chunk is []; an unknown one is left out.
    assert reply_positions(reply, ["d-c0000", "d-c0001", "d-c0002"]) == [[2, 5], [1], []]


def test_batches_follow_the_shape_and_the_seed() -> None:
    chunks = make_batch([8, 15, 3], random.Random(1), "doc")
    assert [len(c.sentences) for c in chunks] == [8, 15, 3]
    assert [c.chunk_id for c in chunks] == ["doc-c0000", "doc-c0001", "doc-c0002"]
    assert all(c.claim for c in chunks)
    for chunk in chunks:
        assert [s.index for s in chunk.sentences] == list(range(1, len(chunk.sentences) + 1))
    again = make_batch([8, 15, 3], random.Random(1), "doc")
    assert [s.text for c in again for s in c.sentences] == [
        s.text for c in chunks for s in c.sentences
    ]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.label)
def test_longest_reply_fits_its_schema(fmt: Format) -> None:
    chunks = make_batch([8, 12], random.Random(2), "doc")
    messages, schema = request_parts(fmt, chunks)
    longest = json.loads(longest_reply(fmt, chunks))
    jsonschema.Draft202012Validator(schema).validate(longest)
    chunk_ids = [c.chunk_id for c in chunks] if fmt.old else None
    assert reply_positions(longest, chunk_ids) == [[8, 7, 6, 5, 4], [12, 11, 10, 9, 8]]
    assert [m["role"] for m in messages] == ["system", "user"]


def test_old_schema_pins_chunk_ids_and_sentence_ids() -> None:
    chunks = make_batch([3, 2], random.Random(3), "doc")
    validator = jsonschema.Draft202012Validator(old_schema(chunks, 5))
    good = {
        "results": [
            {"chunk_id": "doc-c0000", "relevant_sentences": [{"sentence_id": 3}]},
            {"chunk_id": "doc-c0001", "relevant_sentences": []},
        ]
    }
    validator.validate(good)
    wrong_id = json.loads(json.dumps(good).replace("doc-c0001", "doc-c0009"))
    too_high = json.loads(json.dumps(good).replace('"sentence_id": 3', '"sentence_id": 4'))
    for bad in (wrong_id, too_high, {"results": good["results"][:1]}):
        assert not validator.is_valid(bad)
