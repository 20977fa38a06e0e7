"""The grammar bench: its baseline is the old schema, and the new one is reused (pure, fast)."""

from __future__ import annotations

import random

from bench.grammar_bench import (
    GOAL,
    MAX_PER_CHUNK,
    distinct,
    draw_batch,
    load_histogram,
    old_schema,
    old_strict,
)


def test_the_baseline_is_the_old_positional_schema() -> None:
    schema = old_schema([3, 2, 3], 2)
    assert sorted(schema["$defs"]) == ["S2", "S3"]
    results = schema["properties"]["results"]
    assert [p["items"]["$ref"] for p in results["prefixItems"]] == [
        "#/$defs/S3",
        "#/$defs/S2",
        "#/$defs/S3",
    ]
    strict = old_strict(schema)["properties"]["results"]
    assert strict["required"] == ["p1", "p2", "p3"]


def test_the_histogram_is_measured_sentence_counts() -> None:
    histogram = load_histogram()
    assert sum(histogram.values()) > 1000
    assert min(histogram) >= 1


def test_ten_citation_batches_share_a_few_schemas() -> None:
    rng = random.Random(1)
    histogram = load_histogram()
    batches = [draw_batch(rng, histogram, 10) for _ in range(200)]
    assert all(10 <= len(b) <= 20 for b in batches)
    counts = distinct(batches)
    assert counts["new"]["full"] <= GOAL
    assert counts["new"]["basic"] == 1
    assert counts["old"]["full"] > 190
    assert MAX_PER_CHUNK == 5
