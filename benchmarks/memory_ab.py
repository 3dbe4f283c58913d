"""Working memory over MCP, this tree against another source tree, interleaved call by call.

    python benchmarks/memory_ab.py --base /tmp/base-tree [--runs 3] [--first 7]

``--base`` is a checkout (or ``git archive`` extract) of another revision: its ``shared`` and
``server`` folders go first on the server's PYTHONPATH. On a loaded machine, two benchmark runs
one after the other differ by more than most changes; here one client drives both servers (SQLite,
1,000 items, auto-compact on) and alternates every call between them, so both see the same load.
Per run: ``store`` x150, ``query`` x150 (1-3 common words), ``recall`` x40, p50 in ms; then the
first ``recall`` right after ``initialize`` and the ``initialize`` round trip (p50 of ``--first``
fresh servers each, alternating). Every server gets a new SQLite file, so these starts include
creating it (a one-time cost on a real machine: ``mcp_bench.cold_start`` reuses one file). The
table shows the median over runs and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from common import bench_env, percentile, scratch, table, temp_project
from memory_bench import Corpus, OverMcp, common_queries, timed


def _server(root: str | None) -> Any:
    from mcp import StdioServerParameters

    env = bench_env(f"sqlite:///{Path(scratch('ic-bench-ab-')) / 'brain.db'}")
    if root:
        env["PYTHONPATH"] = f"{root}/shared:{root}/server"
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "infinite_context_brain.server", "mcp"],
        cwd=str(temp_project()),
        env=env,
    )


async def steady(roots: list[str | None]) -> list[dict[str, float]]:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async with AsyncExitStack() as stack:
        clients = []
        for root in roots:
            read, write = await stack.enter_async_context(stdio_client(_server(root)))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            await session.call_tool("status", {})  # the brain is open before the timings
            client, corpus = OverMcp(session), Corpus()
            while corpus.made < 1000:
                await client.bulk(corpus.take(500))
            clients.append((client, corpus.take(150)))
        times: list[dict[str, list[float]]] = [{"store": [], "query": [], "recall": []} for _ in roots]
        for n in range(150):
            for (client, raws), out in zip(clients, times, strict=True):
                out["store"].append(await timed(lambda c=client, r=raws[n]: c.store(r)))
        for text in common_queries(150, seed=1):
            for (client, _), out in zip(clients, times, strict=True):
                out["query"].append(await timed(lambda c=client, t=text: c.query(t, 10)))
        for _ in range(40):
            for (client, _), out in zip(clients, times, strict=True):
                out["recall"].append(await timed(lambda c=client: c.recall(10)))
        return [{op: percentile(v, 50) for op, v in out.items()} for out in times]


async def first_call(root: str | None) -> tuple[float, float]:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async with stdio_client(_server(root)) as (read, write), ClientSession(read, write) as session:
        started = time.perf_counter()
        await session.initialize()
        initialize = (time.perf_counter() - started) * 1000
        return await timed(lambda: session.call_tool("recall", {})), initialize


async def run(base: str, runs: int, first: int) -> None:
    roots: list[str | None] = [base, None]
    found: list[dict[str, list[float]]] = [{} for _ in roots]
    for _ in range(runs):
        for out, result in zip(found, await steady(roots), strict=True):
            for op, value in result.items():
                out.setdefault(op, []).append(value)
    if first:
        calls: list[list[tuple[float, float]]] = [[] for _ in roots]
        for _ in range(first):
            for n, root in enumerate(roots):
                calls[n].append(await first_call(root))
        for out, pairs in zip(found, calls, strict=True):
            out["first call"] = [percentile([a for a, _ in pairs], 50)]
            out["initialize"] = [percentile([b for _, b in pairs], 50)]
    rows = []
    for op in found[0]:
        before, after = statistics.median(found[0][op]), statistics.median(found[1][op])
        rows.append([op, round(before, 2), round(after, 2), f"{after / before:.2f}x"])
    table(
        f"Working memory over MCP at 1k items, SQLite: {base} vs this tree "
        f"(ms, p50; median of {runs} interleaved runs)",
        ["", "base", "this tree", "ratio"],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="another source tree (with shared/ and server/)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--first", type=int, default=7, help="fresh servers per side for the first call")
    args = parser.parse_args()
    asyncio.run(run(args.base, args.runs, args.first))


if __name__ == "__main__":
    main()
