"""The writers of one process to one SQLite database, in a queue, and their commits grouped.

SQLite has one writer at a time. A writer that finds the file locked sleeps and tries again (the
busy timeout: 1, 2, 5 ... 100 ms) with no queue, so under load some writers lost every race for
seconds: a batch's write took 2.5 s at p99 with two worker processes. Here the writers of a
process wait in order instead, and one of them at a time contends for the file with the other
processes' one. (An ``flock`` queue between the processes as well measured no better: 104 and 103
batches/s with it, 106 and 102 without, two workers.)

Even so the file's lock was the limit: each write transaction holds it for several round trips
between the event loop and the connection's thread (about 17 ms under load), so a process
committed at most about 60 batches a second. Writers that ask for it (``combine``) are grouped:
whoever's turn it is runs the work of every such writer waiting behind it in one transaction, and
hands each its result. If that transaction fails, nothing of it is stored, and each writer runs
its own work alone when its turn comes, so a failure is reported to the writer it belongs to.
Only work that touches nothing but the session may be combined (it may run twice: once in a
group that failed and rolled back, once alone).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger(__name__)
# Async work given an AsyncSession (session.in_transaction), or synchronous work given a Session
# (threaded.in_thread_transaction): the queue only hands it to ``alone`` or ``together``.
Work = Callable[..., Any]


@dataclass
class _Waiting:
    work: Work
    kind: str
    result: asyncio.Future[Any] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class WriteQueue:
    def __init__(self) -> None:
        self._turn = asyncio.Lock()
        self._combinable: list[_Waiting] = []

    async def run(
        self,
        work: Work,
        *,
        combine: bool,
        alone: Callable[[Work], Awaitable[T]],
        together: Callable[[list[Work]], Awaitable[list[Any]]],
        kind: str = "async",
    ) -> T:
        """``work``'s result, run by ``alone(work)`` in its turn, or, when ``combine``, by
        ``together(works)`` with the combinable work of the same ``kind`` queued behind it (by
        whichever writer's turn came first). Kinds are never grouped: ``together`` for
        synchronous work would hand async work a ``Session`` and commit its un-awaited
        coroutine as if it had run."""
        if not combine:
            async with self._turn:
                return await alone(work)
        me = _Waiting(work, kind)
        self._combinable.append(me)
        try:
            async with self._turn:
                if me.result.done():  # committed in an earlier writer's group
                    result: T = me.result.result()
                    return result
                group = [me, *(w for w in self._combinable if w is not me and w.kind == kind)]
                taken = {id(w) for w in group}
                self._combinable = [w for w in self._combinable if id(w) not in taken]
                if len(group) > 1:
                    try:
                        results = await together([w.work for w in group])
                    except Exception as exc:  # each runs alone in its turn and sees its error
                        log.info("a grouped write failed (%r); its writers retry alone", exc)
                    else:
                        for waiting, value in zip(group[1:], results[1:], strict=True):
                            if not waiting.result.done():
                                waiting.result.set_result(value)
                        return results[0]  # type: ignore[no-any-return]
                return await alone(work)
        finally:
            if me in self._combinable:  # cancelled while waiting: never run for it
                self._combinable.remove(me)
