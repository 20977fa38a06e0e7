"""Database round trips per batch, in-process (run by ``request_cpu.py``; imports whichever
``app`` is first on PYTHONPATH, so another checkout can be counted the same way).

Counted over lexical batches that miss the result cache and over result-cache hits, on SQLite:
transactions (SQLAlchemy ``begin`` events, every engine), statements (``before_cursor_execute``)
and loop-to-thread hops: each call aiosqlite makes into its connection's thread (a put on its
queue and a future the loop waits for), plus each hand-over of a whole transaction to a thread
(``app.db.threaded.run_in_thread`` where it exists).

    PYTHONPATH=CHECKOUT .venv/bin/python bench/db_trips.py DATABASE PDF_ROOT INDEX_DIR CHUNK_ID...

DATABASE (an ingested SQLite file) is copied first: the count writes to the copy only.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiosqlite
from sqlalchemy import event
from sqlalchemy.engine import Engine

from tests.fixtures.app import app_client, make_settings

counts: Counter[str] = Counter()


def _count(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        return await original(*args, **kwargs)

    return wrapper


def _instrument() -> None:
    event.listen(Engine, "begin", lambda conn: counts.update(["transactions"]))
    event.listen(Engine, "before_cursor_execute", lambda *a, **k: counts.update(["statements"]))
    aiosqlite.Connection._execute = _count("hops", aiosqlite.Connection._execute)  # type: ignore[method-assign]
    try:  # where a whole transaction is handed to a thread (app/db/threaded.py)
        import app.db.threaded as threaded
    except ImportError:
        return
    threaded.run_in_thread = _count("hops", threaded.run_in_thread)


async def main(database: Path, pdf_root: Path, index_dir: Path, ids: list[str]) -> None:
    rounds = 20
    copy = Path(tempfile.mkdtemp(prefix="db-trips-")) / "copy.db"
    shutil.copyfile(database, copy)
    settings = make_settings(f"sqlite+aiosqlite:///{copy}", pdf_root, index_cache_dir=index_dir)
    cited = [{"chunk_id": c} for c in ids]
    query = "What does the author say about copyright and culture?"
    _instrument()
    async with app_client(settings) as client:
        for kind in ("miss", "hit"):
            await client.post(
                "/v2/highlights/batch", json={"query": query, "answer": "x", "citations": cited}
            )
            counts.clear()
            for i in range(rounds):
                answer = f"Copyright regulates culture ({i})." if kind == "miss" else "x"
                body = {"query": query, "answer": answer, "citations": cited}
                response = await client.post("/v2/highlights/batch", json=body)
                assert response.headers["x-highlight-cache"] == kind, response.text
            per = {k: counts[k] / rounds for k in ("transactions", "statements", "hops")}
            label = "lexical miss" if kind == "miss" else "cache hit"
            print(
                f"db per batch ({label}): {per['transactions']:.1f} transactions, "
                f"{per['statements']:.1f} statements, {per['hops']:.1f} loop-thread hops "
                f"({per['hops'] / max(per['transactions'], 1e-9):.1f} per transaction)"
            )


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:]))
