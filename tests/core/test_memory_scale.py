"""Working memory at scale: one ranking on every backend, projects isolated, usage as
running totals, recall through indexes, access bookkeeping off the query path, schema upgrades
that keep every item. Costs (flat from 1k to 100k items) are measured in benchmarks/memory_bench.py,
not here."""

from __future__ import annotations

import json
import random
import sqlite3
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.memory.model import MemoryItem
from infinite_context_brain.core.memory.scoring import retention
from infinite_context_brain.core.memory.working import WorkingMemory
from infinite_context_brain.core.models import utcnow
from infinite_context_brain.core.storage import Store, open_store
from infinite_context_brain.core.storage.memory_sqlite import SQLiteMemory
from infinite_context_brain.core.storage.parts import IndexedItem, IndexTerms
from infinite_context_brain.core.storage.sqlite_migrations import MIGRATIONS
from infinite_context_brain.core.text import terms

from ..conftest import Backend, RedisServer

VOCABULARY = "cache redis deploy queue parse token schema index budget retry worker".split()
QUERIES = ["cache", "redis queue", "parseHTTPResponse", "deploy schema retry", "zebra", "budget token index"]


def corpus(count: int = 60, seed: int = 3) -> list[dict[str, object]]:
    """Items with fixed ids and times, so two stores can hold exactly the same data."""
    rng = random.Random(seed)
    base = utcnow() - timedelta(hours=5)
    items: list[dict[str, object]] = []
    for n in range(count):
        words = " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(3, 25)))
        if n % 7 == 0:
            words += " fixed parseHTTPResponse"
        when = (base + timedelta(minutes=n)).isoformat()
        items.append(
            {
                "id": f"item{n:03d}",
                "content": words,
                "importance": rng.randint(1, 10),
                "pinned": n % 11 == 0,
                "tags": [rng.choice(VOCABULARY)] if n % 3 == 0 else None,
                "created_at": when,
                "accessed_at": when,
            }
        )
    return items


def memory(store: Store, session: str | None = None, **overrides: object) -> WorkingMemory:
    settings = load_settings(**({"memory_auto_compact": False} | overrides))
    return WorkingMemory(store.memory, session or f"scale-{uuid.uuid4().hex[:8]}", settings)


def ranking(wm: WorkingMemory) -> dict[str, list[tuple[str, float]]]:
    return {q: [(h.item.id, h.score) for h in wm.query(q, 20)] for q in QUERIES} | {
        "(bm25)": [
            (i, round(s, 9))
            for i, s in wm.store.memory_search(wm.session_id, terms("cache redis"), 50, False)
        ]
    }


def test_sqlite_and_redis_rank_the_same_data_the_same_way(tmp_path: Path, redis_server: RedisServer) -> None:
    sqlite_store = open_store(load_settings(store_url=f"sqlite:///{tmp_path / 'a.db'}"))
    redis_store = open_store(load_settings(store_url=redis_server.url))
    try:
        on_sqlite, on_redis = (
            memory(sqlite_store, "same"),
            memory(redis_store, f"same-{uuid.uuid4().hex[:6]}"),
        )
        for wm in (on_sqlite, on_redis):
            wm.bulk_store(corpus())
        a, b = ranking(on_sqlite), ranking(on_redis)
        assert a["cache"] and a["parseHTTPResponse"] and a["zebra"] == []
        for query in a:
            assert [i for i, _ in a[query]] == [i for i, _ in b[query]], query
            assert [s for _, s in a[query]] == pytest.approx([s for _, s in b[query]], abs=1e-4), query
        assert [i.id for i in on_sqlite.recall(15).items] == [i.id for i in on_redis.recall(15).items]
    finally:
        sqlite_store.close()
        redis_store.close()


