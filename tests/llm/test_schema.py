"""The schema transforms build new schemas and never change what they are given: the batch's
narrowed schema is built from one schema generated once per process (contract.py), so a
transform that changed its input in place would corrupt every later batch's schema."""

from __future__ import annotations

import copy
import json

from app.highlights.contract import ChunkChoice, narrowed_schema
from app.llm.schema import inline_refs, portable


def _choices(n: int, sentences: int) -> list[ChunkChoice]:
    return [ChunkChoice(sentences) for _ in range(n)]


def test_transforms_leave_their_input_unchanged() -> None:
    schema = narrowed_schema(_choices(3, 4), 2)
    before = copy.deepcopy(schema)
    shaped = [
        portable(schema, bounds=True),
        portable(schema, bounds=False),
        portable(schema, bounds=True, enum_budget=5),  # integer enums become ranges
        inline_refs(schema),
        inline_refs(portable(schema, bounds=False)),
    ]
    assert schema == before
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
    first["$defs"]["S3"]["type"] = "spoiled"
    first["properties"]["results"]["prefixItems"][0]["maxItems"] = 99
    assert narrowed_schema(_choices(2, 3), 2) == expected
    other = narrowed_schema(_choices(1, 7), 1)
    assert other["$defs"]["S7"]["enum"] == list(range(1, 8))
