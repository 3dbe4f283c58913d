"""Schemas 4 and 5 of the SQLite memory index: per-session postings, running totals, ranking
columns (4); live and archived postings apart, and postings written after the item (5).

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

Schema 5 (``SPLIT_POSTINGS``, plain SQL):

* ``memory_items.pending_terms``: an item's index terms until its postings are written
  (memory_sqlite.py ``memory_settle``), so a store commits one row and its postings follow in a
  batch; the partial index ``memory_items_pending`` finds them, in any process, and after a
  crash, and every read of the index writes them first;
* ``memory_postings.archived``: a flag on each posting, so a search of live items drops archived
  items' postings inside SQLite before joining each to its item (at 100k items most postings of a
  rare word belonged to archived items, every one read and joined only to be dropped). A column,
  not part of the key: a term's range stays one range, so the cap of search.py keeps its meaning
  (newest postings of live and archived items, as on Redis), and a flag is rewritten in place.
  A posting flagged archived always belongs to an archived item (restoring an item clears its
  flags at once: trigger ``memory_items_restored``); one flagged live is checked against its
  item. So archiving (compaction: hundreds of items, ~40 postings each) rewrites only the items,
  and ``memory_items.postings_archived`` with the partial index ``memory_items_stale`` marks
  whose flags ``memory_settle`` has to set later (setting them at once made a compaction of 1k
  items take 1.6x as long).
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
    from .sqlite_migrations import _statements
    from .touches import micros

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


#: schema 5 (see above). Existing postings start flagged live, their archived items marked stale:
#: ``memory_settle`` flags them in small batches after the upgrade, which itself stays quick (a
#: 100k-item file holds millions of postings).
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
