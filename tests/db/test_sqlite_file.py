"""The SQLite file watch never drops the process's locks: SQLite's locks are POSIX fcntl locks,
which closing *any* descriptor of the file drops for the whole process. On a44369f the watch
opened and closed the file at every pool checkout, and another process then got a write lock
this one still held."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from app.db.session import SqliteFile

# Another process, as `highlight-service ingest` is: it writes and closes. Closing its last
# connection, SQLite checkpoints and deletes the WAL if it gets an exclusive lock on the database
# file, i.e. if no other process still holds the shared lock every WAL connection keeps.
OTHER_PROCESS = """
import sqlite3, sys

db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("INSERT INTO t VALUES (2)")
db.close()
"""


def _other_process_writes_and_closes(path: Path) -> None:
    subprocess.run([sys.executable, "-c", OTHER_PROCESS, str(path)], timeout=30, check=True)


def _wal(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


@pytest.mark.slow  # starts another program
def test_watching_the_file_keeps_this_process_locks(tmp_path: Path) -> None:
    path = tmp_path / "live.db"
    db = sqlite3.connect(path, isolation_level=None)  # the server's open connection
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (x)")
    db.execute("INSERT INTO t VALUES (1)")

    watch = SqliteFile(str(path))
    identity = watch.identity()
    assert identity is not None
    for _ in range(20):  # what every pool checkout and every commit does
        assert watch.identity() == identity
    _other_process_writes_and_closes(path)
    # The other process saw this one's lock: the WAL this connection uses is still there.
    assert _wal(path).exists()
    db.execute("INSERT INTO t VALUES (3)")
    assert [row[0] for row in db.execute("SELECT x FROM t ORDER BY x")] == [1, 2, 3]
    db.close()
    watch.release()


def test_a_replaced_deleted_or_overwritten_file_is_noticed(tmp_path: Path) -> None:
    path = tmp_path / "live.db"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    watch = SqliteFile(str(path))
    first = watch.identity()
    assert first is not None

    replacement = tmp_path / "other.db"
    sqlite3.connect(replacement).execute("CREATE TABLE u (y)").connection.close()
    replacement.rename(path)
    second = watch.identity()
    assert second is not None
    assert second != first

    path.write_bytes(b"not a database any more" * 100)  # in place: same inode
    assert watch.identity() is None
    path.unlink()
    assert watch.identity() is None
    watch.release()
