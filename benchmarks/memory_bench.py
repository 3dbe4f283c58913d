"""Working-memory benchmark: costs from 1k to 100k items, and whether search finds things.

Auto-compact ON, as users run it (default budget: 100K tokens, compaction at 90% down to 80%),
so most items of a large memory are archived, as they would be; they still count for BM25 and
for the costs. Per backend (SQLite, Redis), in-process (the operation's own cost) and through the
real MCP client over stdio (what an assistant sees), at 1k, 10k and 100k stored items
(``--quick``: 1k and 10k):

* ``store`` x100, ``query`` x150 (50 of 1-3 common words, 50 of an item's three most distinctive
  words, 50 of an exact identifier such as ``loadInvoice4821``), ``recall(10)`` x30,
  ``bulk_store`` of 500 x3, ``compact`` to 25% x1: p50 / p95 in ms;
* recall@5: the share of distinctive-word and identifier queries whose item is in the top 5;
* ranking against plain BM25 (in-process): 40 items drawn from every stored item, live and
  archived; each one's query is its 3 highest tf-idf words; the reference is the ``rank_bm25``
  package's BM25Okapi over the same items' words; of the queries it answers right (the item in
  its top 5), the share ours answers right too (``R@5 vs BM25``; goal >= 0.9);
* through MCP: the first tool call right after ``initialize`` and 0.5 s after it.

Items are built from a 42-word common vocabulary (25-90 words, as the seed's workload), a few
words of a 3,000-word rarer vocabulary and one identifier each (fixed seed). The reference is
the seed's Go compactor, measured side by side on another machine (neither it nor a Go
toolchain is on this one).

Goals are ratios, so machine load falls on both sides alike: through MCP, ``store``, ``query``
and ``recall`` at 10k and 100k within 1.5x of 1k; ``compact`` at 1k within half the Go
compactor's time; recall@5 >= 0.9 (identifiers: all). The cost of one call against a stock
server's no-op tool is ``mcp_bench``'s.
"""

from __future__ import annotations

import asyncio
import gc
import json
import math
import random
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import bench_env, percentile, scratch, table, temp_project
from rank_bm25 import BM25Okapi

from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.memory.text import index_terms
from infinite_context_brain.core.memory.working import WorkingMemory
from infinite_context_brain.core.storage import open_store
from infinite_context_brain.core.text import terms

WORDS = (
    "cache redis session token parse response handler request user config deploy queue worker retry "
    "timeout schema migration index query latency budget compact summary error panic trace file module "
    "function class interface test fixture build release docker kubernetes postgres python typescript"
).split()
KINDS = ["error", "decision", "code", "tool", "prose"]
VERBS = ["load", "parse", "store", "fetch", "build", "render", "check", "send", "merge", "split"]
NOUNS = ["Invoice", "Session", "Ledger", "Widget", "Report", "Cursor", "Tenant", "Bucket", "Policy", "Ticket"]
SYLLABLES = ["ka", "lo", "mi", "ne", "po", "ru", "sa", "ti", "vo", "ze", "qua", "bri", "dro", "fle"]
BULK = 500

#: the seed's Go compactor and ours before the store's rework, measured side by side via MCP: ms
REFERENCE = [
    ["store p50", "1.43", "0.43"],
    ["query p50 @1k", "3.29", "2.07"],
    ["query p50 @10k", "17.1", "26.3"],
    ["compact to 25% @1k", "60", "274"],
    ["bulk_store 500", "149", "53"],
    ["first tool call after initialize", "69", "1.9"],
]


