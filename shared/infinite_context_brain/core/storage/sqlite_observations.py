"""The SQLite observation part: one ``observations`` row per (session, tool_use_id)."""

from __future__ import annotations

import time

from ..models import Observation
from .sqlite_db import SQLiteDB
from .states import parse_observation

#: ids per lookup, under SQLite's limit on bound variables
CHUNK = 500


class SQLiteObservations:
    def __init__(self, db: SQLiteDB) -> None:
        self.db = db

    def put_observations(self, session_id: str, observations: list[Observation]) -> None:
        now = time.time()
        with self.db.write_txn() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO observations(session_id, tool_use_id, observation, created_at) "
                "VALUES (?, ?, ?, ?)",
                [(session_id, o.tool_use_id, o.model_dump_json(), now) for o in observations],
            )

    def put_observation(self, session_id: str, observation: Observation) -> None:
        self.put_observations(session_id, [observation])

    def get_observations(self, session_id: str, tool_use_ids: list[str]) -> dict[str, Observation]:
        found: dict[str, Observation] = {}
        for start in range(0, len(tool_use_ids), CHUNK):
            chunk = tool_use_ids[start : start + CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self.db.rows(
                "SELECT tool_use_id, observation FROM observations "
                f"WHERE session_id = ? AND tool_use_id IN ({marks})",
                (session_id, *chunk),
            )
            for tool_use_id, raw in rows:
                parsed = parse_observation(raw)
                if parsed is not None:
                    found[str(tool_use_id)] = parsed
        return found

    def all_observations(self, session_id: str) -> dict[str, Observation]:
        rows = self.db.rows(
            "SELECT tool_use_id, observation FROM observations WHERE session_id = ?", (session_id,)
        )
        return {str(t): o for t, raw in rows if (o := parse_observation(raw)) is not None}

    def observation_sessions(self) -> list[str]:
        rows = self.db.rows("SELECT DISTINCT session_id FROM observations ORDER BY session_id")
        return [str(r[0]) for r in rows]
