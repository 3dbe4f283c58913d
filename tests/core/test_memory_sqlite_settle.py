"""SQLite schema 5 (issue 19): an item's postings written after the item (``memory_settle``) and
archived items' postings flagged, so a live search skips them. Every read of the index finds every
stored item, a crash before settling loses nothing, archiving and restoring keep the flags right,
the ranking is exactly what it was (golden file made by the code before the change), and a file
of schema 4 is upgraded keeping every item and every search result."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.memory.model import MemoryItem, rank_key
from infinite_context_brain.core.storage import Store, memory_sqlite, open_store
from infinite_context_brain.core.storage.parts import IndexedItem, IndexTerms
from infinite_context_brain.core.storage.sqlite_migrations import LATEST, MIGRATIONS, _statements
from infinite_context_brain.core.storage.touches import micros

from ..conftest import Backend, RedisServer
from . import memory_golden

GOLDEN = Path(__file__).parent / "data" / "memory_golden_rankings.json"


@pytest.fixture(autouse=True)
def _no_background_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    """What is pending is checked here step by step: the background settle stays out of it."""
    monkeypatch.setattr(memory_sqlite, "SETTLE_DELAY", 3600.0)


def _open(path: Path) -> Store:
    return open_store(load_settings(store_url=f"sqlite:///{path}"))


def _indexed(item_id: str, text: str, tags: tuple[str, ...] = (), archived: bool = False) -> IndexedItem:
    words = tuple(text.split())
    return IndexedItem(
        MemoryItem(id=item_id, content=text, tokens=len(words), archived=archived), IndexTerms(words, tags)
    )


def _raw(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[Any]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def _pending(path: Path) -> int:
    return int(_raw(path, "SELECT COUNT(*) FROM memory_items WHERE pending_terms IS NOT NULL")[0][0])


def _flags(path: Path, item_id: str) -> set[object]:
    return {
        r[0]
        for r in _raw(
            path,
            "SELECT DISTINCT p.archived FROM memory_postings p JOIN memory_items m ON m.rid = p.rid "
            "WHERE m.id = ?",
            (item_id,),
        )
    }


def test_a_stored_item_waits_for_its_postings_and_every_read_of_the_index_finds_it(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    with _open(path) as store:
        store.memory_put("s", [_indexed("a", "ledger reconciliation drops invoices", ("billing",))])
        assert _pending(path) == 1 and _raw(path, "SELECT COUNT(*) FROM memory_postings") == [(0,)]
        assert store.memory_usage("s") == (4, 1, 0, 0)  # the row and the totals are committed
        assert [i.id for i in store.memory_all("s")] == ["a"]
        assert [i for i, _ in store.memory_search("s", ["reconciliation"], 5, False)] == ["a"]
        assert _pending(path) == 0  # the search wrote them first

        store.memory_put("s", [_indexed("b", "tenant ledger export")])
        exported = {e.item.id: e.terms for e in store.memory_export("s")}
        assert exported["b"] == IndexTerms(("export", "ledger", "tenant"), ())  # settled for it
        assert sorted(exported["a"].tags) == ["billing"]

        store.memory_put("s", [_indexed("c", "ephemeral note about ledgers")])
        assert store.memory_delete("s", ["c"]) == 1  # deleted while pending: nothing left behind
        store.memory_settle()
        assert _raw(path, "SELECT COUNT(*) FROM memory_items WHERE id = 'c'") == [(0,)]
        assert store.memory_search("s", ["ephemeral"], 5, False) == []

        store.memory_put("s", [_indexed("d", "archived while pending quokka")])
        archived = store.memory_get("s", ["d"])["d"].model_copy(update={"archived": True})
        store.memory_update("s", [archived])  # archived before its postings exist
        assert store.memory_search("s", ["quokka"], 5, False) == []
        assert [i for i, _ in store.memory_search("s", ["quokka"], 5, True)] == ["d"]
        assert _flags(path, "d") == {1}

        store.memory_put("s", [_indexed("a", "replaced text about wombats")])  # same id again
        assert store.memory_search("s", ["reconciliation"], 5, False) == []  # old postings gone
        assert [i for i, _ in store.memory_search("s", ["wombats"], 5, False)] == ["a"]
    assert _pending(path) == 0


def test_stores_without_a_pause_write_postings_in_batches_and_close_settles(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    with _open(path) as store:
        for n in range(150):
            store.memory_put("s", [_indexed(f"i{n}", f"word{n} common")])
        assert 0 < _pending(path) < 64  # bounded: the put that reached the limit wrote them all
        store.memory_put("s", [_indexed(f"bulk{n}", f"bulkword{n}") for n in range(100)])
        assert _pending(path) == 0  # a large put writes every posting in its own transaction
        store.memory_put("s", [_indexed("last", "lastword")])
    assert _pending(path) == 0  # close settled
    with _open(path) as store:
        for n in (0, 63, 64, 149):
            assert [i for i, _ in store.memory_search("s", [f"word{n}"], 5, False)] == [f"i{n}"]
        assert len(store.memory_search("s", ["common"], 500, False)) == 150


def test_a_background_thread_settles_a_moment_after_a_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_sqlite, "SETTLE_DELAY", 0.05)
    path = tmp_path / "b.db"
    with _open(path) as store:
        store.memory_put("s", [_indexed(f"i{n}", f"alone{n}") for n in range(3)])
        archived = store.memory_get("s", ["i0"])["i0"].model_copy(update={"archived": True})
        store.memory_update("s", [archived])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (
            _pending(path)
            or _raw(path, "SELECT COUNT(*) FROM memory_items WHERE postings_archived <> archived")[0][0]
        ):
            time.sleep(0.02)
        assert _pending(path) == 0 and _flags(path, "i0") == {1}  # no read, no close: the thread did


def test_the_background_thread_waits_while_the_process_keeps_working(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While this process keeps writing or reading every item (a bulk store, a compaction scoring
    what it read), the background thread leaves the flags for later; once it is quiet for
    ``QUIET`` seconds they are set, with no read and no close."""
    monkeypatch.setattr(memory_sqlite, "SETTLE_DELAY", 0.05)
    monkeypatch.setattr(memory_sqlite, "QUIET", 0.5)
    path = tmp_path / "b.db"
    stale = "SELECT COUNT(*) FROM memory_items WHERE postings_archived <> archived"
    with _open(path) as store:
        store.memory_put("s", [_indexed(f"i{n}", f"alone{n}") for n in range(80)])  # postings written
        items = store.memory_get("s", [f"i{n}" for n in range(40)])
        store.memory_update("s", [i.model_copy(update={"archived": True}) for i in items.values()])
        busy_until = time.monotonic() + 0.6  # the timer fires about ten times meanwhile
        while time.monotonic() < busy_until:
            store.memory_all("s")
            time.sleep(0.03)
        assert _raw(path, stale) == [(40,)]  # left alone while working
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _raw(path, stale)[0][0]:
            time.sleep(0.02)
        assert _raw(path, stale) == [(0,)] and _flags(path, "i0") == {1}