def rare_vocabulary(size: int = 3000, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    found: dict[str, None] = {}
    while len(found) < size:
        found["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(3, 4)))] = None
    return list(found)


RARE = rare_vocabulary()


def identifier(n: int) -> str:
    return f"{VERBS[n % len(VERBS)]}{NOUNS[(n // len(VERBS)) % len(NOUNS)]}{n}"


def make_item(n: int, rng: random.Random) -> dict[str, Any]:
    kind = KINDS[n % len(KINDS)]
    common = [rng.choice(WORDS) for _ in range(rng.randint(25, 90))]
    rare = [rng.choice(RARE) for _ in range(rng.randint(4, 8))]
    mixed = common[:]
    for word in rare:
        mixed.insert(rng.randrange(len(mixed) + 1), word)
    words = " ".join(mixed)
    name = identifier(n)
    content = {
        "error": f"Error: {name} failed: {words}",
        "decision": f"We decided to go with {name}: {words}",
        "code": f"def {name}(request):\n    # {words}\n    return None",
        "tool": f"$ make test {name}\n{words}",
        "prose": f"{words.capitalize()} ({name})",
    }[kind]
    item: dict[str, Any] = {"content": content, "importance": rng.randint(1, 10), "id": f"i{n:06d}"}
    item["_rare"] = rare
    if n % 2 == 0:
        item["summary"] = " ".join(common[:8])
    if n % 3 == 0:
        item["tags"] = [rng.choice(WORDS), kind]
    return item


@dataclass
class Corpus:
    """The workload, item by item, with the document frequency of every term stored so far."""

    rng: random.Random = field(default_factory=lambda: random.Random(7))
    made: int = 0
    df: Counter[str] = field(default_factory=Counter)
    rare_of: dict[str, list[str]] = field(default_factory=dict)

    def take(self, count: int) -> list[dict[str, Any]]:
        out = []
        for _ in range(count):
            item = make_item(self.made, self.rng)
            self.made += 1
            self.df.update(set(terms(item["content"] + " " + item.get("summary", ""))))
            self.rare_of[item["id"]] = item.pop("_rare")
            out.append(item)
        return out

    def distinctive(self, item_id: str) -> str:
        words = sorted(set(self.rare_of[item_id]), key=lambda w: (self.df[w], w))
        return " ".join(words[:3])


def common_queries(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3))) for _ in range(count)]


class Client:
    """The operations measured, in-process or over MCP (both async, so one driver runs both)."""

    store: Callable[[dict[str, Any]], Awaitable[None]]
    bulk: Callable[[list[dict[str, Any]]], Awaitable[None]]
    query: Callable[[str, int], Awaitable[list[str]]]
    recall: Callable[[int], Awaitable[None]]
    compact: Callable[[float], Awaitable[None]]
    newest: Callable[[int], Awaitable[list[str]]]


class InProcess(Client):
    def __init__(self, wm: WorkingMemory) -> None:
        self.wm = wm

    async def store(self, raw: dict[str, Any]) -> None:  # type: ignore[override]
        self.wm.store_item(**{k: v for k, v in raw.items() if k != "id"})

    async def bulk(self, items: list[dict[str, Any]]) -> None:  # type: ignore[override]
        self.wm.bulk_store(items)

    async def query(self, text: str, limit: int) -> list[str]:  # type: ignore[override]
        return [h.item.id for h in self.wm.query(text, limit)]

    async def recall(self, limit: int) -> None:  # type: ignore[override]
        self.wm.recall(limit)

    async def compact(self, target: float) -> None:  # type: ignore[override]
        self.wm.compact(target)

    async def newest(self, limit: int) -> list[str]:  # type: ignore[override]
        return [i.id for i in self.wm.list_items(0, limit)]


class OverMcp(Client):
    def __init__(self, session: Any) -> None:
        self.s = session

    async def _call(self, name: str, args: dict[str, Any]) -> Any:
        result = await self.s.call_tool(name, args)
        if result.is_error:
            raise RuntimeError(f"{name}: {result.content[0].text}")
        return result.structured_content

    async def store(self, raw: dict[str, Any]) -> None:  # type: ignore[override]
        await self._call("store", {k: v for k, v in raw.items() if k != "id"})

    async def bulk(self, items: list[dict[str, Any]]) -> None:  # type: ignore[override]
        await self._call("bulk_store", {"items": json.dumps(items)})

    async def query(self, text: str, limit: int) -> list[str]:  # type: ignore[override]
        found = await self._call("query", {"query": text, "limit": limit})
        return [h["item"]["id"] for h in found["items"]]

    async def recall(self, limit: int) -> None:  # type: ignore[override]
        await self._call("recall", {"limit": limit})

    async def compact(self, target: float) -> None:  # type: ignore[override]
        await self._call("compact", {"target": target})

    async def newest(self, limit: int) -> list[str]:  # type: ignore[override]
        found = await self._call("list", {"limit": limit})
        return [i["id"] for i in found["items"]]


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await fn()
    return (time.perf_counter() - started) * 1000