def test_other_projects_do_not_change_a_projects_ranking(backend: Backend) -> None:
    store = backend.open()
    mine = memory(store)
    mine.bulk_store(corpus())

    def bm25() -> dict[str, list[tuple[str, float]]]:  # the statistics only (queries touch items)
        return {q: mine.store.memory_search(mine.session_id, terms(q), 50, False) for q in QUERIES}

    before = bm25()
    noisy = memory(store)  # another project in the same store, full of the same words
    noisy.bulk_store([{"content": f"cache redis cache queue {n}", "tags": ["cache"]} for n in range(300)])
    assert bm25() == before
    assert {h.item.id for h in noisy.query("cache", 50)}.isdisjoint(i for i, _ in before["cache"])


def test_text_relevance_decides_and_retention_only_boosts(backend: Backend) -> None:
    wm = memory(backend.open())
    precise, _ = wm.store_item(content="the flaky ledger reconciliation job drops invoices", importance=1)
    for n in range(20):  # important, fresh, pinned items that share one common query word
        wm.store_item(content=f"note {n} about the job queue", importance=10, pinned=n % 2 == 0)
    hits = wm.query("ledger reconciliation job")
    assert hits[0].item.id == precise.id
    assert all(1.0 <= h.score / max(h.relevance, 1e-9) <= 1.25 + 1e-6 for h in hits if h.relevance > 0)


def test_usage_is_a_running_total_that_matches_the_items(backend: Backend) -> None:
    wm = memory(backend.open(), budget=4000, memory_auto_compact=True)
    wm.configure(budget=4000, threshold=0.6)
    rng = random.Random(9)
    stored = [
        wm.store_item(content=" ".join(rng.choice(VOCABULARY) for _ in range(40)))[0] for _ in range(30)
    ]
    wm.update(stored[-1].id, content="short now")
    wm.set_pinned(stored[-2].id, True)
    wm.forget(stored[-3].id)
    archived = [i for i in wm.store.memory_all(wm.session_id, archived=True)]
    if archived:
        wm.update(archived[0].id, restore=True)
    everything = wm.store.memory_all(wm.session_id, archived=None)
    live = [i for i in everything if not i.archived]
    assert len(everything) == 29  # compaction archived, never deleted
    assert wm.store.memory_usage(wm.session_id) == (
        sum(i.tokens for i in live),
        len(live),
        sum(i.pinned for i in live),
        len(everything) - len(live),
    )


def test_recall_by_index_equals_sorting_every_item(backend: Backend) -> None:
    wm = memory(backend.open())
    rng = random.Random(4)
    now = utcnow()
    kinds = ["Error: boom {}", "We decided to use {}", "def f{}():\n    return 1", "$ make {}\nok", "note {}"]
    items = []
    for n in range(120):
        item = MemoryItem(
            content=kinds[n % 5].format(n),
            content_type=["error", "decision", "code", "tool_output", "prose"][n % 5],
            importance=rng.randint(1, 10),
            access_count=rng.randint(0, 30),
            tokens=rng.randint(5, 3000),
            pinned=rng.random() < 0.05,
            accessed_at=now - timedelta(minutes=rng.randint(0, 2000)),
        )
        items.append(item)
    wm.store.memory_put(wm.session_id, [IndexedItem(i, IndexTerms((), ())) for i in items])
    expected = sorted(items, key=lambda i: (not i.pinned, -retention(i, now)))
    for limit in (1, 10, 50):
        got = [i.id for i in wm.recall(limit).items]
        assert got == [i.id for i in expected[:limit]], limit


def test_a_query_records_access_where_every_process_sees_it(backend: Backend) -> None:
    store, other = backend.open(), backend.open()
    wm = memory(store)
    item, _ = wm.store_item(content="the redis cluster needs hash tags")
    wm.query("redis cluster")
    seen = other.memory.memory_get(wm.session_id, [item.id])[item.id]
    assert seen.access_count == 1 and seen.accessed_at > item.accessed_at


