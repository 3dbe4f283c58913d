"""Embedded default store: one SQLite file (WAL, mode 0600) for every project on the machine.

The parts share one connection (sqlite_db.py): state, history and lock (sqlite_states.py), the
change feed (sqlite_feed.py: the ``changes`` table polled by a reader connection per
subscription), observations (sqlite_observations.py) and working memory (memory_sqlite.py).
"""

from __future__ import annotations

from pathlib import Path

from .identity import SQLiteIdentity
from .memory_sqlite import SQLiteMemory
from .sqlite_db import SQLiteDB
from .sqlite_feed import SQLiteFeed
from .sqlite_observations import SQLiteObservations
from .sqlite_states import SQLiteStates
from .store import Store


class SQLiteStore(Store):
    def __init__(self, path: Path, *, history_size: int = 5, cas_attempts: int = 3) -> None:
        db = SQLiteDB(path)
        self.path = db.path
        super().__init__(
            display_url=db.display_url,
            states=SQLiteStates(db, history_size=history_size, cas_attempts=cas_attempts),
            feed=SQLiteFeed(db),
            observations=SQLiteObservations(db),
            memory=SQLiteMemory(db),
            identity=SQLiteIdentity(db),
            close=db.close,
        )
