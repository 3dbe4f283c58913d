"""The SQLite memory index writes an item and its postings in one transaction: a writer killed
right after a store loses nothing, a file of schema 4 or one a schema-5 process left with postings
still pending is upgraded keeping every item and finding each as a fresh file does, and SQLite
ranks the same data as Redis does."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.memory.model import MemoryItem, rank_key
from infinite_context_brain.core.storage import Store, open_store
from infinite_context_brain.core.storage.access import micros
from infinite_context_brain.core.storage.parts import IndexedItem, IndexTerms
from infinite_context_brain.core.storage.sqlite_migrations import LATEST, MIGRATIONS, _statements

from ..conftest import Backend, RedisServer
from . import memory_golden


def _open(path: Path) -> Store:
    return open_store(load_settings(store_url=f"sqlite:///{path}"))


def _indexed(item_id: str, text: str, archived: bool = False) -> IndexedItem:
    words = tuple(text.split())
    return IndexedItem(
        MemoryItem(id=item_id, content=text, tokens=len(words), archived=archived), IndexTerms(words, ())
    )


def _raw(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[Any]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def test_every_backend_finds_an_item_the_moment_it_is_stored(backend: Backend) -> None:
    index = backend.open().memory
    index.memory_put("s", [_indexed("a", "pangolin ledger"), _indexed("b", "pangolin export", archived=True)])
    assert [i for i, _ in index.memory_search("s", ["ledger"], 5, False)] == ["a"]
    assert {i for i, _ in index.memory_search("s", ["pangolin"], 5, None)} == {"a", "b"}
    assert [i for i, _ in index.memory_search("s", ["pangolin"], 5, False)] == ["a"]
    assert [i for i, _ in index.memory_search("s", ["pangolin"], 5, True)] == ["b"]
    assert {e.item.id for e in index.memory_export("s")} == {"a", "b"}


def test_a_writer_killed_right_after_its_stores_loses_no_item_and_no_posting(tmp_path: Path) -> None:
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
            store.memory.memory_put("s", [IndexedItem(item, IndexTerms(words, ()))])
        os.kill(os.getpid(), signal.SIGKILL)  # no close
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == -9, done.stderr
    # what the killed process committed, read without our code: items and their postings
    assert _raw(path, "SELECT COUNT(*) FROM memory_items") == [(5,)]
    assert _raw(path, "SELECT COUNT(*) FROM memory_postings WHERE term = 'crashword'") == [(5,)]
    with _open(path) as store:
        found = store.memory.memory_search("s", ["crashword"], 10, False)
        assert {i for i, _ in found} == {f"k{n}" for n in range(5)}
        assert [i for i, _ in store.memory.memory_search("s", ["unique3"], 10, False)] == ["k3"]


def _old_file(path: Path, schema: int, items: list[IndexedItem], session: str) -> None:
    """A file as schema 4 or 5 left it: its own migrations and rows; schema 5 with every item's
    postings still pending (as a store left them before its settle)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    for number, step in MIGRATIONS[:schema]:
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
        if schema == 5:
            conn.execute(
                "UPDATE memory_items SET pending_terms = ? WHERE rid = ?",
                (f"{' '.join(terms.body)}\n{' '.join(terms.tags)}", rid),
            )
            continue
        words = set(terms.body) | set(terms.tags)
        conn.executemany(
            "INSERT INTO memory_postings(sno, term, rid, body_tf, tag_tf) VALUES (?, ?, ?, ?, ?)",
            [(sno, w, rid, terms.body.count(w), terms.tags.count(w)) for w in words],
        )
    conn.execute("COMMIT")
    conn.close()


@pytest.mark.parametrize("schema", [4, 5])
def test_an_older_file_is_upgraded_keeping_every_item_and_every_search_result(
    tmp_path: Path, schema: int
) -> None:
    items = [
        IndexedItem(
            i.item.model_copy(update={"archived": int(i.item.id[1:]) in memory_golden.ARCHIVED}), i.terms
        )
        for i in memory_golden.workload()
    ]
    old = tmp_path / "old.db"
    _old_file(old, schema, items, memory_golden.SESSION)
    assert _raw(old, "PRAGMA user_version") == [(schema,)]
    with _open(old) as store:
        assert _raw(old, "PRAGMA user_version") == [(LATEST,)]
        assert _raw(old, "SELECT COUNT(*) FROM memory_items WHERE pending_terms IS NOT NULL") == [(0,)]
        index = store.memory
        kept = {i.id: i for i in index.memory_all(memory_golden.SESSION, archived=None)}
        assert kept == {i.item.id: i.item for i in items}
        assert index.memory_usage(memory_golden.SESSION)[1:] == (234, 0, 466)
        upgraded = memory_golden.rankings(index)
        exported = {
            e.item.id: (sorted(e.terms.body), sorted(e.terms.tags))
            for e in index.memory_export(memory_golden.SESSION)
        }
    assert exported == {i.item.id: (sorted(i.terms.body), sorted(i.terms.tags)) for i in items}
    with _open(tmp_path / "fresh.db") as fresh:  # the same data written by this schema
        fresh.memory.memory_put(memory_golden.SESSION, items)
        assert memory_golden.rankings(fresh.memory) == upgraded


def test_sqlite_ranks_archived_and_capped_terms_as_redis_does(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    with (
        _open(tmp_path / "b.db") as on_sqlite,
        open_store(load_settings(store_url=redis_server.url)) as on_redis,
    ):
        on_redis.memory.memory_delete(memory_golden.SESSION, [i.item.id for i in memory_golden.workload()])
        for store in (on_sqlite, on_redis):
            memory_golden.fill(store.memory)
        a, b = memory_golden.rankings(on_sqlite.memory), memory_golden.rankings(on_redis.memory)
        assert any(len(found) == 20 for found in a.values())  # capped terms among them
        for query in a:
            assert [i for i, _ in a[query]] == [i for i, _ in b[query]], query
            assert [s for _, s in a[query]] == pytest.approx([s for _, s in b[query]], abs=1e-6), query