def test_recording_access_never_undoes_a_concurrent_change(backend: Backend) -> None:
    """A query writes access times only: an item pinned and retagged by another process between
    the query's read and its write keeps its pin and tags."""
    store, other = backend.open(), backend.open()
    wm = memory(store)
    item, _ = wm.store_item(content="the redis cluster needs hash tags", tags=["infra"])
    read = store.memory.memory_get(wm.session_id, [item.id])[item.id]
    changed = read.model_copy(update={"pinned": True, "tags": ["infra", "cluster"]})
    other.memory.memory_update(wm.session_id, [changed])
    touched = read.model_copy(update={"access_count": read.access_count + 1, "accessed_at": utcnow()})
    store.memory.memory_accessed(wm.session_id, [touched])
    after = other.memory.memory_get(wm.session_id, [item.id])[item.id]
    assert after.pinned and after.tags == ["infra", "cluster"] and after.access_count == 1
    assert [i.id for i in wm.recall(1).items] == [item.id]  # pinned: first in recall


def test_auto_compaction_with_many_bulk_stores_loses_nothing(backend: Backend) -> None:
    wm = memory(backend.open(), memory_auto_compact=True)
    wm.configure(budget=3000)
    made = []
    for batch in range(6):
        chunk = [
            {"content": f"batch {batch} item {n} " + " ".join(f"w{batch}x{n}y{k}" for k in range(30))}
            for n in range(25)
        ]
        made += [i.id for i in wm.bulk_store(chunk)[0]]
    status = wm.budget_status()
    assert status.used <= 3000 and status.items + status.archived == len(made) == 150
    assert {i.id for i in wm.store.memory_all(wm.session_id, archived=None)} == set(made)
    one = wm.store.memory_all(wm.session_id, archived=True)[0]
    assert wm.query(one.content.split()[-1], archived=True)[0].item.id == one.id  # still found


def test_sqlite_schema_3_file_is_upgraded_keeping_every_item(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for number, script in MIGRATIONS[:3]:
        assert isinstance(script, str)
        for statement in script.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {number}")
    old = [
        MemoryItem(content="deploy api.py to kubernetes", tags=["deploy"], tokens=7),
        MemoryItem(content="fixed parseHTTPResponse", tokens=4, archived=True),
        MemoryItem(content="pinned fact about redis", tokens=5, pinned=True, access_count=3),
    ]
    for rid, item in enumerate(old, start=1):
        conn.execute(
            "INSERT INTO memory_items VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rid,
                "s1",
                item.id,
                item.model_dump_json(),
                int(item.archived),
                int(item.pinned),
                item.tokens,
                0.0,
            ),
        )
        body = " ".join(terms(item.content))
        conn.execute(
            "INSERT INTO memory_fts(rowid, body, tags) VALUES (?, ?, ?)", (rid, body, " ".join(item.tags))
        )
    conn.execute("INSERT INTO memory_items VALUES (4, 's2', 'other', '{\"broken', 0, 0, 3, 0.0)")
    conn.close()

    with open_store(load_settings(store_url=f"sqlite:///{path}")) as store:
        wm = WorkingMemory(store.memory, "s1", load_settings(memory_auto_compact=False))
        assert {i.id: i for i in store.memory.memory_all("s1", archived=None)} == {i.id: i for i in old}
        assert store.memory.memory_usage("s1") == (12, 2, 1, 1)
        assert wm.query("kubernetes")[0].item.id == old[0].id
        assert wm.query("deploy")[0].item.id == old[0].id  # the tag kept its 5x weight
        assert wm.query("http response", archived=True)[0].item.id == old[1].id
        assert wm.recall(1).items[0].id == old[2].id
    reopened = sqlite3.connect(path)
    assert reopened.execute("SELECT COUNT(*) FROM memory_items").fetchone()[0] == 4  # the unreadable row too
    reopened.close()


