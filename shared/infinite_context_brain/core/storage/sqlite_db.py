"""The one SQLite connection every part of the SQLite store shares (sqlite.py composes them).

Writers serialise on SQLite's own write lock (``BEGIN IMMEDIATE``), so many processes (an MCP
server per Claude Code session, the language server, hooks, notebooks) can share one file; within
a process an RLock serialises the threads using this connection. A write waits for another
process's write at most ``BUSY_TIMEOUT_MS``: every transaction here takes milliseconds, so a
longer wait means a writer that is stopped or stuck, and the error names the way to find it.

Durability: ``synchronous=NORMAL`` in WAL mode keeps every committed write across a process
crash (kill -9); only an OS crash or power loss can drop the last transactions.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ..errors import CorruptState, StorageError, StorageUnavailable
from ..files import FILE_MODE, private_dir
from .sqlite_migrations import migrate

log = logging.getLogger(__name__)
_T = TypeVar("_T")

BUSY_TIMEOUT_MS = 1500


def unavailable(path: Path, exc: BaseException) -> StorageError:
    """An SQLite or OS error as the error tree's StorageError, with the fix for its cause: a full
    disk, a damaged file (page corruption, not a database), a busy file, or no permission."""
    reason = getattr(exc, "strerror", None) or str(exc)
    text = reason.lower()
    if "disk is full" in text or "no space" in text or getattr(exc, "errno", None) == 28:
        return StorageUnavailable(
            f"cannot write the SQLite store at {path}: the disk is full",
            fix="free disk space there (nothing was written; retry after), or point "
            "INFINITE_CONTEXT_STORE_URL at a file on another disk",
        )
    # "string or blob too big": every value we write is far below SQLite's 1 GB limit, so it can
    # only come from a damaged record length (seen with random bytes written over pages).
    damaged = (
        "malformed",
        "not a database",
        "could not decode",
        "codec can't decode",  # a damaged TEXT value (Python's sqlite3 raises UnicodeDecodeError)
        "disk i/o error",
        "corrupt",
        "string or blob too big",
    )
    if any(s in text for s in damaged):
        return CorruptState(
            f"the SQLite store at {path} is damaged: {reason[:200]}",
            fix=f"recover what is readable: sqlite3 {path} .recover | sqlite3 {path}.recovered, then "
            f"move {path.name}.recovered over {path.name} (or move {path.name} away to start empty)",
        )
    if "locked" in text or "busy" in text:
        return StorageUnavailable(
            f"the SQLite store at {path} stayed locked by another process's write for "
            f"{BUSY_TIMEOUT_MS / 1000:g} s ({reason})",
            fix=f"that process is stopped or stuck: `fuser -v {path}` names it; resume (kill -CONT) or "
            "end it, then retry",
        )
    return StorageUnavailable(
        f"cannot use the SQLite store at {path}: {reason}",
        fix=(
            "make that folder writable, or point INFINITE_CONTEXT_STORE_URL at a writable file "
            "(e.g. sqlite:////tmp/brain.db)"
        ),
    )


def _prepare_file(path: Path) -> None:
    """Create the folder (0700) and the file (0600) before SQLite does, so the mode is ours;
    SQLite gives its -wal and -shm files the same mode as the database file.

    An existing file is never opened here: POSIX locks belong to the process, and closing any
    descriptor of the file drops every lock SQLite holds on it through another connection of this
    process (a language server opens one store per workspace folder), after which another
    process may delete the WAL under it."""
    try:
        private_dir(path.parent)
        try:
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, FILE_MODE))
        except FileExistsError:
            info = path.stat()
            if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077:
                path.chmod(FILE_MODE)  # an older 0644 file tightened
        if not os.access(path, os.R_OK | os.W_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as exc:
        raise unavailable(path, exc) from None


class SQLiteDB:
    """The file, its connection, and the three ways the parts use it: a write transaction, a
    guarded read, and a fresh connection for a change-feed poller."""

    def __init__(self, path: Path) -> None:
        self.path = path.expanduser().resolve()
        self.display_url = f"sqlite:///{self.path}".replace("sqlite:////", "sqlite:///")
        _prepare_file(self.path)
        self.lock = threading.RLock()
        try:
            self.conn = self._open_and_migrate()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            mapped = unavailable(self.path, exc)
            if not isinstance(mapped, CorruptState):
                raise mapped from None
            raise CorruptState(
                f"{self.path} is not a usable infinite-context database: {exc}", fix=mapped.fix
            ) from None

    def _open_and_migrate(self) -> sqlite3.Connection:
        """Connect and bring the schema up to date. Switching a new file to WAL needs an
        exclusive lock that SQLite may refuse at once ("database is locked") instead of waiting
        in its busy handler when other processes open the same new file at the same moment; so
        the set-up is retried until the busy timeout, and only then reported as busy."""
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        delay = 0.01
        while True:
            conn: sqlite3.Connection | None = None
            try:
                conn = self.connect()
                migrate(conn)
                return conn
            except sqlite3.OperationalError as exc:
                if conn is not None:
                    conn.close()
                busy = "locked" in str(exc) or "busy" in str(exc)
                if not busy or time.monotonic() + delay > deadline:
                    raise unavailable(self.path, exc) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

    def connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            log.warning("SQLite refused WAL mode", extra={"journal_mode": mode, "path": str(self.path)})
        conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    @contextmanager
    def write_txn(self) -> Iterator[sqlite3.Connection]:
        with self.lock:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise unavailable(self.path, exc) from None
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException as exc:
                if self.conn.in_transaction:
                    try:
                        self.conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        log.warning("rollback failed", exc_info=True)
                if isinstance(exc, (sqlite3.DatabaseError, UnicodeDecodeError)):  # full disk, damage
                    raise unavailable(self.path, exc) from None
                raise

    def guard(self, what: Callable[[], _T]) -> _T:
        try:
            return what()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise unavailable(self.path, exc) from None

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """All rows of one read, under the connection lock."""
        with self.lock:
            found: list[Any] = self.guard(lambda: self.conn.execute(sql, params).fetchall())
        return found

    def row(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        """The first row of one read (None if there is none)."""
        with self.lock:
            return self.guard(lambda: self.conn.execute(sql, params).fetchone())

    def close(self) -> None:
        with self.lock:
            self.conn.close()