class RoundTrips:
    """Requests this process sends to Redis (one per command, pipeline or script call): a cost
    figure that, unlike a time, does not move with the machine's load. In-process runs only."""

    def __init__(self) -> None:
        from redis.connection import AbstractConnection

        self.count = 0
        send = AbstractConnection.send_packed_command

        def counting(conn: Any, command: Any, check_health: bool = True) -> None:
            self.count += 1
            send(conn, command, check_health)

        AbstractConnection.send_packed_command = counting  # type: ignore[method-assign]
        self.restore = lambda: setattr(AbstractConnection, "send_packed_command", send)


async def measure_level(
    client: Client, corpus: Corpus, level: int, trips: RoundTrips | None = None
) -> dict[str, float]:
    """Fill to ``level`` items (untimed), then time every operation and measure recall@5 (and
    count Redis round trips per call when ``trips`` is given)."""
    while corpus.made < level:
        await client.bulk(corpus.take(min(BULK, level - corpus.made)))
    # The workload's own objects (100k items' words) are not what is measured: without this,
    # the benchmark process's garbage collector walked them during the MCP client's calls and
    # added 1-3 ms to every call at 100k (a fresh client on the same 100k-item server does not).
    gc.collect()
    gc.freeze()
    out: dict[str, float] = {}
    sent = trips.count if trips else 0
    stores = [await timed(lambda raw=raw: client.store(raw)) for raw in corpus.take(100)]
    if trips:
        out["trips store"], sent = (trips.count - sent) / len(stores), trips.count
    targets = [i for i in await client.newest(300) if i.startswith("i")][::3][:50]
    sent = trips.count if trips else 0
    looks: list[float] = []
    for text in common_queries(50, seed=level):
        looks.append(await timed(lambda text=text: client.query(text, 10)))
    hits = {"words": 0, "ids": 0}
    for target in targets:
        for kind, text in (("words", corpus.distinctive(target)), ("ids", identifier(int(target[1:])))):
            started = time.perf_counter()
            found = await client.query(text, 5)
            looks.append((time.perf_counter() - started) * 1000)
            hits[kind] += target in found
    if trips:
        out["trips query"], sent = (trips.count - sent) / len(looks), trips.count
    recalls = [await timed(lambda: client.recall(10)) for _ in range(30)]
    if trips:
        out["trips recall"] = (trips.count - sent) / len(recalls)
    batches = [corpus.take(BULK) for _ in range(3)]  # made before the timings
    bulks = [await timed(lambda batch=batch: client.bulk(batch)) for batch in batches]
    compact_ms = await timed(lambda: client.compact(0.25))
    for name, values in (("store", stores), ("query", looks), ("recall", recalls), ("bulk 500", bulks)):
        out[f"{name} p50"] = percentile(values, 50)
        out[f"{name} p95"] = percentile(values, 95)
    out["compact"] = compact_ms
    out["R@5 words"] = hits["words"] / max(1, len(targets))
    out["R@5 ids"] = hits["ids"] / max(1, len(targets))
    return out


