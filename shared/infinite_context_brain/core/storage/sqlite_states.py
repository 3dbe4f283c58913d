"""The SQLite state part: ``states`` (one row per session), ``history`` (bounded per session),
``locks`` (advisory, with an expiry) and a ``changes`` row per write for the change feed, all in
the same transaction as the state they describe."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime

from ..models import HistoryEntry, LockInfo, ProjectState
from .sqlite_db import SQLiteDB
from .states import CasStates, parse_entry

CHANGES_KEPT = 1000


class SQLiteStates(CasStates):
    def __init__(self, db: SQLiteDB, *, history_size: int = 5, cas_attempts: int = 3) -> None:
        super().__init__(history_size=history_size, cas_attempts=cas_attempts)
        self.db = db

    # ---- compare-and-set primitives ---------------------------------------------------------
    def _read(self, session_id: str) -> tuple[int, bytes | None]:
        row = self.db.row("SELECT version, state FROM states WHERE session_id = ?", (session_id,))
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
        with self.db.write_txn() as conn:
            row = conn.execute("SELECT version FROM states WHERE session_id = ?", (session_id,)).fetchone()
            if (int(row[0]) if row else 0) != expected_version:
                return False
            self._store(conn, session_id, entry)
            return True

    def _update_exclusive(
        self, session_id: str, build: Callable[[int, bytes | None], HistoryEntry]
    ) -> HistoryEntry:
        with self.db.write_txn() as conn:
            row = conn.execute(
                "SELECT version, state FROM states WHERE session_id = ?", (session_id,)
            ).fetchone()
            version, raw = (int(row[0]), row[1].encode()) if row else (0, None)
            entry = build(version, raw)
            self._store(conn, session_id, entry)
            return entry

    # ---- history ----------------------------------------------------------------------------
    def history(self, session_id: str, limit: int | None = None) -> list[HistoryEntry]:
        rows = self.db.rows(
            "SELECT entry FROM history WHERE session_id = ? ORDER BY version DESC LIMIT ?",
            (session_id, limit if limit is not None else -1),
        )
        entries = (parse_entry(r[0], session_id=session_id) for r in rows)
        return [e for e in entries if e is not None]

    def history_entry(self, session_id: str, version: int) -> HistoryEntry | None:
        row = self.db.row(
            "SELECT entry FROM history WHERE session_id = ? AND version = ?", (session_id, version)
        )
        return parse_entry(row[0], session_id=session_id) if row else None

    def replace_session(self, session_id: str, state: ProjectState, history: list[HistoryEntry]) -> None:
        now = time.time()
        with self.db.write_txn() as conn:
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

    def sessions(self) -> list[str]:
        return [str(r[0]) for r in self.db.rows("SELECT session_id FROM states ORDER BY session_id")]

    # ---- advisory lock ----------------------------------------------------------------------
    def acquire_lock(self, session_id: str, owner: str, ttl_seconds: float) -> LockInfo:
        now = time.time()
        with self.db.write_txn() as conn:
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
        with self.db.write_txn() as conn:
            cur = conn.execute("DELETE FROM locks WHERE session_id = ? AND owner = ?", (session_id, owner))
            return cur.rowcount > 0

    def lock_holder(self, session_id: str) -> str | None:
        row = self.db.row(
            "SELECT owner FROM locks WHERE session_id = ? AND expires_at > ?", (session_id, time.time())
        )
        return str(row[0]) if row else None
