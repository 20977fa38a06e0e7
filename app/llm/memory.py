"""What the structured-output client learns per (base URL, model), shared by client.py and the
reasoning-effort policy (reasoning.py) so neither has to import the other."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

Key = tuple[str, str]
# What a model can be learned to need besides its reasoning effort (reasoning.py's quirks).
OMIT_TEMPERATURE = "omit_temperature"
MAX_COMPLETION_TOKENS = "max_completion_tokens"
# Schemas remembered per process: bucketed (highlights/contract.py), a model sees about ten.
MAX_SCHEMAS = 256


class CapabilityMemory:
    """What is known per (base URL, model): the strategy to start from, and the parameters the
    model refuses. A downgrade is forgotten after ``ttl_s`` so a server that gains a feature (a
    vLLM upgrade) is tried on it again; a refused parameter is a property of the model and kept.
    A schema the server's grammar backend cannot compile (a 5xx, vllm#57725) is kept per schema
    for the process: its tier is not paid for again on every batch that sends it."""

    def __init__(self, ttl_s: float = 3600.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._start: dict[Key, tuple[int, float]] = {}
        self._quirks: dict[Key, frozenset[str]] = {}
        self._schema_start: OrderedDict[tuple[Key, str], int] = OrderedDict()
        self._ttl_s = ttl_s
        self._clock = clock

    def start(self, key: Key) -> int:
        index, since = self._start.get(key, (0, 0.0))
        if index and self._clock() - since > self._ttl_s:
            del self._start[key]
            return 0
        return index

    def downgrade(self, key: Key, to_index: int) -> None:
        if to_index > self.start(key):
            self._start[key] = (to_index, self._clock())

    def quirks(self, key: Key) -> frozenset[str]:
        return self._quirks.get(key, frozenset())

    def learn(self, key: Key, quirk: str) -> None:
        self._quirks[key] = self.quirks(key) | {quirk}

    def schema_start(self, key: Key, schema: str) -> int:
        """The strategy to start from for the schema with fingerprint ``schema``."""
        return self._schema_start.get((key, schema), 0)

    def downgrade_schema(self, key: Key, schema: str, to_index: int) -> None:
        if to_index <= self.schema_start(key, schema):
            return
        self._schema_start[(key, schema)] = to_index
        self._schema_start.move_to_end((key, schema))
        while len(self._schema_start) > MAX_SCHEMAS:
            self._schema_start.popitem(last=False)