def test_redis_schema_1_session_is_converted_keeping_every_item(redis_server: RedisServer) -> None:
    import redis

    client = redis.Redis.from_url(redis_server.url)
    sid = f"old-{uuid.uuid4().hex[:6]}"
    key = f"ic:{{{sid}}}:mem:"
    old = [
        MemoryItem(content="deploy api.py to kubernetes", tags=["deploy"], tokens=7),
        MemoryItem(content="fixed parseHTTPResponse", tokens=4, archived=True),
        MemoryItem(content="pinned fact about redis", tokens=5, pinned=True),
    ]
    for item in old:  # schema 1: hash posting lists "body_tf tag_tf", a tokens hash, a dl hash
        body, tags = Counter(terms(item.content)), Counter(item.tags)
        client.hset(key + "items", item.id, item.model_dump_json())
        client.zadd(key + ("archive" if item.archived else "order"), {item.id: item.created_at.timestamp()})
        if not item.archived:
            client.hset(key + "tokens", item.id, item.tokens)
        if item.pinned:
            client.sadd(key + "pinned", item.id)
        vocabulary = sorted(set(body) | set(tags))
        for term in vocabulary:
            client.hset(key + f"t:{term}", item.id, f"{body.get(term, 0)} {tags.get(term, 0)}")
        client.hset(key + "terms", item.id, " ".join(vocabulary))
        client.hset(key + "dl", item.id, sum(body.values()) + sum(tags.values()))

    with open_store(load_settings(store_url=redis_server.url)) as store:
        wm = WorkingMemory(store.memory, sid, load_settings(memory_auto_compact=False))
        assert {i.id: i for i in store.memory.memory_all(sid, archived=None)} == {i.id: i for i in old}
        assert store.memory.memory_usage(sid) == (12, 2, 1, 1)
        assert wm.query("deploy")[0].item.id == old[0].id
        assert wm.query("http response", archived=True)[0].item.id == old[1].id
        assert wm.recall(1).items[0].id == old[2].id
        assert client.get(key + "schema") == b"2" and client.type(key + "t:deploy") == b"zset"
        assert json.loads(client.hget(key + "terms", old[0].id) or b"{}")["deploy"] == [1, 1]


def test_what_a_put_read_never_answers_a_later_read(backend: Backend) -> None:
    """A store's auto-compaction check uses the usage and configuration its put read with the
    write, and nothing later does: another process's items and configuration are seen by the next
    read here (on Redis a put's reading was kept for the next read and went stale: 1 item shown
    of 6, an old budget after ``update``)."""
    here, there = backend.open(), backend.open()
    settings = load_settings(store_url=backend.url, memory_auto_compact=False)
    mine = WorkingMemory(here.memory, f"left-{uuid.uuid4().hex[:6]}", settings)
    other = WorkingMemory(there.memory, mine.session_id, settings)  # another process, the same project
    first, _ = mine.store_item(content="one note here")
    for n in range(5):
        other.store_item(content=f"note {n} from another process")
    assert mine.budget_status().items == 6
    mine.update(first.id, importance=3)
    other.configure(budget=5000)
    assert mine.budget_status().budget == 5000


def test_a_sqlite_store_reads_nothing_after_its_transaction(tmp_path: Path) -> None:
    """What auto-compaction checks (usage, the stored configuration) comes from the store's own
    transaction: no statement after its COMMIT (it read both after, two more statements)."""
    store = open_store(load_settings(store_url=f"sqlite:///{tmp_path / 'brain.db'}"))
    try:
        wm = WorkingMemory(store.memory, "one-transaction", load_settings())  # auto-compact on (default)
        wm.store_item(content="the first note")
        statements: list[str] = []
        db = next(p for p in vars(store).values() if isinstance(p, SQLiteMemory)).db
        db.conn.set_trace_callback(statements.append)
        _, report = wm.store_item(content="the deploy needs a new token")
        db.conn.set_trace_callback(None)
        assert report is None
        assert statements[0] == "BEGIN IMMEDIATE" and statements[-1] == "COMMIT", statements
        wm.configure(budget=1000, threshold=0.5)  # the configuration as stored counts at once
        _, report = wm.store_item(content="a longer note " + "words " * 600)
        assert report is not None and report.target_tokens == int(0.45 * 1000)
    finally:
        store.close()
