"""WAL checkpoints in a thread of their own (sqlite_checkpoint.py): a commit wakes it and it
copies the WAL into the database file, so no request pays a checkpoint (SQLite's automatic one
stays as a backstop); closing the database stops it. A real SQLite file throughout; what is in the
database file itself is read with ``immutable=1``, which ignores the WAL."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from infinite_context_brain.core.storage import sqlite_checkpoint
from infinite_context_brain.core.storage.sqlite_db import SQLiteDB


def _in_database_file(path: Path) -> int | None:
    """Rows of ``t`` in the database file alone (None: the table is not there yet)."""
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM t").fetchone()[0])
    except sqlite3.OperationalError:
        return None
    finally:
        conn.close()


def _checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "ic-checkpoint" and t.is_alive()]


def test_a_commit_is_checkpointed_by_the_thread_not_the_next_commit(tmp_path: Path) -> None:
    path = tmp_path / "brain.db"
    db = SQLiteDB(path)
    try:
        assert db.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == sqlite_checkpoint.BACKSTOP_PAGES
        with db.write_txn() as conn:
            conn.execute("CREATE TABLE t (x)")
            conn.executemany("INSERT INTO t VALUES (?)", [(n,) for n in range(100)])
        # a few pages: far below any automatic checkpoint, yet in the file shortly
        deadline = time.monotonic() + 5
        while _in_database_file(path) != 100:
            assert time.monotonic() < deadline, "the WAL was not checkpointed"
            time.sleep(0.02)
        assert db.rows("SELECT count(*) FROM t") == [(100,)]  # the main connection goes on
    finally:
        db.close()


def test_closing_stops_the_thread(tmp_path: Path) -> None:
    before = set(_checkpoint_threads())
    db = SQLiteDB(tmp_path / "brain.db")
    with db.write_txn() as conn:
        conn.execute("CREATE TABLE t (x)")
    assert set(_checkpoint_threads()) - before
    db.close()
    assert not set(_checkpoint_threads()) - before
    db.checkpoints.wrote()  # a late commit's call after close starts nothing
    assert not set(_checkpoint_threads()) - before


def test_a_database_that_only_reads_starts_no_thread(tmp_path: Path) -> None:
    before = set(_checkpoint_threads())
    db = SQLiteDB(tmp_path / "brain.db")
    try:
        db.rows("SELECT 1")
        assert not set(_checkpoint_threads()) - before
    finally:
        db.close()
