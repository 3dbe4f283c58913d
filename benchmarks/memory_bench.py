"""Working-memory benchmark (issue: working memory), the seed's compactor workload.

1,000 `store` calls (five content kinds, 25-90 words each, half with a summary, a third with
tags, fixed seed), then 50 `query` calls (limit 10), then `compact` to 25% of a 200K budget;
then query p50 again with 10,000 items. Measured in-process on each backend (the operation's
own cost) and, for SQLite, through the real MCP client over stdio (what an assistant sees).
The peer, the Go compactor through the Python mcp client on this machine kind: store p50
0.42-0.6 ms, query p50 1.4-2.5 ms, compact 600-850 ms.
Goals: store p50 <= 0.5 ms, query p50 <= 1.5 ms, compact <= 150 ms, query p50 <= 5 ms at 10k.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from common import bench_env, percentile, table, temp_project

from infinite_context.core.config import load_settings
from infinite_context.core.memory.working import WorkingMemory
from infinite_context.core.storage import open_store

WORDS = (
    "cache redis session token parse response handler request user config deploy queue worker retry "
    "timeout schema migration index query latency budget compact summary error panic trace file module "
    "function class interface test fixture build release docker kubernetes postgres python typescript"
).split()
KINDS = ["error", "decision", "code", "tool", "prose"]


def workload(count: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    items = []
    for n in range(count):
        kind = KINDS[n % len(KINDS)]
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(25, 90)))
        content = {
            "error": f"Error: {words}",
            "decision": f"We decided to go with {words}",
            "code": f"def handler_{n}(request):\n    # {words}\n    return None",
            "tool": f"$ make test\n{words}",
            "prose": words.capitalize(),
        }[kind]
        item: dict[str, Any] = {"content": content, "importance": rng.randint(1, 10)}
        if n % 2 == 0:
            item["summary"] = " ".join(words.split()[:8])
        if n % 3 == 0:
            item["tags"] = [rng.choice(WORDS), kind]
        items.append(item)
    return items


def queries(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3))) for _ in range(count)]


def in_process(store_url: str) -> dict[str, float]:
    settings = load_settings(store_url=store_url, budget=200_000, memory_auto_compact=False)
    with open_store(settings) as store:
        wm = WorkingMemory(store, f"bench-{uuid.uuid4().hex[:6]}", settings)
        stores = []
        for raw in workload(1000):
            started = time.perf_counter()
            wm.store_item(**raw)
            stores.append((time.perf_counter() - started) * 1000)
        looks = []
        for text in queries(50):
            started = time.perf_counter()
            wm.query(text, 10)
            looks.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        report = wm.compact(0.25)
        compact_ms = (time.perf_counter() - started) * 1000
        wm.bulk_store(workload(9000, seed=8))  # 10,000 items in all
        big = []
        for text in queries(50, seed=12):
            started = time.perf_counter()
            wm.query(text, 10)
            big.append((time.perf_counter() - started) * 1000)
    return {
        "store p50": percentile(stores, 50),
        "store p95": percentile(stores, 95),
        "query p50": percentile(looks, 50),
        "query p95": percentile(looks, 95),
        "compact": compact_ms,
        "compacted to": float(report.after_tokens),
        "query p50 @10k": percentile(big, 50),
    }


async def over_mcp(store_url: str) -> dict[str, float]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    project = temp_project()
    params = StdioServerParameters(
        command=__import__("sys").executable,
        args=["-m", "infinite_context.server", "mcp", "--budget", "200000"],
        cwd=str(project),
        env={**bench_env(store_url), "INFINITE_CONTEXT_MEMORY_AUTO_COMPACT": "0"},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("status", {})  # open the brain outside the timings
        stores, looks = [], []
        for raw in workload(1000):
            started = time.perf_counter()
            await session.call_tool("store", raw)
            stores.append((time.perf_counter() - started) * 1000)
        for text in queries(50):
            started = time.perf_counter()
            await session.call_tool("query", {"query": text, "limit": 10})
            looks.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        await session.call_tool("compact", {"target": 0.25})
        compact_ms = (time.perf_counter() - started) * 1000
    return {
        "store p50": percentile(stores, 50),
        "store p95": percentile(stores, 95),
        "query p50": percentile(looks, 50),
        "query p95": percentile(looks, 95),
        "compact": compact_ms,
    }


def run(redis_url: str | None) -> None:
    fresh = f"sqlite:///{Path(tempfile.mkdtemp(prefix='ic-bench-mem-')) / 'brain.db'}"
    results = {"sqlite (in-process)": in_process(fresh)}
    if redis_url:
        results["redis (in-process)"] = in_process(redis_url)
    mcp_url = f"sqlite:///{Path(tempfile.mkdtemp(prefix='ic-bench-mem-')) / 'brain.db'}"
    results["sqlite via MCP stdio"] = asyncio.run(over_mcp(mcp_url))
    columns = ["store p50", "store p95", "query p50", "query p95", "compact", "query p50 @10k"]
    rows: list[list[object]] = [
        [name, *[round(r[c], 2) if c in r else "-" for c in columns]] for name, r in results.items()
    ]
    rows.append(["Go compactor via MCP (peer)", "0.42-0.6", "", "1.4-2.5", "", "600-850", ""])
    rows.append(["goal", "<= 0.5", "", "<= 1.5", "", "<= 150", "<= 5"])
    table("Working memory: 1,000 stores, 50 queries, compact to 25% of 200K (ms)", ["", *columns], rows)
