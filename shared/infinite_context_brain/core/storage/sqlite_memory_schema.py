"""Schemas 4 to 6 of the SQLite memory index: per-session postings, running totals, ranking
columns (4); postings written after the item (5); written with it again (6).

Replaces the FTS5 table (one index for every project in the file, so bm25 statistics mixed
projects) with tables keyed by a small session number:

* ``memory_sessions``: per session its running totals (live tokens, live, pinned and archived
  items; indexed items and their total length for BM25), kept by triggers on ``memory_items`` in
  the same transaction as each write, so usage is one row read, never a SUM over items;
* ``memory_postings`` (session, term, rid) -> body and tag counts (a term's document frequency
  is a count over its range, cached in memory_sqlite.py: a df table updated on every write
  doubled the pages each store writes);
* on ``memory_items``: ``dl`` (indexed length), ``rank`` (retention standing, pins first),
  ``content_type``, ``accessed_at`` (microseconds) and ``access_count`` (the authority for access bookkeeping:
  a touch rewrites two columns, never the item's JSON), with indexes for ``recall``.

``upgrade_memory_index`` creates all this and moves the existing items' terms out of the FTS5
table, keeping every item.

Schema 5 (``SPLIT_POSTINGS``) let a store commit an item before its postings
(``pending_terms``) and archiving flag the postings later (``memory_postings.archived``,
``postings_archived``). Schema 6 undoes that: an item and its postings are
written in one transaction again, so ``finish_deferred_writes`` writes the postings a schema-5
process left pending and drops the indexes and trigger that served the deferral; the columns
stay (dropping them would rewrite every posting of a large file) and nothing reads them.
"""

from __future__ import annotations

import sqlite3
from collections import Counter

SCHEMA = """
ALTER TABLE memory_items ADD COLUMN dl INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memory_items ADD COLUMN rank REAL NOT NULL DEFAULT 0;
ALTER TABLE memory_items ADD COLUMN content_type TEXT NOT NULL DEFAULT 'prose';
ALTER TABLE memory_items ADD COLUMN accessed_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memory_items ADD COLUMN access_count INTEGER NOT NULL DEFAULT 0;
CREATE INDEX memory_items_by_rank ON memory_items(session_id, archived, rank);
CREATE INDEX memory_items_by_access ON memory_items(session_id, archived, content_type, accessed_at);
CREATE TABLE memory_sessions (
    sno        INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE,
    tokens     INTEGER NOT NULL DEFAULT 0,
    live       INTEGER NOT NULL DEFAULT 0,
    pinned     INTEGER NOT NULL DEFAULT 0,
    archived   INTEGER NOT NULL DEFAULT 0,
    docs       INTEGER NOT NULL DEFAULT 0,
    length     INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE memory_postings (
    sno     INTEGER NOT NULL,
    term    TEXT NOT NULL,
    rid     INTEGER NOT NULL,
    body_tf INTEGER NOT NULL,
    tag_tf  INTEGER NOT NULL,
    PRIMARY KEY (sno, term, rid)
) WITHOUT ROWID;
CREATE INDEX memory_postings_by_item ON memory_postings(rid);
CREATE TRIGGER memory_items_added AFTER INSERT ON memory_items BEGIN
    INSERT OR IGNORE INTO memory_sessions(session_id) VALUES (NEW.session_id);
    UPDATE memory_sessions SET
        tokens = tokens + (CASE WHEN NEW.archived = 0 THEN NEW.tokens ELSE 0 END),
        live = live + (NEW.archived = 0),
        pinned = pinned + (NEW.archived = 0 AND NEW.pinned = 1),
        archived = archived + (NEW.archived = 1),
        docs = docs + 1,
        length = length + NEW.dl
    WHERE session_id = NEW.session_id;
END;
CREATE TRIGGER memory_items_removed AFTER DELETE ON memory_items BEGIN
    UPDATE memory_sessions SET
        tokens = tokens - (CASE WHEN OLD.archived = 0 THEN OLD.tokens ELSE 0 END),
        live = live - (OLD.archived = 0),
        pinned = pinned - (OLD.archived = 0 AND OLD.pinned = 1),
        archived = archived - (OLD.archived = 1),
        docs = docs - 1,
        length = length - OLD.dl
    WHERE session_id = OLD.session_id;
END;
CREATE TRIGGER memory_items_changed AFTER UPDATE OF archived, pinned, tokens, dl ON memory_items BEGIN
    UPDATE memory_sessions SET
        tokens = tokens - (CASE WHEN OLD.archived = 0 THEN OLD.tokens ELSE 0 END)
                        + (CASE WHEN NEW.archived = 0 THEN NEW.tokens ELSE 0 END),
        live = live - (OLD.archived = 0) + (NEW.archived = 0),
        pinned = pinned - (OLD.archived = 0 AND OLD.pinned = 1) + (NEW.archived = 0 AND NEW.pinned = 1),
        archived = archived - (OLD.archived = 1) + (NEW.archived = 1),
        length = length - OLD.dl + NEW.dl
    WHERE session_id = NEW.session_id;
END;
"""


