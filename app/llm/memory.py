"""What the structured-output client learns per (base URL, model), shared by client.py and the
reasoning-effort policy (reasoning.py) so neither has to import the other."""

from __future__ import annotations

import time
from collections.abc import Callable

Key = tuple[str, str]
# What a model can be learned to need besides its reasoning effort (reasoning.py's quirks).
OMIT_TEMPERATURE = "omit_temperature"
MAX_COMPLETION_TOKENS = "max_completion_tokens"


class CapabilityMemory:
    """What is known per (base URL, model): the strategy to start from, and the parameters the
    model refuses. A downgrade is forgotten after ``ttl_s`` so a server that gains a feature (a
    vLLM upgrade) is tried on it again; a refused parameter is a property of the model and kept."""

    def __init__(self, ttl_s: float = 3600.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._start: dict[Key, tuple[int, float]] = {}
        self._quirks: dict[Key, frozenset[str]] = {}
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
