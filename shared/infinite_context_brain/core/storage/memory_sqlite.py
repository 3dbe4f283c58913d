"""The SQLite memory part: items in ``memory_items``, one inverted index per session in
``memory_postings``, running totals in ``memory_sessions`` (schema: sqlite_memory_schema.py).
BM25 is computed by storage/search.py from this session's statistics only, exactly as on Redis.

Usage (``memory_usage``) is one row kept by triggers in the same transaction as each write;
buffered access times go into the next write's own transaction (one transaction per store);
``memory_ranked`` walks the ``rank`` and ``accessed_at`` indexes for ``recall``; access
bookkeeping is buffered (touches.py) and written as two columns, never as the item's JSON.

Deferred index writes (schema 5): a ``store`` commits the item's row with its terms in it, and
its postings (~40 rows, most of the pages a store wrote) follow in a batch at ``memory_settle``
(the MCP server when idle after a reply, a background thread a second later, ``close``, and any
read of the index first); archiving marks the item, and its postings' ``archived`` flags follow
the same way. Durability is SQLite's in WAL mode with ``synchronous=NORMAL`` (sqlite_db.py):
a committed store survives a process crash, and a crash before settling leaves the terms in the
row for the next open.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from ..memory.model import MemoryItem, rank_key
from . import search
from .parts import IndexedItem, IndexTerms, PutOutcome, Usage, stored_config
from .sqlite_db import SQLiteDB
from .touches import TouchBuffer, micros, parse_item

log = logging.getLogger(__name__)
#: ids per lookup, under SQLite's limit on bound variables
CHUNK = 500
#: a cached document frequency is counted again once the session's item count moved this much
DF_DRIFT = 0.02
DF_CACHE = 10_000
CACHE_KIB = 32 * 1024
#: items stored without postings by this process after which a store writes them itself
SETTLE_AT = 64
#: items per transaction of ``memory_settle`` (~1-2 ms each: what a request may wait for)
SETTLE_CHUNK = 16
#: archived items per transaction whose postings' flags ``memory_settle`` sets: a flag costs
#: little, the pages it dirties much (each commit writes them to the WAL, and the postings of
#: consecutive items share pages), so 32 per transaction set 948 items' flags with ~0.6x the
#: CPU of 16 (measured on the benchmark's file), ~3 ms a transaction
FLAG_CHUNK = 32
#: seconds after a deferring write before a background thread settles (touches.py waits as long)
SETTLE_DELAY = 1.0
#: the background thread settles only once this process has not written (or read every item)
#: for this many seconds: it gives way to work in progress (a bulk store, the scoring of a
#: compaction between its read and its write), as the MCP server's idle settle gives way to a
#: request; a busy process settles a second later, or at ``close``, and reads never wait for it
QUIET = 0.25
#: items whose postings are not written yet (partial index memory_items_pending)
_PENDING = "pending_terms IS NOT NULL"
#: items archived since their postings' flags were written (partial index memory_items_stale)
_STALE = "postings_archived <> archived"
_ITEM = "SELECT item, accessed_at, access_count FROM memory_items"
#: items from which ``memory_update`` writes through a temporary table in one statement
UPDATE_BATCH = 32
#: the new values of ``memory_update``'s items (this connection's own, emptied after each use)
_CHANGES_TABLE = (
    "CREATE TEMP TABLE IF NOT EXISTS memory_changes (id TEXT PRIMARY KEY, item TEXT NOT NULL, "
    "archived INTEGER NOT NULL, pinned INTEGER NOT NULL, tokens INTEGER NOT NULL, rank REAL NOT NULL)"
)
#: what a put leaves for auto-compaction to check (PutOutcome), read in the put's own transaction
#: instead of two reads after it
_AFTER_PUT = (
    "SELECT tokens, live, pinned, archived, "
    "(SELECT config FROM memory_config WHERE session_id = ?) FROM memory_sessions WHERE sno = ?"
)


_UPSERT = (
    "INSERT INTO memory_items(session_id, id, item, archived, pinned, tokens, created_at, dl, rank, "
    "content_type, accessed_at, access_count, pending_terms, postings_archived) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT(session_id, id) DO UPDATE SET item = excluded.item, archived = excluded.archived, "
    "pinned = excluded.pinned, tokens = excluded.tokens, created_at = excluded.created_at, "
    "dl = excluded.dl, rank = excluded.rank, content_type = excluded.content_type, "
    "accessed_at = excluded.accessed_at, access_count = excluded.access_count, "
    "pending_terms = excluded.pending_terms, postings_archived = excluded.postings_archived"
)


def _postings(
    sno: int, rid: int, archived: int, body: Counter[str], tags: Counter[str]
) -> Iterator[tuple[int, str, int, int, int, int]]:
    return ((sno, t, rid, archived, body.get(t, 0), tags.get(t, 0)) for t in body.keys() | tags)


def _insert_postings(conn: sqlite3.Connection, postings: list[tuple[int, str, int, int, int, int]]) -> None:
    conn.executemany(
        "INSERT INTO memory_postings(sno, term, rid, archived, body_tf, tag_tf) VALUES (?, ?, ?, ?, ?, ?)",
        postings,
    )


class _Postings:
    """One session's index as storage/search.py reads it."""

    def __init__(self, memory: SQLiteMemory, session_id: str, sno: int) -> None:
        self.db, self.memory, self.session_id, self.sno = memory.db, memory, session_id, sno

    def statistics(self, terms: list[str]) -> tuple[int, int, dict[str, int]]:
        docs, length = self.db.row("SELECT docs, length FROM memory_sessions WHERE sno = ?", (self.sno,))
        frequency = self.memory.document_frequency
        return int(docs), int(length), {t: frequency(self.sno, t, int(docs)) for t in terms}

    def postings(self, caps: dict[str, int | None], archived: bool) -> dict[str, list[search.Posting]]:
        found: dict[str, list[search.Posting]] = {}
        for term, cap in caps.items():
            rows = self.db.rows(  # a live search drops archived items' postings before the join
                "SELECT m.id, p.body_tf, p.tag_tf, m.dl FROM "
                "(SELECT rid, body_tf, tag_tf, archived FROM memory_postings WHERE sno = ? AND term = ? "
                "ORDER BY rid DESC LIMIT ?) p JOIN memory_items m ON m.rid = p.rid "
                "WHERE p.archived <= ? AND m.archived = ?",
                (self.sno, term, -1 if cap is None else cap, int(archived), int(archived)),
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
        self.touches = TouchBuffer(self._write_touches)
        self._timer: threading.Timer | None = None
        self._timer_lock = threading.Lock()
        self._numbers: dict[str, int] = {}
        #: (session number, term) -> (df, the session's item count when counted)
        self._frequencies: dict[tuple[int, str], tuple[int, int]] = {}
        #: items this process stored without their postings since its last settle (an upper bound)
        self._unsettled = 0
        #: when this process last wrote or read every item (``time.monotonic``): see ``QUIET``
        self._last_use = 0.0
        self._index_ready()  # what a process that died before settling left (usually nothing)

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
    def memory_put(self, session_id: str, items: list[IndexedItem]) -> PutOutcome | None:
        """One upsert per item. A few items (a ``store``) keep their terms in ``pending_terms``
        until ``memory_settle`` writes their postings (~40 rows, most of a store's pages) in a
        batch: the item, its length and the session's totals are committed here, so nothing
        stored is lost or unseen by get/list/recall, and every read of the index writes them
        first. Once ``SETTLE_AT`` items wait (a bulk store, or stores with no pause), this
        transaction writes every posting itself. A replaced item keeps its rid."""
        self._used()
        touched = self.touches.pending()  # written first, in this same transaction
        direct = self._unsettled + len(items) >= SETTLE_AT
        with self.db.write_txn() as conn:
            for touched_session, touched_items in touched.items():
                self._touch_rows(conn, touched_session, touched_items)
            sno = self._sno(session_id, conn)
            assert sno is not None  # created with conn when missing
            rows = [
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
                    None if direct else f"{' '.join(terms.body)}\n{' '.join(terms.tags)}",
                    int(item.archived),
                )
                for item, terms in items
            ]
            if not direct:
                conn.executemany(_UPSERT, rows)
                self._unsettled += len(items)
                self._settle_later()
            else:
                self._settle_pending(conn, None)  # the earlier ones first
                ids = [item.id for item, _ in items]
                # replaced items: their old postings go (one read, not a probe each)
                existing: set[int] = set()
                for start in range(0, len(ids), CHUNK):
                    chunk = ids[start : start + CHUNK]
                    marks = ",".join("?" * len(chunk))
                    existing.update(
                        r[0]
                        for r in conn.execute(
                            f"SELECT rid FROM memory_items WHERE session_id = ? AND id IN ({marks})",
                            (session_id, *chunk),
                        )
                    )
                conn.executemany("DELETE FROM memory_postings WHERE rid = ?", [(r,) for r in existing])
                by_rid: dict[int, list[tuple[int, str, int, int, int, int]]] = {}
                for row, (item, terms) in zip(rows, items, strict=True):
                    rid = conn.execute(_UPSERT + " RETURNING rid", row).fetchone()[0]
                    by_rid[rid] = list(  # an id given twice: its last version, as the row
                        _postings(sno, rid, int(item.archived), Counter(terms.body), Counter(terms.tags))
                    )
                _insert_postings(conn, [p for found in by_rid.values() for p in found])
            left = conn.execute(_AFTER_PUT, (session_id, sno)).fetchone()
        self.touches.written(touched)
        tokens, live, pinned, archived, config = left
        return PutOutcome((int(tokens), int(live), int(pinned), int(archived)), stored_config(config))

    def memory_settle(self, until: Callable[[], bool] | None = None) -> None:
        """Every deferred posting write: the postings of items stored without them (by any
        process, or before a crash), then the archived flag on the postings of items archived
        since. In transactions of ``SETTLE_CHUNK`` (flags: ``FLAG_CHUNK``) items; when another
        thread waits for the connection (a request: the MCP server settles in a worker thread
        when idle), it stops after the current one and leaves the rest to the background
        thread, which settles ``SETTLE_DELAY`` seconds after a deferring write (any adapter: the
        LSP, a notebook) once this process is ``QUIET``. Nothing depends on when: a read of the
        index writes pending postings first, and a posting's archived flag only lets a live
        search skip it (flagged live, it is checked against its item). ``close`` settles too."""
        while self._settle_chunk(_PENDING, self._settle_pending, SETTLE_CHUNK) or self._settle_chunk(
            _STALE, self._settle_flags, FLAG_CHUNK
        ):
            # a request wants the connection, or (``until``) has come in: it goes first, the rest later
            if self.db.waiting or (until is not None and until()):
                self._settle_later()
                return

    def _settle_later(self) -> None:
        """At most one timer at a time, never cancelled: starting a thread on every store (the
        MCP server settles after each) would cost more than a read that finds nothing."""
        with self._timer_lock:
            if self._timer is None:
                self._timer = threading.Timer(SETTLE_DELAY, self._settle_in_background)
                self._timer.daemon = True
                self._timer.start()

    def _used(self) -> None:
        self._last_use = time.monotonic()

    def _busy(self) -> bool:
        return time.monotonic() - self._last_use < QUIET

    def _settle_in_background(self) -> None:
        with self._timer_lock:
            self._timer = None  # a write from now on schedules the next one
        try:
            if self._busy():  # work in progress goes first: try again later
                self._settle_later()
            elif not self.db.closed:
                self.memory_settle(self._busy)
        except Exception:  # kept in the rows: the next settle (a read, close, the next open) redoes it
            if self.db.closed:  # the store closed meanwhile, and settled as it closed
                return
            log.warning("could not write deferred index entries of working-memory items", exc_info=True)

    def _settle_chunk(self, where: str, settle: Callable[[sqlite3.Connection, int], int], size: int) -> bool:
        if self.db.row(f"SELECT 1 FROM memory_items WHERE {where} LIMIT 1") is None:
            return False
        with self.db.write_txn() as conn:
            settle(conn, size)
        return True

    def _index_ready(self) -> None:
        """The postings of every stored item, before a read of the index (flags not needed)."""
        if self.db.row(f"SELECT 1 FROM memory_items WHERE {_PENDING} LIMIT 1") is not None:
            with self.db.write_txn() as conn:
                self._settle_pending(conn, None)

    def _settle_pending(self, conn: sqlite3.Connection, limit: int | None) -> int:
        rows = conn.execute(
            f"SELECT rid, session_id, archived, pending_terms FROM memory_items WHERE {_PENDING} LIMIT ?",
            (-1 if limit is None else limit,),
        ).fetchall()
        postings: list[tuple[int, str, int, int, int, int]] = []
        for rid, session_id, archived, pending in rows:
            sno = self._sno(session_id, conn)
            assert sno is not None  # created with conn when missing
            body_text, _, tags_text = pending.partition("\n")
            postings.extend(
                _postings(sno, rid, archived, Counter(body_text.split()), Counter(tags_text.split()))
            )
            conn.execute("DELETE FROM memory_postings WHERE rid = ?", (rid,))  # a replaced item's
        _insert_postings(conn, postings)
        conn.executemany(
            "UPDATE memory_items SET pending_terms = NULL, postings_archived = archived WHERE rid = ?",
            [(r[0],) for r in rows],
        )
        if limit is None or len(rows) < limit:
            self._unsettled = 0
        return len(rows)

    def _settle_flags(self, conn: sqlite3.Connection, limit: int) -> int:
        """Set the archived flag on the postings of up to ``limit`` (<= ``CHUNK``) items archived
        (or restored) since: one statement per flag value, not one per item (less CPU for the
        same rows)."""
        rows = conn.execute(
            f"SELECT rid, archived FROM memory_items WHERE {_STALE} LIMIT ?", (limit,)
        ).fetchall()
        if not rows:  # another process settled them since the caller looked
            return 0
        for flag in sorted({a for _, a in rows}):
            rids = [r for r, a in rows if a == flag]
            marks = ",".join("?" * len(rids))
            conn.execute(f"UPDATE memory_postings SET archived = ? WHERE rid IN ({marks})", (flag, *rids))
        marks = ",".join("?" * len(rows))
        conn.execute(
            f"UPDATE memory_items SET postings_archived = archived WHERE rid IN ({marks})",
            [r for r, _ in rows],
        )
        return len(rows)

    def memory_update(self, session_id: str, items: list[MemoryItem]) -> None:
        """Rewrite items in place (their postings stay). Many items (a compaction archiving
        hundreds) go through a temporary table and one ``UPDATE``: updating 948 rows so took
        ~13 ms of SQL against ~23 for 948 executions of a one-row statement (measured side by
        side on the benchmark's file)."""
        self._used()
        rows = [
            (i.id, i.model_dump_json(), int(i.archived), int(i.pinned), i.tokens, rank_key(i)) for i in items
        ]
        with self.db.write_txn() as conn:
            if len(rows) < UPDATE_BATCH:
                conn.executemany(
                    "UPDATE memory_items SET item = ?, archived = ?, pinned = ?, tokens = ?, rank = ? "
                    "WHERE session_id = ? AND id = ?",
                    [(*row[1:], session_id, row[0]) for row in rows],
                )
            else:
                conn.execute(_CHANGES_TABLE)
                # an id given twice: its last version, as the one-row statements would leave it
                conn.executemany("INSERT OR REPLACE INTO temp.memory_changes VALUES (?, ?, ?, ?, ?, ?)", rows)
                conn.execute(  # found by (session, id), so it costs the items changed, not the session
                    "UPDATE memory_items SET (item, archived, pinned, tokens, rank) = "
                    "(SELECT item, archived, pinned, tokens, rank FROM temp.memory_changes c "
                    "WHERE c.id = memory_items.id) "
                    "WHERE session_id = ? AND id IN (SELECT id FROM temp.memory_changes)",
                    (session_id,),
                )
                conn.execute("DELETE FROM temp.memory_changes")
        if any(i.archived for i in items):  # their postings' flags: stale until settled
            self._settle_later()

    def memory_touch(self, session_id: str, items: list[MemoryItem]) -> None:
        self.touches.add(session_id, items)

    def _write_touches(self, session_id: str, items: list[MemoryItem]) -> None:
        with self.db.write_txn() as conn:
            self._touch_rows(conn, session_id, items)

    @staticmethod
    def _touch_rows(conn: sqlite3.Connection, session_id: str, items: list[MemoryItem]) -> None:
        conn.executemany(
            "UPDATE memory_items SET accessed_at = MAX(accessed_at, ?), "
            "access_count = MAX(access_count, ?), rank = ? WHERE session_id = ? AND id = ?",
            [(micros(i.accessed_at), i.access_count, rank_key(i), session_id, i.id) for i in items],
        )

    def memory_delete(self, session_id: str, ids: list[str]) -> int:
        self._used()
        self.touches.forget(session_id, ids)
        touched = self.touches.pending()
        deleted = 0
        with self.db.write_txn() as conn:
            for touched_session, touched_items in touched.items():
                self._touch_rows(conn, touched_session, touched_items)
            for item_id in ids:  # an item still pending has no postings yet: its row is all
                row = conn.execute(
                    "DELETE FROM memory_items WHERE session_id = ? AND id = ? RETURNING rid",
                    (session_id, item_id),
                ).fetchone()
                if row is not None:
                    conn.execute("DELETE FROM memory_postings WHERE rid = ?", (row[0],))
                    deleted += 1
        self.touches.written(touched)
        return deleted

    # ---- reads --------------------------------------------------------------------------------
    def _items(self, session_id: str, sql: str, params: tuple[Any, ...]) -> Iterator[MemoryItem]:
        found = [
            item
            for raw, accessed, count in self.db.rows(sql, params)
            if (item := parse_item(raw, accessed, count))
        ]
        self.touches.overlay(session_id, found)
        return iter(found)

    def memory_get(self, session_id: str, ids: list[str]) -> dict[str, MemoryItem]:
        found: dict[str, MemoryItem] = {}
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            marks = ",".join("?" * len(chunk))
            for item in self._items(
                session_id, f"{_ITEM} WHERE session_id = ? AND id IN ({marks})", (session_id, *chunk)
            ):
                found[item.id] = item
        return found

    def memory_all(self, session_id: str, archived: bool | None = False) -> list[MemoryItem]:
        self._used()  # a compaction reads every live item, scores them, then writes
        if archived is None:
            return list(self._items(session_id, f"{_ITEM} WHERE session_id = ?", (session_id,)))
        return list(
            self._items(
                session_id, f"{_ITEM} WHERE session_id = ? AND archived = ?", (session_id, int(archived))
            )
        )

    def memory_page(self, session_id: str, archived: bool, offset: int, limit: int) -> list[MemoryItem]:
        return list(
            self._items(
                session_id,
                f"{_ITEM} WHERE session_id = ? AND archived = ? "
                "ORDER BY created_at DESC, rid DESC LIMIT ? OFFSET ?",
                (session_id, int(archived), limit, offset),
            )
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
        found = []
        for raw, accessed, count, key in self.db.rows(sql, params):
            item = parse_item(raw, accessed, count)
            if item is not None:
                found.append((item, float(key)))
        self.touches.overlay(session_id, (i for i, _ in found))
        return found

    def memory_search(
        self, session_id: str, terms: list[str], limit: int, archived: bool
    ) -> list[tuple[str, float]]:
        self._index_ready()  # an item stored a moment ago is found
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
        self._index_ready()  # every item with its terms
        items = {
            rid: item
            for rid, raw, accessed, count in self.db.rows(
                "SELECT rid, item, accessed_at, access_count FROM memory_items "
                "WHERE session_id = ? ORDER BY rid",
                (session_id,),
            )
            if (item := parse_item(raw, accessed, count)) is not None
        }
        self.touches.overlay(session_id, items.values())
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

    def memory_flush(self) -> None:
        self.touches.flush()
