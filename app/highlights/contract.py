"""What the model is asked to return, the schema of one batch, and the checks on the reply.

The model answers per cited passage (a chunk and the claim it is cited for), in the order the
prompt gives them, with a verdict and then the ids of the sentences that support the claim, most
important first: ``{"results": [["yes", 2, 5], ["no"], ["part", 1]]}``. ``"yes"``: the passage
supports its claim; ``"part"``: it supports part of it; ``"no"``: nothing in it does, and no id
follows. A few tokens per passage: no chunk ids, no field names, no object per sentence.

The schema is bucketed, not exact, so that batches share it: a server that caches compiled
grammars by schema (vLLM) compiles each one once. An id is bounded by the batch's largest
sentence count rounded up to a short ladder (``ID_LADDER``), and the number of passages lies in
a power-of-two bucket (``passage_bounds``); nothing depends on one position's chunk. Sentence
counts differ from chunk to chunk, so a schema with one shape per position (as before: an
``enum`` of each chunk's ids, in a ``prefixItems`` tuple of the exact length) was new for almost
every batch: the 2,000 realistic 10-citation batches of ``bench/grammar_bench.py`` sent 2,000
distinct schemas, and send 10 now. What the looser bounds let through (an id past its own chunk,
a passage too many) is dropped here, and counted.

Providers that take only OpenAI's strict subset get the same answer through a relaxed schema
(``app.llm.schema.portable``: no ``prefixItems``, no ``const``, ids as integer ranges); it
decodes to the same text and is checked the same way. The reply is read leniently: a list of ids
without a verdict (an older or sloppy model) is a "yes", an empty list is a "no", and the old
keyed form ``{"p1": [...], "p2": [...]}`` is still read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, StrictInt, ValidationError, field_validator

from app.llm.errors import LLMInvalidOutput
from app.llm.schema import JSON
from app.selection.support import Support

_POSITION_KEY = re.compile(r"p([1-9]\d{0,3})")

Word = Literal["yes", "part", "no"]
# The model's words for the verdicts the word-overlap judge gives too.
VERDICTS: dict[str, Support] = {"yes": "supported", "part": "partial", "no": "unsupported"}
# Largest id a batch's schema allows: its largest chunk's sentence count rounded up to a rung (200
# is the default cap, max_sentences_per_chunk); past the last, to a power of two. Batches of ten
# citations of real filings land on 16, 32 or 64 in 99% of cases (bench/grammar_bench.py).
ID_LADDER = (8, 16, 32, 64, 128, 200)


class HighlightBatchResult(BaseModel):
    """Per passage, in the order given, a verdict and the ids of its sentences that support its
    claim: ``["yes", 2, 5]``, ``["part", 1]``, ``["no"]``."""

    model_config = ConfigDict(extra="ignore")
    # StrictInt: JSON's true is no sentence id. None: a position the keyed form left out.
    results: list[list[StrictInt | Word] | None]

    @field_validator("results", mode="before")
    @classmethod
    def _positions(cls, value: Any) -> Any:
        # The old strict-subset form: {"p1": [...], "p2": [...]} in any key order.
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


@dataclass(frozen=True)
class PassageAnswer:
    """The model's answer for one passage: its verdict, and the ids (1-based, deduplicated, in
    the model's order) of the sentences that support the claim; none when unsupported."""

    ids: list[int]
    verdict: Support


@dataclass
class Selection:
    """Validated reply, per passage position (0-based)."""

    by_position: dict[int, PassageAnswer] = field(default_factory=dict)
    dropped_ids: int = 0  # ids past their chunk's sentences, or past the batch's passages
    extra_positions: int = 0  # answers past the batch's passages
    missing: list[int] = field(default_factory=list)  # positions with no answer, invalid ones too
    invalid: list[int] = field(default_factory=list)  # "yes"/"part" without an existing sentence


def id_bound(largest: int) -> int:
    """The largest id the schema allows for a batch whose largest chunk has ``largest``
    sentences."""
    for rung in ID_LADDER:
        if largest <= rung:
            return rung
    bound = 256
    while bound < largest:
        bound *= 2
    return bound


