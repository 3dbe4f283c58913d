"""Redis memory search through its Lua scripts (storage/memory_redis_search.py): the same BM25 as
SQLite when posting lists are capped and items archived, a fixed number of round trips per query
whatever the number of items, on a plain server and a cluster, and scripts the server forgot
(restart, failover) loaded again."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.memory.model import MemoryItem, rank_key
from infinite_context_brain.core.memory.working import WorkingMemory, indexed
from infinite_context_brain.core.models import utcnow
from infinite_context_brain.core.storage import Store, open_store
from infinite_context_brain.core.storage.search import FULL_READ
from infinite_context_brain.core.text import terms

from ..conftest import RedisServer
from .test_memory_scale import memory

# "beta" is in 2 of 5 items: found in more than FULL_READ items (capped, completed by lookup) and
# still selective; "common" is in every item (near-zero idf); "rareN" words are in a few items.
QUERIES = ["beta", "common", "beta common", "rare3 beta", "rare7", "gamma beta", "nothing"]
COUNT = 720


def items(count: int = COUNT) -> list[dict[str, Any]]:
    base = utcnow() - timedelta(hours=6)
    out: list[dict[str, Any]] = []
    for n in range(count):
        words = ["common"] * (1 + n % 3) + [f"rare{n % 40}"] + ["filler"] * (n % 11)
        if n % 5 in (0, 1):
            words += ["beta"] * (1 + n % 4)
        if n % 9 == 0:
            words.append("gamma")
        when = (base + timedelta(seconds=n)).isoformat()
        out.append(
            {
                "id": f"it{n:04d}",
                "content": " ".join(words),
                "tags": ["beta"] if n % 13 == 0 else None,
                "created_at": when,
                "accessed_at": when,
            }
        )
    return out


def is_archived(n: int, live_share: int) -> bool:
    return n % 3 == 0 if live_share == 3 else n % live_share != 0


@pytest.fixture(params=["redis", pytest.param("redis-cluster", marks=pytest.mark.slow)])
def redis_url(request: pytest.FixtureRequest) -> str:
    fixture = "redis_server" if request.param == "redis" else "redis_cluster"
    return str(request.getfixturevalue(fixture).url)


@pytest.fixture
def stores(tmp_path: Path, redis_url: str) -> Iterator[tuple[Store, Store]]:
    sqlite_store = open_store(load_settings(store_url=f"sqlite:///{tmp_path / 'same.db'}"))
    redis_store = open_store(load_settings(store_url=redis_url))
    yield sqlite_store, redis_store
    sqlite_store.close()
    redis_store.close()


# 2 in 3 items live: many live candidates; 1 in 20: few, looked up with the postings
@pytest.mark.parametrize("live_share", [3, 20])
def test_capped_terms_and_archived_items_rank_as_on_sqlite(
    stores: tuple[Store, Store], live_share: int
) -> None:
    ranked: list[dict[tuple[str, bool], list[tuple[str, float]]]] = []
    for store in stores:
        wm = memory(store, f"capped-{uuid.uuid4().hex[:6]}")
        wm.bulk_store(items())
        every = store.memory.memory_all(wm.session_id)
        archive = [i for i in every if is_archived(int(i.id[2:]), live_share)]
        store.memory.memory_update(wm.session_id, [i.model_copy(update={"archived": True}) for i in archive])
        ranked.append(
            {
                (q, archived): [
                    (i, round(s, 9))
                    for i, s in store.memory.memory_search(wm.session_id, terms(q), 40, archived)
                ]
                for q in QUERIES
                for archived in (False, True)
            }
        )
    on_sqlite, on_redis = ranked
    assert sum(1 for n in range(COUNT) if n % 5 in (0, 1)) > FULL_READ  # "beta" is capped
    assert on_sqlite[("beta", False)] and on_sqlite[("beta", True)] and on_sqlite[("nothing", False)] == []
    assert all(is_archived(int(i[2:]), live_share) for i, _ in on_sqlite[("rare7", True)])
    for key, expected in on_sqlite.items():
        assert [i for i, _ in on_redis[key]] == [i for i, _ in expected], key
        assert [s for _, s in on_redis[key]] == pytest.approx([s for _, s in expected], abs=1e-9), key


class CountingTrips:
    """Requests sent to Redis by this process (one per command or per pipeline/script call)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from redis.connection import AbstractConnection

        self.count = 0
        send = AbstractConnection.send_packed_command

        def counting(conn: Any, command: Any, check_health: bool = True) -> None:
            self.count += 1
            send(conn, command, check_health)

        monkeypatch.setattr(AbstractConnection, "send_packed_command", counting)

    def during(self, action: Any) -> int:
        before = self.count
        action()
        return self.count - before


