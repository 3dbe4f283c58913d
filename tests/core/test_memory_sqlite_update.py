"""SQLite ``memory_update`` of many items (a compaction archiving hundreds) is one UPDATE through a
temporary table: the items, the running totals, the postings' flags and every search come out
exactly as item-by-item updates leave them, an id given twice keeps its last version, and the
temporary table is reused and left empty; their postings' flags are set later by one UPDATE per
batch."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.memory.model import MemoryItem
from infinite_context_brain.core.storage import Store, memory_sqlite, open_store
from infinite_context_brain.core.storage.memory_sqlite import SQLiteMemory
from infinite_context_brain.core.storage.parts import IndexedItem, IndexTerms

ITEMS = 120


def _open(path: Path) -> Store:
    return open_store(load_settings(store_url=f"sqlite:///{path}"))


def _items() -> list[IndexedItem]:
    items = []
    for n in range(ITEMS):
        words = ("shared", f"word{n % 7}", f"only{n}")
        item = MemoryItem(id=f"i{n:03d}", content=" ".join(words), tokens=3 + n % 5, pinned=n % 11 == 0)
        items.append(IndexedItem(item, IndexTerms(words, ("tagged",) if n % 3 == 0 else ())))
    return items


def _fill(store: Store, items: list[IndexedItem]) -> None:
    store.memory_put("s", items)
    store.memory_put("other", items[:10])  # another session's items with the same ids stay as they are


def _changes(store: Store) -> list[MemoryItem]:
    """Archive most items (some promoted, one unpinned), then restore two of them: the same id
    twice in one call, the last version wins."""
    found = store.memory_get("s", [f"i{n:03d}" for n in range(ITEMS)])
    out = []
    for n, item in enumerate(found.values()):
        if n % 4 != 3:
            out.append(
                item.model_copy(update={"archived": True, "promoted": n % 2 == 0, "tokens": 1 + n % 3})
            )
    out.append(found["i000"].model_copy(update={"pinned": False, "importance": 9}))
    out.append(found["i004"].model_copy(update={"archived": False}))
    return out


def _state(store: Store, path: Path) -> tuple[object, ...]:
    store.memory_settle()
    conn = sqlite3.connect(path)
    try:
        flags = conn.execute(
            "SELECT m.session_id, m.id, p.term, p.archived FROM memory_postings p "
            "JOIN memory_items m ON m.rid = p.rid ORDER BY 1, 2, 3"
        ).fetchall()
        rows = conn.execute(
            "SELECT session_id, id, item, archived, pinned, tokens, rank, postings_archived "
            "FROM memory_items ORDER BY session_id, id"
        ).fetchall()
        totals = conn.execute("SELECT * FROM memory_sessions ORDER BY session_id").fetchall()
    finally:
        conn.close()
    searches = [
        store.memory_search("s", terms, 200, archived)
        for terms in (["shared"], ["word3"], ["only4", "only5"], ["tagged"])
        for archived in (False, True)
    ]
    return rows, totals, flags, searches, store.memory_usage("s"), store.memory_usage("other")


@pytest.fixture(autouse=True)
def _no_background_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_sqlite, "SETTLE_DELAY", 3600.0)


def test_many_items_in_one_statement_leave_what_item_by_item_updates_leave(tmp_path: Path) -> None:
    with _open(tmp_path / "one.db") as one, _open(tmp_path / "each.db") as each:
        items = _items()
        for store in (one, each):
            _fill(store, items)
        changes = _changes(one)
        assert len(changes) >= memory_sqlite.UPDATE_BATCH
        db = next(p for p in vars(one).values() if isinstance(p, SQLiteMemory)).db
        statements: list[str] = []
        db.conn.set_trace_callback(statements.append)
        one.memory_update("s", changes)
        db.conn.set_trace_callback(None)
        for item in changes:  # below UPDATE_BATCH: one-row statements, as before
            each.memory_update("s", [item])
        # the trace repeats a statement for each trigger it fires; one text is one statement (each
        # one-row execution shows its own values)
        updates = {s for s in statements if s.startswith("UPDATE memory_items SET")}
        assert len(updates) == 1  # was one per item
        assert _state(one, tmp_path / "one.db") == _state(each, tmp_path / "each.db")
        assert one.memory_get("s", ["i004"])["i004"].archived is False  # its last version


def test_the_temporary_table_is_reused_and_left_empty(tmp_path: Path) -> None:
    with _open(tmp_path / "b.db") as store:
        _fill(store, _items())
        found = list(store.memory_get("s", [f"i{n:03d}" for n in range(ITEMS)]).values())
        store.memory_update("s", [i.model_copy(update={"archived": True}) for i in found[:60]])
        store.memory_update("s", [i.model_copy(update={"archived": False}) for i in found[:40]])
        assert store.memory_usage("s")[1] == ITEMS - 20
        assert [i for i, _ in store.memory_search("s", ["only30"], 5, False)] == ["i030"]
        assert [i for i, _ in store.memory_search("s", ["only50"], 5, True)] == ["i050"]
        db = next(p for p in vars(store).values() if isinstance(p, SQLiteMemory)).db
        assert db.rows("SELECT COUNT(*) FROM temp.memory_changes") == [(0,)]


def test_flags_are_set_by_one_statement_per_batch(tmp_path: Path) -> None:
    """The postings' archived flags of a batch of archived items: one UPDATE (was one per item),
    every posting of those items flagged, none of the others."""
    path = tmp_path / "b.db"
    with _open(path) as store:
        _fill(store, _items())
        found = list(store.memory_get("s", [f"i{n:03d}" for n in range(ITEMS)]).values())
        archived = {i.id for i in found[: memory_sqlite.FLAG_CHUNK]}
        store.memory_update("s", [i.model_copy(update={"archived": True}) for i in found if i.id in archived])
        db = next(p for p in vars(store).values() if isinstance(p, SQLiteMemory)).db
        statements: list[str] = []
        db.conn.set_trace_callback(statements.append)
        store.memory_settle()
        db.conn.set_trace_callback(None)
        assert len({s for s in statements if s.startswith("UPDATE memory_postings SET archived")}) == 1
        conn = sqlite3.connect(path)
        try:
            flags = conn.execute(
                "SELECT m.session_id, m.id, MIN(p.archived), MAX(p.archived) FROM memory_postings p "
                "JOIN memory_items m ON m.rid = p.rid GROUP BY m.rid"
            ).fetchall()
        finally:
            conn.close()
        for session_id, item_id, low, high in flags:
            expected = int(session_id == "s" and item_id in archived)
            assert (low, high) == (expected, expected), (session_id, item_id)
