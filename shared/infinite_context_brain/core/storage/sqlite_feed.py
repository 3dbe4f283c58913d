"""The SQLite change feed: a poller per subscription reads new rows of the ``changes`` table.

Each poller has its own connection and watches ``PRAGMA data_version``, which moves whenever any
other connection commits: another process's checkpoint reaches a subscriber within
``POLL_SECONDS``.
"""

from __future__ import annotations

import logging
import sqlite3

from .feed import FeedThread, Subscriptions
from .parts import Change, ChangeCallback
from .sqlite_db import SQLiteDB

log = logging.getLogger(__name__)

POLL_SECONDS = 0.1


class SQLiteFeed(Subscriptions["_Poller"]):
    def __init__(self, db: SQLiteDB) -> None:
        super().__init__()
        self.db = db

    def subscribe(self, callback: ChangeCallback, session_id: str | None = None) -> _Poller:
        return self._started(_Poller(self.db.connect(), callback, session_id))


class _Poller(FeedThread):
    """Background reader delivering rows of ``changes`` newer than the last one it saw."""

    def __init__(self, conn: sqlite3.Connection, callback: ChangeCallback, session_id: str | None) -> None:
        super().__init__(self._run, "ic-sqlite-feed")
        self._callback = callback
        self._session_id = session_id
        self._conn = conn
        row = self._conn.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()
        self._last_seq = int(row[0])

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
        super().close()
        self._conn.close()
