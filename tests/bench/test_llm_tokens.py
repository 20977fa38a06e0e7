"""The token bench's pure parts: the floor a reply's choice is held to, reading both reply formats,
and each format's schema (no vLLM server)."""

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
    reply_positions,
    request_parts,
)


def test_floor_is_the_compact_reply_with_its_verdicts() -> None:
    assert floor_texts([["yes", 2, 5], ["no"]]) == (
        '{"results":[["yes",2,5],["no"]]}',
        '[["yes",2,5],["no"]]',
    )
    assert floor_texts([[2, 5], [1], []]) == ('{"results":[[2,5],[1],[]]}', "[[2,5],[1],[]]")
    assert floor_texts([]) == ('{"results":[]}', "[]")


def test_replies_are_read_as_written_and_the_old_keys_in_order() -> None:
    assert reply_positions({"results": [["yes", 2, 5], ["no"]]}) == [["yes", 2, 5], ["no"]]
    keyed = {"results": {"p2": [1], "p1": [2, 5], "p3": []}}
    assert reply_positions(keyed) == [[2, 5], [1], []]


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
    positions = reply_positions(longest)
    if fmt.old:
        assert positions == [[8, 7, 6, 5, 4], [12, 11, 10, 9, 8]]
    else:
        # The bucket's most passages, its largest ids: 16, the bound of a 12-sentence chunk.
        assert positions == [["part", 16, 15, 14, 13, 12]] * 2
    assert [m["role"] for m in messages] == ["system", "user"]
    assert ('"yes"' in messages[0]["content"]) is not fmt.old


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.label)
def test_each_format_sends_its_schema(fmt: Format) -> None:
    chunks = make_batch([3, 2], random.Random(3), "doc")
    text = json.dumps(request_parts(fmt, chunks)[1])
    assert ("prefixItems" in text) is not fmt.strict
    assert ('"p1"' in text) is (fmt.old and fmt.strict)
    assert ('"Passage"' in text) is not fmt.old