def test_a_process_killed_before_settling_loses_no_posting(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    script = textwrap.dedent(
        f"""
        import os, signal
        from infinite_context_brain.core.config import load_settings
        from infinite_context_brain.core.memory.model import MemoryItem
        from infinite_context_brain.core.storage import open_store
        from infinite_context_brain.core.storage.parts import IndexedItem, IndexTerms
        store = open_store(load_settings(store_url="sqlite:///{path}"))
        for n in range(5):
            words = ("crashword", f"unique{{n}}")
            item = MemoryItem(id=f"k{{n}}", content=" ".join(words))
            store.memory_put("s", [IndexedItem(item, IndexTerms(words, ()))])
        os.kill(os.getpid(), signal.SIGKILL)  # no close, no settle
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == -9, done.stderr
    assert _pending(path) == 5  # committed items, postings not written
    with _open(path) as store:
        assert _pending(path) == 0  # the next open wrote them
        assert {i for i, _ in store.memory_search("s", ["crashword"], 10, False)} == {
            f"k{n}" for n in range(5)
        }
        assert [i for i, _ in store.memory_search("s", ["unique3"], 10, False)] == ["k3"]


def test_archiving_flags_postings_later_and_restoring_clears_them_at_once(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    with _open(path) as store:
        store.memory_put("s", [_indexed(f"i{n}", f"shared numbat{n}") for n in range(80)])
        assert _flags(path, "i1") == {0}
        items = store.memory_get("s", ["i1", "i2"])
        store.memory_update("s", [i.model_copy(update={"archived": True}) for i in items.values()])
        assert _flags(path, "i1") == {0}  # a compaction rewrites its items only
        # flagged live, archived: still left out of a live search, found by an archived one
        assert "i1" not in {i for i, _ in store.memory_search("s", ["shared"], 100, False)}
        assert [i for i, _ in store.memory_search("s", ["numbat1"], 5, True)] == ["i1"]
        store.memory_settle()
        assert _flags(path, "i1") == {1} and _flags(path, "i2") == {1}
        assert _raw(path, "SELECT COUNT(*) FROM memory_items WHERE postings_archived <> archived") == [(0,)]
        restored = store.memory_get("s", ["i1"])["i1"].model_copy(update={"archived": False})
        store.memory_update("s", [restored])
        assert _flags(path, "i1") == {0}  # at once: a posting flagged archived is never a live item's
        assert [i for i, _ in store.memory_search("s", ["numbat1"], 5, False)] == ["i1"]
        assert store.memory_search("s", ["numbat1"], 5, True) == []
        assert store.memory_usage("s")[1:] == (79, 0, 1)


def test_the_ranking_is_the_one_before_the_change(tmp_path: Path) -> None:
    """Golden rankings written by the code before schema 5 (``python -m tests.core.memory_golden``
    on that commit): same ids, same scores, live and archived, capped and uncapped terms, with
    archived flags not yet settled and settled."""
    expected = json.loads(GOLDEN.read_text())
    with _open(tmp_path / "b.db") as store:
        memory_golden.fill(store)
        assert memory_golden.rankings(store) == expected
        store.memory_settle()
        assert memory_golden.rankings(store) == expected


def _schema_4_file(path: Path, items: list[IndexedItem], session: str) -> None:
    """A file as schema 4 wrote it: its own migrations, rows and postings as its memory_put did."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    for number, step in MIGRATIONS[:4]:
        conn.execute("BEGIN")
        if callable(step):
            step(conn)
        else:
            for statement in _statements(step):
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {number}")
        conn.execute("COMMIT")
    conn.execute("BEGIN")
    conn.execute("INSERT INTO memory_sessions(session_id) VALUES (?)", (session,))
    sno = conn.execute("SELECT sno FROM memory_sessions WHERE session_id = ?", (session,)).fetchone()[0]
    for item, terms in items:
        rid = conn.execute(
            "INSERT INTO memory_items(session_id, id, item, archived, pinned, tokens, created_at, dl, rank, "
            "content_type, accessed_at, access_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session,
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
        ).lastrowid
        words = set(terms.body) | set(terms.tags)
        conn.executemany(
            "INSERT INTO memory_postings(sno, term, rid, body_tf, tag_tf) VALUES (?, ?, ?, ?, ?)",
            [(sno, w, rid, terms.body.count(w), terms.tags.count(w)) for w in words],
        )
    conn.execute("COMMIT")
    conn.close()


def test_a_schema_4_file_is_upgraded_keeping_every_item_and_every_search_result(tmp_path: Path) -> None:
    items = [
        IndexedItem(
            i.item.model_copy(update={"archived": int(i.item.id[1:]) in memory_golden.ARCHIVED}), i.terms
        )
        for i in memory_golden.workload()
    ]
    old = tmp_path / "old.db"
    _schema_4_file(old, items, memory_golden.SESSION)
    assert _raw(old, "PRAGMA user_version") == [(4,)]
    with _open(old) as store:
        assert _raw(old, "PRAGMA user_version") == [(LATEST,)] and LATEST == 5
        kept = {i.id: i for i in store.memory_all(memory_golden.SESSION, archived=None)}
        assert kept == {i.item.id: i.item for i in items}
        assert store.memory_usage(memory_golden.SESSION)[1:] == (234, 0, 466)
        upgraded = memory_golden.rankings(store)
        store.memory_settle()  # the archived items' flags, in small batches after the upgrade
        assert _raw(old, "SELECT COUNT(*) FROM memory_items WHERE postings_archived <> archived") == [(0,)]
        assert memory_golden.rankings(store) == upgraded
        exported = {
            e.item.id: (sorted(e.terms.body), sorted(e.terms.tags))
            for e in store.memory_export(memory_golden.SESSION)
        }
    assert exported == {i.item.id: (sorted(i.terms.body), sorted(i.terms.tags)) for i in items}
    with _open(tmp_path / "fresh.db") as fresh:  # the same data written by schema 5
        fresh.memory_put(memory_golden.SESSION, items)
        assert memory_golden.rankings(fresh) == upgraded


def test_every_backend_settles_and_finds_items_before_and_after(backend: Backend) -> None:
    store = backend.open()
    store.memory_put("s", [_indexed("a", "pangolin ledger"), _indexed("b", "pangolin export")])
    assert [i for i, _ in store.memory_search("s", ["ledger"], 5, False)] == ["a"]
    store.memory_settle()
    store.memory_settle()  # nothing left: a no-op
    assert {i for i, _ in store.memory_search("s", ["pangolin"], 5, False)} == {"a", "b"}
    assert {e.item.id for e in store.memory_export("s")} == {"a", "b"}


def test_sqlite_ranks_archived_and_capped_terms_as_redis_does(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    with (
        _open(tmp_path / "b.db") as on_sqlite,
        open_store(load_settings(store_url=redis_server.url)) as on_redis,
    ):
        on_redis.memory_delete(memory_golden.SESSION, [i.item.id for i in memory_golden.workload()])
        for store in (on_sqlite, on_redis):
            memory_golden.fill(store)
        a, b = memory_golden.rankings(on_sqlite), memory_golden.rankings(on_redis)
        for query in a:
            assert [i for i, _ in a[query]] == [i for i, _ in b[query]], query
            assert [s for _, s in a[query]] == pytest.approx([s for _, s in b[query]], abs=1e-6), query


def test_settling_gives_way_to_a_thread_waiting_for_the_connection(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    with _open(path) as store:
        store.memory_put("s", [_indexed(f"i{n}", f"shared item{n}") for n in range(100)])
        items = store.memory_get("s", [f"i{n}" for n in range(60)])
        store.memory_update("s", [i.model_copy(update={"archived": True}) for i in items.values()])
        memory = store.memory  # type: ignore[attr-defined]
        memory.db.waiting = 1  # as while a request's thread waits for the lock
        try:
            store.memory_settle()
        finally:
            memory.db.waiting = 0
        stale = "SELECT COUNT(*) FROM memory_items WHERE postings_archived <> archived"
        assert _raw(path, stale) == [(60 - memory_sqlite.FLAG_CHUNK,)]  # one chunk, then it stopped
        store.memory_settle()
        assert _raw(path, stale) == [(0,)]


def test_settling_stops_when_asked_between_batches(tmp_path: Path) -> None:
    """``until`` (the MCP server's "a request is coming in") is asked after each batch: True
    leaves the rest to a later settle, which finishes it."""
    path = tmp_path / "b.db"
    with _open(path) as store:
        store.memory_put("s", [_indexed(f"i{n}", f"shared item{n}") for n in range(100)])
        items = store.memory_get("s", [f"i{n}" for n in range(80)])
        store.memory_update("s", [i.model_copy(update={"archived": True}) for i in items.values()])
        asked: list[int] = []

        def until() -> bool:
            asked.append(1)
            return len(asked) >= 2

        store.memory_settle(until)
        stale = "SELECT COUNT(*) FROM memory_items WHERE postings_archived <> archived"
        assert _raw(path, stale) == [(80 - 2 * memory_sqlite.FLAG_CHUNK,)]  # two batches, then it stopped
        store.memory_settle(lambda: False)
        assert _raw(path, stale) == [(0,)]
