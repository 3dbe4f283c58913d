"""Embedded default store: one SQLite file (WAL, mode 0600) for every project on the machine.

Writers serialise on SQLite's own write lock (``BEGIN IMMEDIATE``, 5 s busy timeout), so many
processes (an MCP server per Claude Code session, the language server, hooks, notebooks) can
share one file. The change feed is a ``changes`` table polled by a reader connection that
watches ``PRAGMA data_version``, which moves whenever any other connection commits: another
process's checkpoint reaches a subscriber within ``POLL_SECONDS``.

Durability: ``synchronous=NORMAL`` in WAL mode keeps every committed write across a process
crash (kill -9); only an OS crash or power loss can drop the last transactions.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ..errors import StorageUnavailable
from ..models import HistoryEntry, LockInfo, Observation, ProjectState
from .base import BaseStore, Change, ChangeCallback, parse_entry, parse_observation
from .memory_sqlite import SQLiteMemoryMixin
from .sqlite_migrations import migrate

log = logging.getLogger(__name__)
_T = TypeVar("_T")

POLL_SECONDS = 0.1
BUSY_TIMEOUT_MS = 5000
CHANGES_KEPT = 1000


def _unavailable(path: Path, exc: BaseException) -> StorageUnavailable:
    reason = getattr(exc, "strerror", None) or str(exc)
    return StorageUnavailable(
        f"cannot use the SQLite store at {path}: {reason}",
        fix=(
            "make that folder writable, or point INFINITE_CONTEXT_STORE_URL at a writable file "
            "(e.g. sqlite:////tmp/brain.db)"
        ),
    )


def _prepare_file(path: Path) -> None:
    """Create the folder (0700) and the file (0600) before SQLite does, so the mode is ours;
    SQLite gives its -wal and -shm files the same mode as the database file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not path.exists():
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            os.close(fd)
        if not os.access(path, os.R_OK | os.W_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as exc:
        raise _unavailable(path, exc) from None


class SQLiteStore(SQLiteMemoryMixin, BaseStore):
    def __init__(self, path: Path, *, history_size: int = 5, cas_attempts: int = 3) -> None:
        super().__init__(history_size=history_size, cas_attempts=cas_attempts)
        self.path = path.expanduser().resolve()
        self.display_url = f"sqlite:///{self.path}".replace("sqlite:////", "sqlite:///")
        _prepare_file(self.path)
        self._lock = threading.RLock()
        self._subscriptions: list[_Poller] = []
        try:
            self._conn = self._connect()
            migrate(self._conn)
        except sqlite3.DatabaseError as exc:
            raise StorageUnavailable(
                f"{self.path} is not a usable infinite-context database: {exc}",
                fix="move that file away (a new one is created) or set INFINITE_CONTEXT_STORE_URL",
            ) from None

    def _connect(self) -> sqlite3.Connection:
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
    def _write_txn(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise _unavailable(self.path, exc) from None
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    def _guard(self, what: Callable[[], _T]) -> _T:
        try:
            return what()
        except sqlite3.OperationalError as exc:
            raise _unavailable(self.path, exc) from None

    # ---- state ------------------------------------------------------------------------------
    def _read(self, session_id: str) -> tuple[int, bytes | None]:
        with self._lock:
            row = self._guard(
                lambda: self._conn.execute(
                    "SELECT version, state FROM states WHERE session_id = ?", (session_id,)
                ).fetchone()
            )
        if row is None:
            return 0, None
        version, state = row
        return int(version), state.encode() if isinstance(state, str) else state

    def _store(self, conn: sqlite3.Connection, session_id: str, entry: HistoryEntry) -> None:
        now = time.time()
        conn.execute(
            "INSERT INTO states(session_id, version, state, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(session_id) DO UPDATE SET version=excluded.version, state=excluded.state, "
            "updated_at=excluded.updated_at",
            (session_id, entry.version, entry.state.model_dump_json(), now),
        )
        conn.execute(
            "INSERT OR REPLACE INTO history(session_id, version, entry) VALUES (?, ?, ?)",
            (session_id, entry.version, entry.model_dump_json()),
        )
        conn.execute(
            "DELETE FROM history WHERE session_id = ? AND version <= ?",
            (session_id, entry.version - self.history_size),
        )
        cur = conn.execute(
            "INSERT INTO changes(session_id, version, kind, at) VALUES (?, ?, 'state', ?)",
            (session_id, entry.version, now),
        )
        if cur.lastrowid and cur.lastrowid % 100 == 0:
            conn.execute("DELETE FROM changes WHERE seq <= ?", (cur.lastrowid - CHANGES_KEPT,))

    def _write_if(self, session_id: str, expected_version: int, entry: HistoryEntry) -> bool:
        with self._write_txn() as conn:
            row = conn.execute("SELECT version FROM states WHERE session_id = ?", (session_id,)).fetchone()
            if (int(row[0]) if row else 0) != expected_version:
                return False
            self._store(conn, session_id, entry)
            return True

    def _update_exclusive(
        self, session_id: str, build: Callable[[int, bytes | None], HistoryEntry]
    ) -> HistoryEntry:
        with self._write_txn() as conn:
            row = conn.execute(
                "SELECT version, state FROM states WHERE session_id = ?", (session_id,)
            ).fetchone()
            version, raw = (int(row[0]), row[1].encode()) if row else (0, None)
            entry = build(version, raw)
            self._store(conn, session_id, entry)
            return entry

    # ---- history ----------------------------------------------------------------------------
    def history(self, session_id: str, limit: int | None = None) -> list[HistoryEntry]:
        with self._lock:
            rows = self._guard(
                lambda: self._conn.execute(
                    "SELECT entry FROM history WHERE session_id = ? ORDER BY version DESC LIMIT ?",
                    (session_id, limit if limit is not None else -1),
                ).fetchall()
            )
        entries = (parse_entry(r[0], session_id=session_id) for r in rows)
        return [e for e in entries if e is not None]

    def history_entry(self, session_id: str, version: int) -> HistoryEntry | None:
        with self._lock:
            row = self._guard(
                lambda: self._conn.execute(
                    "SELECT entry FROM history WHERE session_id = ? AND version = ?", (session_id, version)
                ).fetchone()
            )
        return parse_entry(row[0], session_id=session_id) if row else None

    # ---- advisory lock ----------------------------------------------------------------------
    def acquire_lock(self, session_id: str, owner: str, ttl_seconds: float) -> LockInfo:
        from datetime import UTC, datetime

        now = time.time()
        with self._write_txn() as conn:
            row = conn.execute(
                "SELECT owner, expires_at FROM locks WHERE session_id = ?", (session_id,)
            ).fetchone()
            if row and row[0] != owner and row[1] > now:
                return LockInfo(
                    acquired=False,
                    owner=owner,
                    holder=row[0],
                    expires_at=datetime.fromtimestamp(row[1], UTC),
                )
            expires = now + ttl_seconds
            conn.execute(
                "INSERT OR REPLACE INTO locks(session_id, owner, expires_at) VALUES (?, ?, ?)",
                (session_id, owner, expires),
            )
        return LockInfo(
            acquired=True, owner=owner, holder=owner, expires_at=datetime.fromtimestamp(expires, UTC)
        )

    def release_lock(self, session_id: str, owner: str) -> bool:
        with self._write_txn() as conn:
            cur = conn.execute("DELETE FROM locks WHERE session_id = ? AND owner = ?", (session_id, owner))
            return cur.rowcount > 0

    def lock_holder(self, session_id: str) -> str | None:
        with self._lock:
            row = self._guard(
                lambda: self._conn.execute(
                    "SELECT owner FROM locks WHERE session_id = ? AND expires_at > ?",
                    (session_id, time.time()),
                ).fetchone()
            )
        return str(row[0]) if row else None

    def replace_session(self, session_id: str, state: ProjectState, history: list[HistoryEntry]) -> None:
        now = time.time()
        with self._write_txn() as conn:
            conn.execute("DELETE FROM history WHERE session_id = ?", (session_id,))
            conn.executemany(
                "INSERT INTO history(session_id, version, entry) VALUES (?, ?, ?)",
                [(session_id, e.version, e.model_dump_json()) for e in history],
            )
            conn.execute(
                "INSERT INTO states(session_id, version, state, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(session_id) DO UPDATE SET version=excluded.version, state=excluded.state, "
                "updated_at=excluded.updated_at",
                (session_id, state.meta.version, state.model_dump_json(), now),
            )
            conn.execute(
                "INSERT INTO changes(session_id, version, kind, at) VALUES (?, ?, 'state', ?)",
                (session_id, state.meta.version, now),
            )

    # ---- observations -----------------------------------------------------------------------
    def put_observations(self, session_id: str, observations: list[Observation]) -> None:
        now = time.time()
        with self._write_txn() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO observations(session_id, tool_use_id, observation, created_at) "
                "VALUES (?, ?, ?, ?)",
                [(session_id, o.tool_use_id, o.model_dump_json(), now) for o in observations],
            )

    def get_observations(self, session_id: str, tool_use_ids: list[str]) -> dict[str, Observation]:
        found: dict[str, Observation] = {}
        for start in range(0, len(tool_use_ids), 500):  # stay under SQLite's variable limit
            chunk = tool_use_ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            query = (
                "SELECT tool_use_id, observation FROM observations "
                f"WHERE session_id = ? AND tool_use_id IN ({marks})"
            )
            params = (session_id, *chunk)
            with self._lock:
                rows: list[Any] = self._guard(lambda: self._conn.execute(query, params).fetchall())  # noqa: B023
            for tool_use_id, raw in rows:
                parsed = parse_observation(raw)
                if parsed is not None:
                    found[str(tool_use_id)] = parsed
        return found

    def all_observations(self, session_id: str) -> dict[str, Observation]:
        with self._lock:
            rows: list[Any] = self._guard(
                lambda: self._conn.execute(
                    "SELECT tool_use_id, observation FROM observations WHERE session_id = ?", (session_id,)
                ).fetchall()
            )
        return {str(t): o for t, raw in rows if (o := parse_observation(raw)) is not None}

    def observation_sessions(self) -> list[str]:
        with self._lock:
            rows = self._guard(
                lambda: self._conn.execute(
                    "SELECT DISTINCT session_id FROM observations ORDER BY session_id"
                ).fetchall()
            )
        return [str(r[0]) for r in rows]

    # ---- change feed ------------------------------------------------------------------------
    def subscribe(self, callback: ChangeCallback, session_id: str | None = None) -> _Poller:
        poller = _Poller(self, callback, session_id)
        with self._lock:
            self._subscriptions.append(poller)
        poller.start()
        return poller

    def sessions(self) -> list[str]:
        with self._lock:
            rows = self._guard(
                lambda: self._conn.execute("SELECT session_id FROM states ORDER BY session_id").fetchall()
            )
        return [str(r[0]) for r in rows]

    def close(self) -> None:
        with self._lock:
            subs, self._subscriptions = self._subscriptions, []
        for sub in subs:
            sub.close()
        with self._lock:
            self._conn.close()


class _Poller:
    """Background reader delivering rows of ``changes`` newer than the last one it saw."""

    def __init__(self, store: SQLiteStore, callback: ChangeCallback, session_id: str | None) -> None:
        self._store = store
        self._callback = callback
        self._session_id = session_id
        self._stop = threading.Event()
        self._conn = store._connect()
        row = self._conn.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()
        self._last_seq = int(row[0])
        self._thread = threading.Thread(target=self._run, name="ic-sqlite-feed", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        data_version = None
        while not self._stop.wait(POLL_SECONDS):
            try:
                current = self._conn.execute("PRAGMA data_version").fetchone()[0]
                if current == data_version:
                    continue
                data_version = current
                self._deliver()
            except sqlite3.Error:
                log.warning("change feed poll failed; retrying", exc_info=True)

    def _deliver(self) -> None:
        rows = self._conn.execute(
            "SELECT seq, session_id, version, kind, at FROM changes WHERE seq > ? ORDER BY seq",
            (self._last_seq,),
        ).fetchall()
        for seq, session_id, version, kind, at in rows:
            self._last_seq = seq
            if self._session_id is None or session_id == self._session_id:
                try:
                    self._callback(Change(session_id, int(version), kind, float(at)))
                except Exception:
                    log.exception("change feed callback failed")

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=2)
        self._conn.close()
