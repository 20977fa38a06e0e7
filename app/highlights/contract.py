"""What the model is asked to return, the schema narrowed to one batch, and the checks on the reply.

The model answers with sentence ids, never copied text: it writes a few tokens per chunk, and every
id it can name under constrained decoding exists (each chunk's ids are an ``enum``).
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from app.llm.errors import LLMInvalidOutput
from app.llm.schema import JSON


class RelevantSentence(BaseModel):
    model_config = ConfigDict(extra="ignore")
    sentence_id: int


class ChunkHighlights(BaseModel):
    model_config = ConfigDict(extra="ignore")
    chunk_id: str
    relevant_sentences: list[RelevantSentence]


class HighlightBatchResult(BaseModel):
    model_config = ConfigDict(extra="ignore")
    results: list[ChunkHighlights]


@dataclass(frozen=True)
class ChunkChoice:
    """One chunk offered to the model: its id and how many numbered sentences it has."""

    chunk_id: str
    sentence_count: int


@dataclass
class Selection:
    """Validated reply: sentence ids per chunk (1-based, deduplicated, in the model's order)."""

    by_chunk: dict[str, list[int]] = field(default_factory=dict)
    dropped_ids: int = 0
    missing_chunks: list[str] = field(default_factory=list)  # invalid ones included
    invalid_chunks: list[str] = field(default_factory=list)  # only unknown ids were named


@functools.cache
def _result_schema() -> JSON:
    # Once: pydantic generates it anew on every call (about 5% of a batch's CPU under load).
    # Read only: the parts narrowed_schema changes are deep copies.
    return HighlightBatchResult.model_json_schema()


def narrowed_schema(choices: list[ChunkChoice], max_per_chunk: int) -> JSON:
    """HighlightBatchResult's schema with one ``$defs`` entry per chunk: its id as a constant and
    its own sentence ids as an enum, placed by ``prefixItems`` so each chunk appears exactly once.
    """
    base = _result_schema()
    chunk_def = base["$defs"]["ChunkHighlights"]
    sentence_def = base["$defs"]["RelevantSentence"]
    defs: JSON = {}
    prefix: list[JSON] = []
    for i, choice in enumerate(choices):
        sentence = copy.deepcopy(sentence_def)
        sentence["title"] = f"SentenceOfChunk{i}"
        sentence["properties"]["sentence_id"] = {
            "type": "integer",
            "enum": list(range(1, choice.sentence_count + 1)),
        }
        sentence["additionalProperties"] = False
        chunk = copy.deepcopy(chunk_def)
        chunk["title"] = f"Chunk{i}"
        chunk["properties"]["chunk_id"] = {"type": "string", "const": choice.chunk_id}
        chunk["properties"]["relevant_sentences"] = {
            "type": "array",
            "items": {"$ref": f"#/$defs/SentenceOfChunk{i}"},
            "maxItems": max_per_chunk,
        }
        chunk["additionalProperties"] = False
        defs[f"SentenceOfChunk{i}"] = sentence
        defs[f"Chunk{i}"] = chunk
        prefix.append({"$ref": f"#/$defs/Chunk{i}"})
    return {
        "title": "HighlightBatchResult",
        "type": "object",
        "$defs": defs,
        "properties": {
            "results": {
                "type": "array",
                "prefixItems": prefix,
                "minItems": len(choices),
                "maxItems": len(choices),
            }
        },
        "required": ["results"],
        "additionalProperties": False,
    }


def validate_reply(raw: Any, choices: list[ChunkChoice], max_per_chunk: int) -> Selection:
    """Check the reply against the model and the batch. Unknown chunk and sentence ids are dropped
    and counted, duplicates removed; a reply that names none of the batch's chunks is invalid."""
    try:
        parsed = HighlightBatchResult.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise LLMInvalidOutput(
            f"the reply does not fit HighlightBatchResult: {where}: {first['msg']}"
        ) from exc
    counts = {c.chunk_id: c.sentence_count for c in choices}
    selection = Selection()
    named: dict[str, int] = {}
    for item in parsed.results:
        if item.chunk_id not in counts:
            selection.dropped_ids += 1 + len(item.relevant_sentences)
            continue
        chosen = selection.by_chunk.setdefault(item.chunk_id, [])
        named[item.chunk_id] = named.get(item.chunk_id, 0) + len(item.relevant_sentences)
        for sentence in item.relevant_sentences:
            valid = 1 <= sentence.sentence_id <= counts[item.chunk_id]
            if not valid:
                selection.dropped_ids += 1
            elif sentence.sentence_id not in chosen and len(chosen) < max_per_chunk:
                chosen.append(sentence.sentence_id)
    # A chunk for which the model named only sentences that do not exist got no answer: that is
    # not "nothing here supports the answer", and the lexical selector stands in for it.
    selection.invalid_chunks = [c for c, ids in selection.by_chunk.items() if named[c] and not ids]
    for chunk_id in selection.invalid_chunks:
        del selection.by_chunk[chunk_id]
    selection.missing_chunks = [c.chunk_id for c in choices if c.chunk_id not in selection.by_chunk]
    if choices and not selection.by_chunk:
        if selection.invalid_chunks:
            raise LLMInvalidOutput("the reply names only sentence ids that do not exist")
        raise LLMInvalidOutput("the reply names none of the chunks it was given")
    return selection