def upgrade_memory_index(conn: sqlite3.Connection) -> None:
    from ..memory.model import MemoryItem, rank_key
    from .access import micros
    from .sqlite_migrations import _statements

    for statement in _statements(SCHEMA):
        conn.execute(statement)
    sessions = [r[0] for r in conn.execute("SELECT DISTINCT session_id FROM memory_items")]
    conn.executemany("INSERT OR IGNORE INTO memory_sessions(session_id) VALUES (?)", [(s,) for s in sessions])
    numbers = dict(conn.execute("SELECT session_id, sno FROM memory_sessions").fetchall())
    rows = conn.execute(
        "SELECT m.rid, m.session_id, m.item, f.body, f.tags FROM memory_items m "
        "LEFT JOIN memory_fts f ON f.rowid = m.rid"
    ).fetchall()
    for rid, session_id, raw, body, tags in rows:
        body_counts, tag_counts = Counter((body or "").split()), Counter((tags or "").split())
        conn.executemany(
            "INSERT INTO memory_postings(sno, term, rid, body_tf, tag_tf) VALUES (?, ?, ?, ?, ?)",
            [
                (numbers[session_id], term, rid, body_counts.get(term, 0), tag_counts.get(term, 0))
                for term in set(body_counts) | set(tag_counts)
            ],
        )
        try:
            item = MemoryItem.model_validate_json(raw)
        except ValueError:  # unreadable: kept as it is, found by nothing (as before)
            continue
        conn.execute(
            "UPDATE memory_items SET dl = ?, rank = ?, content_type = ?, accessed_at = ?, access_count = ? "
            "WHERE rid = ?",
            (
                sum(body_counts.values()) + sum(tag_counts.values()),
                rank_key(item),
                item.content_type,
                micros(item.accessed_at),
                item.access_count,
                rid,
            ),
        )
    # the totals of items that existed before the triggers
    conn.execute(
        "UPDATE memory_sessions SET "
        "tokens = (SELECT COALESCE(SUM(CASE WHEN archived = 0 THEN tokens END), 0) FROM memory_items m "
        "WHERE m.session_id = memory_sessions.session_id), "
        "live = (SELECT COUNT(*) FROM memory_items m WHERE m.session_id = memory_sessions.session_id "
        "AND archived = 0), "
        "pinned = (SELECT COUNT(*) FROM memory_items m WHERE m.session_id = memory_sessions.session_id "
        "AND archived = 0 AND pinned = 1), "
        "archived = (SELECT COUNT(*) FROM memory_items m WHERE m.session_id = memory_sessions.session_id "
        "AND archived = 1), "
        "docs = (SELECT COUNT(*) FROM memory_items m WHERE m.session_id = memory_sessions.session_id), "
        "length = (SELECT COALESCE(SUM(dl), 0) FROM memory_items m "
        "WHERE m.session_id = memory_sessions.session_id)"
    )
    conn.execute("DROP TABLE memory_fts")


#: schema 5 (see above).
SPLIT_POSTINGS = """
ALTER TABLE memory_items ADD COLUMN pending_terms TEXT;
ALTER TABLE memory_items ADD COLUMN postings_archived INTEGER NOT NULL DEFAULT 0;
CREATE INDEX memory_items_pending ON memory_items(rid) WHERE pending_terms IS NOT NULL;
CREATE INDEX memory_items_stale ON memory_items(rid) WHERE postings_archived <> archived;
ALTER TABLE memory_postings ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER memory_items_restored AFTER UPDATE OF archived ON memory_items
WHEN OLD.archived <> 0 AND NEW.archived = 0 BEGIN
    UPDATE memory_postings SET archived = 0 WHERE rid = NEW.rid;
    UPDATE memory_items SET postings_archived = 0 WHERE rid = NEW.rid;
END;
"""


def finish_deferred_writes(conn: sqlite3.Connection) -> None:
    """Schema 6 (see above): the postings of items stored without them, then the deferral's
    indexes and trigger dropped."""
    rows = conn.execute(
        "SELECT m.rid, s.sno, m.pending_terms FROM memory_items m "
        "JOIN memory_sessions s ON s.session_id = m.session_id WHERE m.pending_terms IS NOT NULL"
    ).fetchall()
    for rid, sno, pending in rows:
        body_text, _, tags_text = pending.partition("\n")
        body, tags = Counter(body_text.split()), Counter(tags_text.split())
        conn.execute("DELETE FROM memory_postings WHERE rid = ?", (rid,))
        conn.executemany(
            "INSERT INTO memory_postings(sno, term, rid, body_tf, tag_tf) VALUES (?, ?, ?, ?, ?)",
            [(sno, t, rid, body.get(t, 0), tags.get(t, 0)) for t in body.keys() | tags],
        )
    conn.execute("UPDATE memory_items SET pending_terms = NULL WHERE pending_terms IS NOT NULL")
    for statement in (
        "DROP TRIGGER IF EXISTS memory_items_restored",
        "DROP INDEX IF EXISTS memory_items_pending",
        "DROP INDEX IF EXISTS memory_items_stale",
    ):
        conn.execute(statement)
