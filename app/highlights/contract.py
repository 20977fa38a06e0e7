"""What the model is asked to return, the schema narrowed to one batch, and the checks on the reply.

The model answers with positions and sentence ids only: ``{"results": [[2, 5], [1], []]}``, one
list per cited passage in the order the prompt gives them (a passage is a chunk and the claim it
is cited for). It writes a few tokens per passage: no chunk ids, no field names, no object per
sentence. Under constrained decoding every id it can name exists: each position's ids are an
``enum`` of its chunk's sentence numbers, kept in ``$defs`` (one definition per sentence count,
shared by equal chunks), so two batches with the same shape (sentence counts and limit) send the
same schema, and a server that caches compiled grammars (vLLM) compiles it once.

Providers that take only OpenAI's strict subset get the tuple as an object with keys ``p1`` ..
``pN`` (``app.llm.schema.portable``); the reply is read in either form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictInt, ValidationError, field_validator

from app.llm.errors import LLMInvalidOutput
from app.llm.schema import JSON

_POSITION_KEY = re.compile(r"p([1-9]\d{0,3})")


class HighlightBatchResult(BaseModel):
    """Per passage, in the order given, the ids of its sentences that support its claim."""

    model_config = ConfigDict(extra="ignore")
    # StrictInt: JSON's true is no sentence id. None: a position the keyed form left out.
    results: list[list[StrictInt] | None]

    @field_validator("results", mode="before")
    @classmethod
    def _positions(cls, value: Any) -> Any:
        # The strict-subset form: {"p1": [...], "p2": [...]} in any key order.
        if isinstance(value, dict):
            keyed = {}
            for key, ids in value.items():
                found = _POSITION_KEY.fullmatch(str(key))
                if found is None:
                    raise ValueError(f"unknown key {str(key)[:20]!r} (expected p1, p2, ...)")
                keyed[int(found.group(1))] = ids
            return [keyed.get(n) for n in range(1, max(keyed, default=0) + 1)]
        return value


@dataclass(frozen=True)
class ChunkChoice:
    """One passage offered to the model: how many numbered sentences its chunk has."""

    sentence_count: int


@dataclass
class Selection:
    """Validated reply: sentence ids per passage position (0-based; 1-based ids, deduplicated,
    in the model's order)."""

    by_position: dict[int, list[int]] = field(default_factory=dict)
    dropped_ids: int = 0
    missing: list[int] = field(default_factory=list)  # positions with no answer, invalid ones too
    invalid: list[int] = field(default_factory=list)  # only unknown ids were named


def _schema(counts: tuple[int, ...], max_per_chunk: int) -> JSON:
    # Built anew per batch (a few dicts: microseconds), so no caller shares another's.
    defs: JSON = {
        f"S{n}": {"type": "integer", "enum": list(range(1, n + 1))} for n in sorted(set(counts))
    }
    prefix = [
        {"type": "array", "items": {"$ref": f"#/$defs/S{n}"}, "maxItems": max_per_chunk}
        for n in counts
    ]
    return {
        "title": "HighlightBatchResult",
        "type": "object",
        "$defs": defs,
        "properties": {
            "results": {
                "type": "array",
                "prefixItems": prefix,
                "items": False,
                "minItems": len(counts),
                "maxItems": len(counts),
            }
        },
        "required": ["results"],
        "additionalProperties": False,
    }


def narrowed_schema(choices: list[ChunkChoice], max_per_chunk: int) -> JSON:
    """HighlightBatchResult's schema for one batch: a tuple of one id list per passage, each
    position's ids an enum of its chunk's sentence numbers."""
    return _schema(tuple(c.sentence_count for c in choices), max_per_chunk)


def validate_reply(raw: Any, choices: list[ChunkChoice], max_per_chunk: int) -> Selection:
    """Check the reply against the model and the batch. Unknown sentence ids and positions past
    the batch are dropped and counted, duplicates removed; a reply that answers no passage is
    invalid."""
    try:
        parsed = HighlightBatchResult.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise LLMInvalidOutput(
            f"the reply does not fit HighlightBatchResult: {where}: {first['msg']}"
        ) from exc
    selection = Selection()
    for extra in parsed.results[len(choices) :]:
        selection.dropped_ids += len(extra or ())
    for position, ids in enumerate(parsed.results[: len(choices)]):
        if ids is None:
            continue  # not answered: missing, not "nothing supports it"
        count = choices[position].sentence_count
        chosen: list[int] = []
        for sentence_id in ids:
            if not 1 <= sentence_id <= count:
                selection.dropped_ids += 1
            elif sentence_id not in chosen and len(chosen) < max_per_chunk:
                chosen.append(sentence_id)
        # A passage for which the model named only sentences that do not exist got no answer:
        # that is not "nothing here supports the claim", and the lexical selector stands in.
        if ids and not chosen:
            selection.invalid.append(position)
        else:
            selection.by_position[position] = chosen
    selection.missing = [p for p in range(len(choices)) if p not in selection.by_position]
    if choices and not selection.by_position:
        if selection.invalid:
            raise LLMInvalidOutput("the reply names only sentence ids that do not exist")
        raise LLMInvalidOutput("the reply answers none of the passages it was given")
    return selection
