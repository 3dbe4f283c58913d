"""The SQLite memory part: items in ``memory_items``, one inverted index per session in
``memory_postings``, running totals in ``memory_sessions`` (schema: sqlite_memory_schema.py).
BM25 is computed by storage/search.py from this session's statistics only, exactly as on Redis.

Every write is one transaction: an item, its postings and the session's totals (kept by
triggers) commit together, so a read never misses a stored item and a crash never leaves an item
without its index. Usage (``memory_usage``) is one row; ``memory_ranked`` walks the ``rank`` and
``accessed_at`` indexes for ``recall``; access bookkeeping writes two columns, never the item's
JSON. Durability is SQLite's in WAL mode with ``synchronous=NORMAL`` (sqlite_db.py): a committed
write survives a process crash.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from typing import Any

from ..memory.model import MemoryItem, rank_key
from . import search
from .access import micros, parse_item
from .parts import IndexedItem, IndexTerms, PutOutcome, Usage, stored_config
from .sqlite_db import SQLiteDB

#: ids per lookup, under SQLite's limit on bound variables
CHUNK = 500
#: a cached document frequency is counted again once the session's item count moved this much
DF_DRIFT = 0.02
DF_CACHE = 10_000
CACHE_KIB = 32 * 1024
_ITEM = "SELECT item, accessed_at, access_count FROM memory_items"
_UPSERT = (
    "INSERT INTO memory_items(session_id, id, item, archived, pinned, tokens, created_at, dl, rank, "
    "content_type, accessed_at, access_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT(session_id, id) DO UPDATE SET item = excluded.item, archived = excluded.archived, "
    "pinned = excluded.pinned, tokens = excluded.tokens, created_at = excluded.created_at, "
    "dl = excluded.dl, rank = excluded.rank, content_type = excluded.content_type, "
    "accessed_at = excluded.accessed_at, access_count = excluded.access_count RETURNING rid"
)
#: what a put leaves for auto-compaction to check (PutOutcome), read in the put's own transaction
_AFTER_PUT = (
    "SELECT tokens, live, pinned, archived, "
    "(SELECT config FROM memory_config WHERE session_id = ?) FROM memory_sessions WHERE sno = ?"
)


class _Postings:
    """One session's index as storage/search.py reads it."""

    def __init__(self, memory: SQLiteMemory, session_id: str, sno: int) -> None:
        self.db, self.memory, self.session_id, self.sno = memory.db, memory, session_id, sno

    def statistics(self, terms: list[str]) -> tuple[int, int, dict[str, int]]:
        docs, length = self.db.row("SELECT docs, length FROM memory_sessions WHERE sno = ?", (self.sno,))
        frequency = self.memory.document_frequency
        return int(docs), int(length), {t: frequency(self.sno, t, int(docs)) for t in terms}

    def postings(self, caps: dict[str, int | None], archived: bool | None) -> dict[str, list[search.Posting]]:
        which = "" if archived is None else f" WHERE m.archived = {int(archived)}"
        found: dict[str, list[search.Posting]] = {}
        for term, cap in caps.items():
            rows = self.db.rows(
                "SELECT m.id, p.body_tf, p.tag_tf, m.dl FROM "
                "(SELECT rid, body_tf, tag_tf FROM memory_postings WHERE sno = ? AND term = ? "
                f"ORDER BY rid DESC LIMIT ?) p JOIN memory_items m ON m.rid = p.rid{which}",
                (self.sno, term, -1 if cap is None else cap),
            )
            found[term] = [(str(i), b, t, dl) for i, b, t, dl in rows]
        return found

    def lookup(self, wanted: dict[str, list[str]]) -> dict[str, dict[str, tuple[int, int]]]:
        ids = sorted({i for found in wanted.values() for i in found})
        marks = ",".join("?" * len(ids))
        rids = dict(
            self.db.rows(
                f"SELECT id, rid FROM memory_items WHERE session_id = ? AND id IN ({marks})",
                (self.session_id, *ids),
            )
        )
        found: dict[str, dict[str, tuple[int, int]]] = {}
        for term, term_ids in wanted.items():
            by_rid = {rids[i]: i for i in term_ids if i in rids}
            marks = ",".join("?" * len(by_rid))
            rows = self.db.rows(  # primary-key lookups, not a scan of the term's postings
                "SELECT rid, body_tf, tag_tf FROM memory_postings "
                f"WHERE sno = ? AND term = ? AND rid IN ({marks})",
                (self.sno, term, *by_rid),
            )
            found[term] = {by_rid[r]: (b, t) for r, b, t in rows}
        return found


