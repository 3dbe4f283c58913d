"""The SQLite memory part: items in ``memory_items``, search in the FTS5 table ``memory_fts``
(its rowid is the item's ``rid``, so an update replaces exactly one index row).

FTS5's bm25 (k1 1.2, b 0.75; the tag column weighted 5x) takes its statistics (document count,
average length) over the whole table, i.e. over every session in the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..memory.model import MemoryItem
from .parts import IndexedItem, IndexTerms
from .sqlite_db import SQLiteDB

#: ids per lookup, under SQLite's limit on bound variables
CHUNK = 500


def _parse(raw: str) -> MemoryItem | None:
    try:
        return MemoryItem.model_validate_json(raw)
    except ValueError:
        return None


class SQLiteMemory:
    def __init__(self, db: SQLiteDB) -> None:
        self.db = db

    def memory_put(self, session_id: str, items: list[IndexedItem]) -> None:
        with self.db.write_txn() as conn:
            for item, terms in items:
                row = conn.execute(
                    "SELECT rid FROM memory_items WHERE session_id = ? AND id = ?", (session_id, item.id)
                ).fetchone()
                values = (
                    item.model_dump_json(),
                    int(item.archived),
                    int(item.pinned),
                    item.tokens,
                    item.created_at.timestamp(),
                )
                if row is None:
                    rid = conn.execute(
                        "INSERT INTO memory_items"
                        "(session_id, id, item, archived, pinned, tokens, created_at) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (session_id, item.id, *values),
                    ).lastrowid
                else:
                    rid = row[0]
                    conn.execute(
                        "UPDATE memory_items SET item = ?, archived = ?, pinned = ?, tokens = ?, "
                        "created_at = ? WHERE rid = ?",
                        (*values, rid),
                    )
                    conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (rid,))
                conn.execute(
                    "INSERT INTO memory_fts(rowid, body, tags) VALUES (?, ?, ?)",
                    (rid, " ".join(terms.body), " ".join(terms.tags)),
                )

    def memory_update(self, session_id: str, items: list[MemoryItem]) -> None:
        with self.db.write_txn() as conn:
            conn.executemany(
                "UPDATE memory_items SET item = ?, archived = ?, pinned = ?, tokens = ? "
                "WHERE session_id = ? AND id = ?",
                [
                    (i.model_dump_json(), int(i.archived), int(i.pinned), i.tokens, session_id, i.id)
                    for i in items
                ],
            )

    def memory_touch(self, session_id: str, items: list[MemoryItem]) -> None:
        with self.db.write_txn() as conn:
            conn.executemany(
                "UPDATE memory_items SET item = ? WHERE session_id = ? AND id = ?",
                [(item.model_dump_json(), session_id, item.id) for item in items],
            )

    def memory_get(self, session_id: str, ids: list[str]) -> dict[str, MemoryItem]:
        found: dict[str, MemoryItem] = {}
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            marks = ",".join("?" * len(chunk))
            for (raw,) in self.db.rows(
                f"SELECT item FROM memory_items WHERE session_id = ? AND id IN ({marks})",
                (session_id, *chunk),
            ):
                item = _parse(raw)
                if item is not None:
                    found[item.id] = item
        return found

    def _items(self, sql: str, params: tuple[Any, ...]) -> Iterator[MemoryItem]:
        for (raw,) in self.db.rows(sql, params):
            item = _parse(raw)
            if item is not None:
                yield item

    def memory_all(self, session_id: str, archived: bool | None = False) -> list[MemoryItem]:
        if archived is None:
            return list(self._items("SELECT item FROM memory_items WHERE session_id = ?", (session_id,)))
        return list(
            self._items(
                "SELECT item FROM memory_items WHERE session_id = ? AND archived = ?",
                (session_id, int(archived)),
            )
        )

    def memory_page(self, session_id: str, archived: bool, offset: int, limit: int) -> list[MemoryItem]:
        return list(
            self._items(
                "SELECT item FROM memory_items WHERE session_id = ? AND archived = ? "
                "ORDER BY created_at DESC, rid DESC LIMIT ? OFFSET ?",
                (session_id, int(archived), limit, offset),
            )
        )

    def memory_delete(self, session_id: str, ids: list[str]) -> int:
        deleted = 0
        with self.db.write_txn() as conn:
            for item_id in ids:
                row = conn.execute(
                    "SELECT rid FROM memory_items WHERE session_id = ? AND id = ?", (session_id, item_id)
                ).fetchone()
                if row is not None:
                    conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (row[0],))
                    conn.execute("DELETE FROM memory_items WHERE rid = ?", (row[0],))
                    deleted += 1
        return deleted

    def memory_search(
        self, session_id: str, terms: list[str], limit: int, archived: bool
    ) -> list[tuple[str, float]]:
        unique = list(dict.fromkeys(t for t in terms if t))
        if not unique:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in unique)
        # bm25() is lower-is-better and negative; weights per column: body 1, tags 5.
        rows = self.db.rows(
            "SELECT m.id, -bm25(memory_fts, 1.0, 5.0) AS score FROM memory_fts "
            "JOIN memory_items m ON m.rid = memory_fts.rowid "
            "WHERE memory_fts MATCH ? AND m.session_id = ? AND m.archived = ? "
            "ORDER BY score DESC LIMIT ?",
            (match, session_id, int(archived), limit),
        )
        return [(str(item_id), float(score)) for item_id, score in rows]

    def memory_usage(self, session_id: str) -> tuple[int, int, int, int]:
        rows = self.db.rows(
            "SELECT COALESCE(SUM(CASE WHEN archived = 0 THEN tokens END), 0), "
            "COUNT(CASE WHEN archived = 0 THEN 1 END), "
            "COUNT(CASE WHEN archived = 0 AND pinned = 1 THEN 1 END), "
            "COUNT(CASE WHEN archived = 1 THEN 1 END) FROM memory_items WHERE session_id = ?",
            (session_id,),
        )
        tokens, live, pinned, archived = rows[0]
        return int(tokens), int(live), int(pinned), int(archived)

    def memory_export(self, session_id: str) -> list[IndexedItem]:
        rows = self.db.rows(
            "SELECT m.item, f.body, f.tags FROM memory_items m "
            "LEFT JOIN memory_fts f ON f.rowid = m.rid WHERE m.session_id = ? ORDER BY m.rid",
            (session_id,),
        )
        exported = []
        for raw, body, tags in rows:
            item = _parse(raw)
            if item is not None:
                terms = IndexTerms(tuple((body or "").split()), tuple((tags or "").split()))
                exported.append(IndexedItem(item, terms))
        return exported

    def memory_sessions(self) -> list[str]:
        rows = self.db.rows(
            "SELECT session_id FROM memory_items UNION SELECT session_id FROM memory_config ORDER BY 1", ()
        )
        return [str(r[0]) for r in rows]

    def memory_config(self, session_id: str) -> dict[str, Any] | None:
        rows = self.db.rows("SELECT config FROM memory_config WHERE session_id = ?", (session_id,))
        if not rows:
            return None
        try:
            data = json.loads(rows[0][0])
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def memory_set_config(self, session_id: str, config: dict[str, Any]) -> None:
        with self.db.write_txn() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO memory_config(session_id, config) VALUES (?, ?)",
                (session_id, json.dumps(config)),
            )