def against_bm25(wm: WorkingMemory, seed: int, count: int = 40) -> dict[str, float]:
    """Ranking against plain BM25 (see the module docstring): how many of ``count`` queries the
    reference answers right, and the share of those ours answers right too."""
    items = wm.store.memory_all(wm.session_id, archived=None)
    docs = {i.id: [*(parts := index_terms(i.content, i.summary, i.tags))[0], *parts[1]] for i in items}
    ids = sorted(docs)
    reference = BM25Okapi([docs[i] for i in ids], k1=1.2, b=0.75)
    df = Counter(t for i in ids for t in set(docs[i]))
    answered = agreed = 0
    for target in random.Random(seed).sample(ids, min(count, len(ids))):
        tf = Counter(docs[target])
        words = sorted(tf, key=lambda w: (-tf[w] * math.log(len(ids) / df[w]), w))[:3]
        scores = reference.get_scores(words)
        top = sorted(range(len(ids)), key=lambda k: (-scores[k], ids[k]))[:5]
        if target in {ids[k] for k in top}:
            answered += 1
            agreed += target in {h.item.id for h in wm.query(" ".join(words), 5)}
    return {"BM25 answered": answered, "R@5 vs BM25": agreed / max(1, answered)}


async def run_in_process(store_url: str, levels: list[int]) -> dict[int, dict[str, float]]:
    settings = load_settings(store_url=store_url)  # auto-compact on, default budget
    trips = RoundTrips() if store_url.startswith("redis") else None
    try:
        with open_store(settings) as store:
            wm = WorkingMemory(store.memory, f"bench-{uuid.uuid4().hex[:6]}", settings)
            client, corpus = InProcess(wm), Corpus()
            found = {}
            for level in levels:
                found[level] = await measure_level(client, corpus, level, trips)
                found[level] |= against_bm25(wm, seed=level)
            return found
    finally:
        if trips:
            trips.restore()


def _server(store_url: str) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "infinite_context_brain.server", "mcp"],
        cwd=str(temp_project()),
        env=bench_env(store_url),
    )