def passage_bounds(count: int) -> tuple[int, int]:
    """minItems and maxItems of ``results`` for ``count`` passages: the power-of-two bucket that
    holds ``count`` (1, 2, 3-4, 5-8, 9-16, ...)."""
    high = 1
    while high < count:
        high *= 2
    return (high // 2 + 1 if high > 1 else 1), high


def _schema(bound: int, low: int, high: int, max_per_chunk: int) -> JSON:
    # Built anew per call (a few dicts: microseconds), so no caller shares another's.
    unsupported = {
        "type": "array",
        "prefixItems": [{"type": "string", "const": "no"}],
        "items": False,
        "minItems": 1,
        "maxItems": 1,
    }
    supported = {
        "type": "array",
        "prefixItems": [{"type": "string", "enum": ["yes", "part"]}],
        "items": {"$ref": "#/$defs/Id"},
        "minItems": 2,
        "maxItems": 1 + max_per_chunk,
    }
    return {
        "title": "HighlightBatchResult",
        "type": "object",
        "$defs": {
            "Id": {"type": "integer", "minimum": 1, "maximum": bound},
            "Passage": {"anyOf": [unsupported, supported]},
        },
        "properties": {
            "results": {
                "type": "array",
                "items": {"$ref": "#/$defs/Passage"},
                "minItems": low,
                "maxItems": high,
            }
        },
        "required": ["results"],
        "additionalProperties": False,
    }


def narrowed_schema(choices: list[ChunkChoice], max_per_chunk: int) -> JSON:
    """HighlightBatchResult's schema for one batch: per passage ``["no"]`` or ``"yes"``/``"part"``
    and 1 to ``max_per_chunk`` ids, the ids and the number of passages bounded by buckets (see
    the module docstring), so batches of similar size send the same schema."""
    largest = max((c.sentence_count for c in choices), default=1)
    return _schema(id_bound(largest), *passage_bounds(len(choices)), max_per_chunk)


def validate_reply(raw: Any, choices: list[ChunkChoice], max_per_chunk: int) -> Selection:
    """Check the reply against the model and the batch. Per passage: ids past its chunk's
    sentences are dropped and counted, duplicates removed, at most ``max_per_chunk`` kept; ids
    after "no" are ignored; "yes" or "part" with no existing id is invalid (the lexical selector
    stands in); ids without a verdict are a "yes", an empty list a "no". Positions past the
    batch are dropped and counted. A reply that answers no passage is invalid."""
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
        selection.extra_positions += extra is not None
        selection.dropped_ids += sum(isinstance(i, int) for i in extra or ())
    for position, items in enumerate(parsed.results[: len(choices)]):
        if items is None:
            continue  # not answered: missing, not "nothing supports it"
        if items and isinstance(items[0], str):
            word, rest = items[0], items[1:]
        else:
            word, rest = "yes", items  # ids without a verdict: an older or sloppy model
        if not items or word == "no":  # [] was the positional format's "nothing supports it"
            selection.by_position[position] = PassageAnswer([], "unsupported")
            continue
        count = choices[position].sentence_count
        chosen: list[int] = []
        for sentence_id in rest:
            # A word where an id belongs (the strict form's relaxed items allow it) is no id.
            if isinstance(sentence_id, str) or not 1 <= sentence_id <= count:
                selection.dropped_ids += 1
            elif sentence_id not in chosen and len(chosen) < max_per_chunk:
                chosen.append(sentence_id)
        # Supported by no sentence that exists: that is no answer, not "nothing here supports
        # the claim", and the lexical selector stands in.
        if chosen:
            selection.by_position[position] = PassageAnswer(chosen, VERDICTS[word])
        else:
            selection.invalid.append(position)
    selection.missing = [p for p in range(len(choices)) if p not in selection.by_position]
    if choices and not selection.by_position:
        if selection.invalid:
            raise LLMInvalidOutput("the reply names only sentence ids that do not exist")
        raise LLMInvalidOutput("the reply answers none of the passages it was given")
    return selection