class SQLiteMemory:
    def __init__(self, db: SQLiteDB) -> None:
        self.db = db
        # Posting lists of a large memory are read term by term: keep them in SQLite's cache
        # (2 MB by default) rather than re-reading them from the OS on every query.
        db.guard(lambda: db.conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}"))
        self._numbers: dict[str, int] = {}
        #: (session number, term) -> (df, the session's item count when counted)
        self._frequencies: dict[tuple[int, str], tuple[int, int]] = {}

    def document_frequency(self, sno: int, term: str, docs: int) -> int:
        """How many of the session's items contain ``term``: counted over the term's postings
        (exact) when it is in at most ``search.FULL_READ`` items; a larger count is kept and
        reused while the session's item count stays within ``DF_DRIFT`` of what it was (its idf
        barely moves meanwhile), so a common term is not counted on every query."""
        cached = self._frequencies.get((sno, term))
        if cached is not None and abs(docs - cached[1]) <= DF_DRIFT * cached[1]:
            return cached[0]
        # Counting stops past half the items: from there on idf is at its floor (search.idf), so a
        # larger count would rank nothing differently.
        row = self.db.row(
            "SELECT COUNT(*) FROM (SELECT 1 FROM memory_postings WHERE sno = ? AND term = ? LIMIT ?)",
            (sno, term, docs // 2 + 1),
        )
        df = int(row[0])
        if df > search.FULL_READ:
            if len(self._frequencies) > DF_CACHE:
                self._frequencies.clear()
            self._frequencies[(sno, term)] = (df, docs)
        return df

    def _sno(self, session_id: str, conn: sqlite3.Connection | None = None) -> int | None:
        """The session's number in the index tables (created with ``conn``, a write)."""
        if session_id in self._numbers:
            return self._numbers[session_id]
        if conn is not None:
            conn.execute("INSERT OR IGNORE INTO memory_sessions(session_id) VALUES (?)", (session_id,))
            row = conn.execute(
                "SELECT sno FROM memory_sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
        else:
            row = self.db.row("SELECT sno FROM memory_sessions WHERE session_id = ?", (session_id,))
        if row is None:
            return None
        self._numbers[session_id] = int(row[0])
        return self._numbers[session_id]

    # ---- writes -------------------------------------------------------------------------------
    def memory_put(self, session_id: str, items: list[IndexedItem]) -> PutOutcome:
        """Each item upserted (a replaced item keeps its rid) and indexed again, in one
        transaction with the session's totals."""
        with self.db.write_txn() as conn:
            sno = self._sno(session_id, conn)
            assert sno is not None  # created with conn when missing
            for item, terms in items:
                rid = conn.execute(
                    _UPSERT,
                    (
                        session_id,
                        item.id,
                        item.model_dump_json(),
                        int(item.archived),
                        int(item.pinned),
                        item.tokens,
                        item.created_at.timestamp(),
                        len(terms.body) + len(terms.tags),
                        rank_key(item),
                        item.content_type,
                        micros(item.accessed_at),
                        item.access_count,
                    ),
                ).fetchone()[0]
                conn.execute("DELETE FROM memory_postings WHERE rid = ?", (rid,))
                body, tags = Counter(terms.body), Counter(terms.tags)
                conn.executemany(
                    "INSERT INTO memory_postings(sno, term, rid, body_tf, tag_tf) VALUES (?, ?, ?, ?, ?)",
                    [(sno, t, rid, body.get(t, 0), tags.get(t, 0)) for t in body.keys() | tags],
                )
            tokens, live, pinned, archived, config = conn.execute(_AFTER_PUT, (session_id, sno)).fetchone()
        return PutOutcome((int(tokens), int(live), int(pinned), int(archived)), stored_config(config))

    def memory_update(self, session_id: str, items: list[MemoryItem]) -> None:
        """Rewrite items in place (their postings stay: the text is unchanged)."""
        with self.db.write_txn() as conn:
            conn.executemany(
                "UPDATE memory_items SET item = ?, archived = ?, pinned = ?, tokens = ?, rank = ?, "
                "accessed_at = MAX(accessed_at, ?), access_count = MAX(access_count, ?) "
                "WHERE session_id = ? AND id = ?",
                [
                    (
                        i.model_dump_json(),
                        int(i.archived),
                        int(i.pinned),
                        i.tokens,
                        rank_key(i),
                        micros(i.accessed_at),
                        i.access_count,
                        session_id,
                        i.id,
                    )
                    for i in items
                ],
            )

    def memory_accessed(self, session_id: str, items: list[MemoryItem]) -> None:
        with self.db.write_txn() as conn:
            conn.executemany(
                "UPDATE memory_items SET accessed_at = MAX(accessed_at, ?), "
                "access_count = MAX(access_count, ?), rank = ? WHERE session_id = ? AND id = ?",
                [(micros(i.accessed_at), i.access_count, rank_key(i), session_id, i.id) for i in items],
            )

    def memory_delete(self, session_id: str, ids: list[str]) -> int:
        deleted = 0
        with self.db.write_txn() as conn:
            for item_id in ids:
                row = conn.execute(
                    "DELETE FROM memory_items WHERE session_id = ? AND id = ? RETURNING rid",
                    (session_id, item_id),
                ).fetchone()
                if row is not None:
                    conn.execute("DELETE FROM memory_postings WHERE rid = ?", (row[0],))
                    deleted += 1
        return deleted

    # ---- reads --------------------------------------------------------------------------------
    def _items(self, sql: str, params: tuple[Any, ...]) -> list[MemoryItem]:
        return [
            item
            for raw, accessed, count in self.db.rows(sql, params)
            if (item := parse_item(raw, accessed, count))
        ]

    def memory_get(self, session_id: str, ids: list[str]) -> dict[str, MemoryItem]:
        found: dict[str, MemoryItem] = {}
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            marks = ",".join("?" * len(chunk))
            for item in self._items(
                f"{_ITEM} WHERE session_id = ? AND id IN ({marks})", (session_id, *chunk)
            ):
                found[item.id] = item
        return found

    def memory_all(self, session_id: str, archived: bool | None = False) -> list[MemoryItem]:
        if archived is None:
            return self._items(f"{_ITEM} WHERE session_id = ?", (session_id,))
        return self._items(f"{_ITEM} WHERE session_id = ? AND archived = ?", (session_id, int(archived)))

    def memory_page(self, session_id: str, archived: bool, offset: int, limit: int) -> list[MemoryItem]:
        return self._items(
            f"{_ITEM} WHERE session_id = ? AND archived = ? "
            "ORDER BY created_at DESC, rid DESC LIMIT ? OFFSET ?",
            (session_id, int(archived), limit, offset),
        )

    def memory_ranked(
        self, session_id: str, order: str, offset: int, limit: int
    ) -> list[tuple[MemoryItem, float]]:
        if order == "rank":
            sql = (
                "SELECT item, accessed_at, access_count, rank FROM memory_items "
                "WHERE session_id = ? AND archived = 0 ORDER BY rank DESC, rid DESC LIMIT ? OFFSET ?"
            )
            params: tuple[Any, ...] = (session_id, limit, offset)
        else:
            sql = (
                "SELECT item, accessed_at, access_count, accessed_at FROM memory_items "
                "WHERE session_id = ? AND archived = 0 AND content_type = ? "
                "ORDER BY accessed_at DESC, rid DESC LIMIT ? OFFSET ?"
            )
            params = (session_id, order, limit, offset)
        return [
            (item, float(key))
            for raw, accessed, count, key in self.db.rows(sql, params)
            if (item := parse_item(raw, accessed, count)) is not None
        ]

    def memory_search(
        self, session_id: str, terms: list[str], limit: int, archived: bool | None
    ) -> list[tuple[str, float]]:
        sno = self._sno(session_id)
        if sno is None:
            return []
        return search.search(_Postings(self, session_id, sno), terms, limit, archived)

    def memory_usage(self, session_id: str) -> Usage:
        row = self.db.row(
            "SELECT tokens, live, pinned, archived FROM memory_sessions WHERE session_id = ?", (session_id,)
        )
        if row is None:
            return 0, 0, 0, 0
        tokens, live, pinned, archived = row
        return int(tokens), int(live), int(pinned), int(archived)

    def memory_export(self, session_id: str) -> list[IndexedItem]:
        items = {
            rid: item
            for rid, raw, accessed, count in self.db.rows(
                "SELECT rid, item, accessed_at, access_count FROM memory_items "
                "WHERE session_id = ? ORDER BY rid",
                (session_id,),
            )
            if (item := parse_item(raw, accessed, count)) is not None
        }
        body: dict[int, list[str]] = {}
        tags: dict[int, list[str]] = {}
        for rid, term, body_tf, tag_tf in self.db.rows(
            "SELECT p.rid, p.term, p.body_tf, p.tag_tf FROM memory_postings p "
            "JOIN memory_items m ON m.rid = p.rid WHERE m.session_id = ? ORDER BY p.rid, p.term",
            (session_id,),
        ):
            body.setdefault(rid, []).extend([term] * body_tf)
            tags.setdefault(rid, []).extend([term] * tag_tf)
        return [
            IndexedItem(item, IndexTerms(tuple(body.get(rid, ())), tuple(tags.get(rid, ()))))
            for rid, item in items.items()
        ]

    def memory_sessions(self) -> list[str]:
        rows = self.db.rows(
            "SELECT session_id FROM memory_items UNION SELECT session_id FROM memory_config ORDER BY 1", ()
        )
        return [str(r[0]) for r in rows]

    def memory_config(self, session_id: str) -> dict[str, Any] | None:
        rows = self.db.rows("SELECT config FROM memory_config WHERE session_id = ?", (session_id,))
        return stored_config(rows[0][0]) if rows else None

    def memory_set_config(self, session_id: str, config: dict[str, Any]) -> None:
        with self.db.write_txn() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO memory_config(session_id, config) VALUES (?, ?)",
                (session_id, json.dumps(config)),
            )