async def run_over_mcp(store_url: str, levels: list[int]) -> dict[int, dict[str, float]]:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async with stdio_client(_server(store_url)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("status", {})  # the brain is open before the timings
        client, corpus = OverMcp(session), Corpus()
        return {level: await measure_level(client, corpus, level) for level in levels}


async def first_call(store_url: str, pause: float, runs: int = 5) -> float:
    """ms of the first `recall` after `initialize` (after ``pause`` seconds), p50 of ``runs``."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    times = []
    for _ in range(runs):
        async with stdio_client(_server(store_url)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await asyncio.sleep(pause)
            times.append(await timed(lambda session=session: session.call_tool("recall", {})))
    return percentile(times, 50)


def first_calls(redis_url: str | None, runs: int = 5) -> dict[str, tuple[float, float]]:
    """The first `recall` right after `initialize` and 0.5 s after, per backend (p50 of ``runs``);
    printed alone by ``run.py --only first-call`` (the start-up figures without the rest)."""
    urls = {"sqlite": f"sqlite:///{Path(scratch('ic-bench-mem-')) / 'brain.db'}"}
    if redis_url:
        urls["redis"] = redis_url
    first = {
        backend: (asyncio.run(first_call(url, 0.0, runs)), asyncio.run(first_call(url, 0.5, runs)))
        for backend, url in urls.items()
    }
    table(
        f"First tool call (recall) after initialize, via MCP (ms, p50 of {runs})",
        ["", "right after", "0.5 s after"],
        [[backend, round(a, 2), round(b, 2)] for backend, (a, b) in first.items()],
    )
    return first


COLUMNS = [
    "store p50", "store p95", "query p50", "query p95", "recall p50", "recall p95",
    "bulk 500 p50", "bulk 500 p95", "compact", "R@5 words", "R@5 ids",
]  # fmt: skip


def goals(results: dict[str, dict[int, dict[str, float]]]) -> None:
    rows: list[list[object]] = []

    def check(name: str, value: float, goal: float, unit: str = "ms", lower: bool = True) -> None:
        ok = value <= goal if lower else value >= goal
        shown = f"{value:.2f}" + ("x" if unit == "x" else "")
        rows.append([name, shown, f"{'<=' if lower else '>='} {goal:g}", "yes" if ok else "NO"])

    go_compact = float(next(row[2] for row in REFERENCE if row[0].startswith("compact")))
    for backend in ("sqlite", "redis"):
        mcp = results.get(f"{backend} via MCP")
        if mcp:
            base = mcp[min(mcp)]
            for level, r in sorted(mcp.items())[1:]:
                for op in ("store", "query", "recall"):
                    check(
                        f"{backend} MCP {op} p50 @{level // 1000}k / @1k",
                        r[f"{op} p50"] / base[f"{op} p50"],
                        1.5,
                        "x",
                    )
            if 1000 in mcp:
                compact = mcp[1000]["compact"] / go_compact
                check(f"{backend} MCP compact @1k / Go compactor", compact, 0.5, "x")
        for name, levels in results.items():
            if name.startswith(backend):
                for level, r in sorted(levels.items()):
                    if "R@5 vs BM25" in r:
                        check(
                            f"{name} R@5 vs plain BM25 @{level // 1000}k",
                            r["R@5 vs BM25"],
                            0.9,
                            "",
                            lower=False,
                        )
                    check(f"{name} R@5 words @{level // 1000}k", r["R@5 words"], 0.9, "", lower=False)
                    check(f"{name} R@5 ids @{level // 1000}k", r["R@5 ids"], 1.0, "", lower=False)
    table("Goals", ["", "measured", "goal", "met"], rows)


def run(
    redis_url: str | None,
    quick: bool = False,
    levels: list[int] | None = None,
    backends: list[str] | None = None,
) -> None:
    """``levels`` / ``backends`` narrow a run (e.g. ``--levels 1000 --backends redis`` while
    comparing a change side by side with its base); the goals table then checks only those."""
    levels = levels or ([1_000, 10_000] if quick else [1_000, 10_000, 100_000])

    def fresh() -> str:
        return f"sqlite:///{Path(scratch('ic-bench-mem-')) / 'brain.db'}"

    urls = {"sqlite": fresh}
    if redis_url:
        urls["redis"] = lambda: redis_url  # each run uses its own session (project)
    urls = {name: url for name, url in urls.items() if not backends or name in backends}
    results: dict[str, dict[int, dict[str, float]]] = {}
    first: dict[str, tuple[float, float]] = {}
    for backend, url in urls.items():
        results[f"{backend} in-process"] = asyncio.run(run_in_process(url(), levels))
        results[f"{backend} via MCP"] = asyncio.run(run_over_mcp(url(), levels))
        first[backend] = (asyncio.run(first_call(url(), 0.0)), asyncio.run(first_call(url(), 0.5)))
    table(
        "Go compactor (seed) vs ours before the store's rework, via MCP (ms; measured on another machine)",
        ["", "ours before", "Go peer"],
        REFERENCE,
    )
    for name, levels_found in results.items():
        rows: list[list[object]] = [
            [f"{level // 1000}k", *[round(r[c], 2) for c in COLUMNS]]
            for level, r in sorted(levels_found.items())
        ]
        table(f"Working memory, {name}, auto-compact on (ms; recall@5 as a share)", ["items", *COLUMNS], rows)
    table(
        "Ranking against plain BM25 (rank_bm25), in-process: queries of an item's 3 highest tf-idf words",
        ["", "items", "answered by BM25 (of 40)", "ours too (share)"],
        [
            [name, f"{level // 1000}k", int(r["BM25 answered"]), round(r["R@5 vs BM25"], 2)]
            for name, levels_found in results.items()
            for level, r in sorted(levels_found.items())
            if "R@5 vs BM25" in r
        ],
    )
    counted = results.get("redis in-process", {})
    if counted and "trips query" in counted[min(counted)]:
        table(
            "Redis round trips per call, in-process (means: they should not grow with the items)",
            ["items", "store", "query", "recall"],
            [
                [f"{level // 1000}k", *[round(r[f"trips {op}"], 2) for op in ("store", "query", "recall")]]
                for level, r in sorted(counted.items())
            ],
        )
    table(
        "First tool call (recall) after initialize, via MCP (ms, p50 of 5)",
        ["", "right after", "0.5 s after"],
        [[backend, round(a, 2), round(b, 2)] for backend, (a, b) in first.items()],
    )
    goals(results)