def test_round_trips_per_query_do_not_grow_with_the_items(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    trips = CountingTrips(monkeypatch)
    with open_store(load_settings(store_url=redis_server.url)) as store:
        wm = memory(store)
        made = items()
        wm.bulk_store(made[:60])
        wm.query("warm up")  # the scripts are loaded by the first query
        small = {q: trips.during(lambda q=q: wm.query(q)) for q in QUERIES}
        wm.bulk_store(made[60:])
        for q in QUERIES:  # scripts not loaded yet are loaded on first use (SCRIPT LOAD, once)
            wm.query(q)
        large = {q: trips.during(lambda q=q: wm.query(q)) for q in QUERIES}
        # most items archived: the few live candidates' counts come with the postings
        every = store.memory.memory_all(wm.session_id)
        gone = [i.model_copy(update={"archived": True}) for i in every if int(i.id[2:]) % 20]
        store.memory.memory_update(wm.session_id, gone)
        archived = {q: trips.during(lambda q=q: wm.query(q)) for q in ("beta", "beta common")}
    # statistics (with the postings of rare terms, and the rows of their few items), the items;
    # capped terms: postings, lookup
    assert small["rare7"] == large["rare7"] == 2  # and the access write of the hits
    assert small["nothing"] == large["nothing"] == 1  # no hit: nothing to record
    assert all(count <= 5 for count in large.values()), large
    assert archived == {"beta": 3, "beta common": 3}


def test_a_server_that_forgot_the_scripts_loads_them_again(redis_server: RedisServer) -> None:
    import redis

    with open_store(load_settings(store_url=redis_server.url)) as store:
        wm = memory(store)
        wm.bulk_store(items(300))
        query = terms("beta rare3 common")
        before = store.memory.memory_search(wm.session_id, query, 30, False)
        redis.Redis.from_url(redis_server.url).script_flush()  # as after a restart or a failover
        assert store.memory.memory_search(wm.session_id, query, 30, False) == before
        assert len(before) == 30


def test_pages_and_recall_indexes_read_in_one_call_match_the_items(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    trips = CountingTrips(monkeypatch)
    with open_store(load_settings(store_url=redis_server.url)) as store:
        wm = memory(store)
        wm.bulk_store(items(1100))  # the script reads items in chunks of 1,000
        every = sorted(
            store.memory.memory_all(wm.session_id), key=lambda i: (i.created_at, i.id), reverse=True
        )
        page: list[Any] = store.memory.memory_page(wm.session_id, False, 0, 1)  # loads the script
        page.clear()
        assert trips.during(lambda: page.extend(store.memory.memory_page(wm.session_id, False, 0, 1100))) == 1
        assert [i.id for i in page] == [i.id for i in every]
        assert store.memory.memory_page(wm.session_id, False, 1090, 20) == every[1090:]
        ranked = store.memory.memory_ranked(wm.session_id, "rank", 5, 30)
        assert [i.id for i, _ in ranked] == [
            i.id
            for i, _ in sorted(
                ((i, k) for i in every for k in [rank_key(i)]), key=lambda p: (p[1], p[0].id), reverse=True
            )[5:35]
        ]
        assert [k for _, k in ranked] == [rank_key(i) for i, _ in ranked]


def test_concurrent_writers_number_items_once_and_keep_the_totals(redis_server: RedisServer) -> None:
    import threading

    import redis

    session = f"writers-{uuid.uuid4().hex[:6]}"
    stores = [open_store(load_settings(store_url=redis_server.url)) for _ in range(3)]
    try:
        redis.Redis.from_url(redis_server.url).script_flush()  # each writer loads the script itself
        memories = [memory(store, session) for store in stores]
        made = items(90)

        def write(n: int) -> None:
            for start in range(n * 30, n * 30 + 30, 5):
                memories[n].bulk_store(made[start : start + 5])

        threads = [threading.Thread(target=write, args=(n,)) for n in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        admin = redis.Redis.from_url(redis_server.url, decode_responses=True)
        seqs = [int(row.split()[0]) for row in admin.hvals(f"ic:{{{session}}}:mem:meta")]
        stats = admin.hgetall(f"ic:{{{session}}}:mem:stats")
        assert sorted(seqs) == list(range(1, 91))  # every item numbered once, none lost
        assert int(stats["docs"]) == 90 and int(stats["seq"]) == 90
        assert stores[0].memory.memory_usage(session)[1] == 90
    finally:
        for store in stores:
            store.close()


def test_a_store_costs_a_fixed_number_of_round_trips(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    trips = CountingTrips(monkeypatch)
    with open_store(load_settings(store_url=redis_server.url)) as store:
        wm = memory(store)
        wm.bulk_store(items(50))
        # the PUT script alone: its reply has the usage and the configuration auto-compaction
        # checks next
        counts = [trips.during(lambda n=n: wm.store_item(content=f"note {n} on redis")) for n in range(3)]
        wm.bulk_store(items(600)[50:])
        counts += [trips.during(lambda n=n: wm.store_item(content=f"more {n} on redis")) for n in range(3)]

        def put(item_id: str, content: str) -> int:
            new = MemoryItem(id=item_id, content=content)
            return trips.during(lambda: store.memory.memory_put(wm.session_id, indexed([new])))

        # new; replaced keeping its terms; replaced dropping one (the script names the posting
        # list to leave, which it may only touch once declared: one call more)
        puts = [put("new0", "fresh words"), put("new0", "fresh words again"), put("new0", "fresh")]
        found = {t: [h.item.id for h in wm.query(t)] for t in ("fresh", "words", "again")}
    assert max(counts) == 1, counts
    assert puts == [1, 1, 2]
    assert found == {"fresh": ["new0"], "words": [], "again": []}


def test_a_store_checks_the_configuration_as_stored_now(redis_server: RedisServer) -> None:
    """The configuration comes with the PUT script's reply, so a store's auto-compaction check sees
    what another process configured just before, and a configuration set here is not shadowed by
    one a put left."""
    settings = load_settings(store_url=redis_server.url)
    with open_store(settings) as here, open_store(settings) as there:
        wm = memory(here)
        wm.store_item(content="first note on redis")
        elsewhere = WorkingMemory(there.memory, wm.session_id, settings)
        elsewhere.configure(budget=1000, threshold=0.5, auto_compact=True)  # another process
        _, report = wm.store_item(content="second note " + "words " * 800)  # over half of 1,000
        assert report is not None and report.target_tokens == int(0.45 * 1000)  # compacted to it
        wm.store_item(content="third note")
        wm.configure(auto_compact=False)
        assert wm.config().auto_compact is False  # not the configuration the last put read
        _, report = wm.store_item(content="fourth note " + "words " * 800)
        assert report is None


def test_replaced_items_leave_their_old_postings_and_totals_as_on_sqlite(stores: tuple[Store, Store]) -> None:
    """memory_put is one script on Redis: a replaced item (new words, fewer words, another type,
    archived, pinned, the same id twice in one put) leaves exactly its old postings and totals."""
    session = f"replace-{uuid.uuid4().hex[:6]}"
    first = [MemoryItem(id=f"r{n}", content=f"alpha{n % 4} shared word{n} " * (1 + n % 3)) for n in range(30)]
    again = [
        MemoryItem(
            id=f"r{n}",
            content=("error: boom " if n % 2 else "") + f"alpha{n % 3} fresh{n}",
            archived=n % 5 == 0,
            pinned=n % 7 == 0,
        )
        for n in range(0, 30, 2)
    ]
    twice = [MemoryItem(id="r1", content="first copy gone"), MemoryItem(id="r1", content="second copy kept")]
    seen = []
    for store in stores:
        store.memory.memory_put(session, indexed(first))
        store.memory.memory_put(session, indexed(again))
        store.memory.memory_put(session, indexed(twice))
        queries = ["alpha0", "alpha1", "shared", "fresh4", "word2", "boom", "copy", "gone", "kept second"]
        seen.append(
            (
                store.memory.memory_usage(session),
                {
                    (q, archived): [
                        (i, round(s, 9))
                        for i, s in store.memory.memory_search(session, terms(q), 40, archived)
                    ]
                    for q in queries
                    for archived in (False, True)
                },
            )
        )
    assert seen[0] == seen[1]
    assert seen[1][1][("gone", False)] == [] and seen[1][1][("word2", False)] == []
    assert [i for i, _ in seen[1][1][("kept second", False)]] == ["r1"]


def test_rows_read_with_the_statistics_serve_the_next_get_once_and_never_after_a_write(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    trips = CountingTrips(monkeypatch)
    with open_store(load_settings(store_url=redis_server.url)) as store:
        wm = memory(store)
        sid = wm.session_id
        made = [MemoryItem(id=f"z{n}", content=f"zebraword note {n}", importance=3) for n in range(3)]
        store.memory.memory_put(sid, indexed(made))
        ids = [i for i, _ in store.memory.memory_search(sid, ["zebraword"], 30, False)]
        assert sorted(ids) == ["z0", "z1", "z2"]
        assert trips.during(lambda: store.memory.memory_get(sid, ids)) == 0  # read with the statistics
        assert trips.during(lambda: store.memory.memory_get(sid, ids)) == 1  # once only
        store.memory.memory_search(sid, ["zebraword"], 30, False)
        store.memory.memory_update(sid, [made[0].model_copy(update={"importance": 9})])
        assert store.memory.memory_get(sid, ["z0"])["z0"].importance == 9  # a write drops them
        store.memory.memory_search(sid, ["zebraword"], 30, False)
        assert store.memory.memory_get("another-session", ["z0"]) == {}  # another session: read anew
        left = store.memory.memory_put(
            sid, indexed([MemoryItem(id="z3", content="zebraword pinned", pinned=True)])
        )
        usage: list[tuple[int, int, int, int]] = []
        reads = [trips.during(lambda: usage.append(store.memory.memory_usage(sid))) for _ in range(2)]
        assert reads == [1, 1]  # the put returned what it read; nothing is kept for later reads
        tokens = sum(i.tokens for i in store.memory.memory_get(sid, ["z0", "z1", "z2", "z3"]).values())
        assert left is not None and left.usage == usage[0] == usage[1] == (tokens, 4, 1, 0)
        elsewhere = threading.Thread(target=lambda: store.memory.memory_search(sid, ["zebraword"], 30, False))
        elsewhere.start()
        elsewhere.join()
        assert trips.during(lambda: store.memory.memory_get(sid, ["z1"])) == 1  # another thread's rows
        # each query sees the access the queries before it recorded
        counts = [{h.item.id: h.item.access_count for h in wm.query("zebraword")} for _ in range(3)]
        assert [c["z1"] for c in counts] == [0, 1, 2]


@pytest.mark.parametrize("session", ["plain", "odd{tag}%25id", ""])
def test_put_and_search_keys_are_the_session_keys_for_any_session_id(
    redis_server: RedisServer, session: str
) -> None:
    """PUT and the search scripts name their keys as prefix + name (no per-key formatting): the
    same keys ``RedisMemory._m`` gives, also for a session id that must be escaped in the hash
    tag, and a store and a query under such an id find each other."""
    from functools import partial

    from infinite_context_brain.core.storage.memory_redis import RedisMemory
    from infinite_context_brain.core.storage.memory_redis_put import CONTENT_TYPES, NAMED, PutCall
    from infinite_context_brain.core.storage.memory_redis_search import Postings

    with open_store(load_settings(store_url=redis_server.url)) as store:
        redis_memory = store.memory
        assert isinstance(redis_memory, RedisMemory)
        item = MemoryItem(id="k1", content="escaped hashTag keys", tags=["keys"])
        call = PutCall(partial(redis_memory._m, session), indexed([item]), "3", frozenset())
        names = [*NAMED, *(f"recent:{t}" for t in CONTENT_TYPES), *(f"t:{t}" for t in call.terms)]
        assert call.keys() == [redis_memory._m(session, n) for n in names]
        assert Postings(redis_memory, session, False)._key("t:keys") == redis_memory._m(session, "t:keys")
        wm = WorkingMemory(store.memory, session, load_settings(store_url=redis_server.url))
        if session:  # "" is the project without a brain yet: reads find nothing there
            wm.store_item(content="escaped hashTag keys on redis")
            assert [h.item.content for h in wm.query("hashtag")] == ["escaped hashTag keys on redis"]


def test_recall_reads_the_configuration_and_usage_once(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``recall`` reads the configuration and the usage once, for its auto-compaction check and
    its budget (it read both twice: two round trips more); after a compaction it reads the usage
    again, so the budget shown is the one compaction left."""
    from infinite_context_brain.core.memory.ranking import top_by_retention

    trips = CountingTrips(monkeypatch)
    with open_store(load_settings(store_url=redis_server.url)) as store:
        wm = WorkingMemory(
            store.memory, f"recall-{uuid.uuid4().hex[:6]}", load_settings(store_url=redis_server.url)
        )
        wm.bulk_store(items(40))
        wm.recall(10)  # scripts loaded
        ranked = trips.during(lambda: top_by_retention(store.memory, wm.session_id, 10, utcnow()))
        assert trips.during(lambda: wm.recall(10)) == ranked + 2
        wm.configure(budget=1000, threshold=0.3)  # ~390 tokens: over it, recall compacts
        result = wm.recall(10)
        assert result.compaction is not None
        assert result.budget.used == store.memory.memory_usage(wm.session_id)[0] <= 300
        assert result.budget.budget == 1000
