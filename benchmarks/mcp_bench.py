"""MCP server benchmarks, each against a stock-SDK peer (``bare_mcp_server.py``) measured in the
same run, interleaved, so the machine's load hits both alike; the goals are ratios.

* cold start: spawn -> `initialize` answered -> first `tools/list` answered, raw JSON-RPC over
  the pipes, ours and the peer alternately; goal: ours / peer <= 1.15 (medians).
* calls through the real MCP client over stdio, both servers open at once and called in turn:
  a working-memory `store`, and a `query` on 1,000 items, against the peer's no-op tool (a plain
  function, run in a worker thread as ours are; the coroutine one beside it); goals: store <= 1.5x
  and query <= 2.5x the no-op call (medians). `status`, `resume` and an offline `checkpoint`
  are shown beside them.
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from common import bench_env, median, percentile, table, temp_project

HERE = Path(__file__).resolve().parent
OURS = [sys.executable, "-m", "infinite_context_brain.server", "mcp"]
PEER = [sys.executable, str(HERE / "bare_mcp_server.py")]
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
WORDS = (
    "ledger invoice tenant cache widget parser session token router schema queue worker retry "
    "budget deploy migration index cursor socket buffer timeout payload checksum archive billing "
    "render layout webhook gateway scheduler replica shard snapshot rollback metric tracer"
).split()


def cold_start_once(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Milliseconds from spawn to the answer of the first `tools/list` after `initialize`."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin and proc.stdout
    try:
        proc.stdin.write((json.dumps(INIT) + "\n").encode())
        proc.stdin.flush()
        if b'"result"' not in proc.stdout.readline():
            raise RuntimeError(f"{cmd}: no initialize result")
        proc.stdin.write((json.dumps(INITIALIZED) + "\n" + json.dumps(LIST) + "\n").encode())
        proc.stdin.flush()
        line = proc.stdout.readline()
        elapsed = time.perf_counter() - started
    finally:
        proc.kill()
        proc.wait()
    if b'"tools"' not in line:
        raise RuntimeError(f"{cmd}: no tools/list result: {line[:200]!r}")
    return elapsed * 1000


def cold_start(runs: int, store_url: str) -> float:
    project = temp_project()
    env = bench_env(store_url)
    servers = {"infinite-context mcp": OURS, "stock one-file mcp server": PEER}
    for cmd in servers.values():  # warm the OS file cache once
        cold_start_once(cmd, project, env)
    times: dict[str, list[float]] = {name: [] for name in servers}
    for _ in range(runs):
        for name, cmd in servers.items():
            times[name].append(cold_start_once(cmd, project, env))
    ours, peer = (median(t) for t in times.values())
    table(
        f"MCP cold start, spawn -> initialize -> first tools/list (ms, {runs} runs each, interleaved)",
        ["server", "median", "p95", "min"],
        [[name, median(t), percentile(t, 95), min(t)] for name, t in times.items()]
        + [[f"ratio ours / stock (goal <= 1.15): {ours / peer:.3f}", "", "", ""]],
    )
    return ours / peer


async def _session(stack: AsyncExitStack, cmd: list[str], cwd: Path, env: dict[str, str]) -> Any:
    """A real MCP client session with the server ``cmd`` starts, open until ``stack`` closes."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=cmd[0], args=cmd[1:], cwd=str(cwd), env=env)
    read, write = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session


def _item(rng: random.Random, n: int) -> str:
    a, b, c, d = rng.sample(WORDS, 4)
    return f"note {n}: the {a} module calls {b}{n % 97} when the {c} step fails; see src/{d}.py"


async def _calls(rounds: int, store_url: str) -> list[list[object]]:
    from mcp.types import CallToolResult

    project = temp_project()
    env = bench_env(store_url)
    rng = random.Random(7)
    async with AsyncExitStack() as stack:
        ours = await _session(stack, OURS, project, env)
        peer = await _session(stack, PEER, project, env)
        for start in range(0, 1000, 100):  # 1,000 items to search
            batch = [{"content": _item(rng, n)} for n in range(start, start + 100)]
            done = await ours.call_tool("bulk_store", {"items": json.dumps(batch)})
            if done.is_error:
                raise RuntimeError(done.content)
        for i in range(5):
            await ours.call_tool(
                "checkpoint", {"context": f"Done: step {i} in src/app.py. Next: step {i + 1}."}
            )

        def timed(call: Callable[[int], Awaitable[CallToolResult]]) -> Callable[[int], Awaitable[float]]:
            async def run(i: int) -> float:
                t = time.perf_counter()
                result = await call(i)
                elapsed = (time.perf_counter() - t) * 1000
                if result.is_error:
                    raise RuntimeError(result.content)
                return elapsed

            return run

        words = [rng.sample(WORDS, 3) for _ in range(rounds)]
        cases: dict[str, Callable[[int], Awaitable[float]]] = {
            "stock no-op tool (plain function)": timed(lambda i: peer.call_tool("noop", {})),
            "stock no-op tool (coroutine)": timed(lambda i: peer.call_tool("noop_async", {})),
            "store": timed(
                lambda i: ours.call_tool("store", {"content": f"bench fact {i}: {' '.join(words[i])}"})
            ),
            "query, 1,000 items": timed(lambda i: ours.call_tool("query", {"query": " ".join(words[i])})),
            "status": timed(lambda i: ours.call_tool("status", {})),
            "resume": timed(lambda i: ours.call_tool("resume", {})),
            "checkpoint (offline merge)": timed(
                lambda i: ours.call_tool(
                    "checkpoint", {"context": f"Done: task {i} in src/auth.py. Current task: {i}+1"}
                )
            ),
        }
        for run in cases.values():  # warm each path once
            await run(0)
        times: dict[str, list[float]] = {name: [] for name in cases}
        names = list(cases)
        for i in range(rounds):
            shift = i % len(names)  # a different order each round: no case always follows another
            for name in names[shift:] + names[:shift]:
                times[name].append(await cases[name](i))
    floor = median(times["stock no-op tool (plain function)"])
    coroutine = median(times["stock no-op tool (coroutine)"])
    goals = {"store": "<= 1.5", "query, 1,000 items": "<= 2.5"}
    return [
        [name, median(t), percentile(t, 95), median(t) / floor, median(t) / coroutine, goals.get(name, "-")]
        for name, t in times.items()
    ]


def calls(rounds: int, store_url: str, label: str = "sqlite") -> list[list[object]]:
    rows = asyncio.run(_calls(rounds, store_url))
    table(
        f"MCP calls through the real client over stdio, {label} ({rounds} rounds, interleaved, ms)",
        ["call", "p50", "p95", "/ stock no-op", "/ stock coroutine no-op", "goal (first ratio)"],
        rows,
    )
    return rows


def _run_round_trips(rounds: int, store_url: str) -> list[list[object]]:
    """(tool, p50, p95, goal) of ``status``, ``resume`` and ``checkpoint`` (store_bench's table)."""
    rows = asyncio.run(_calls(rounds, store_url))
    return [
        [name, p50, p95, "-"]
        for name, p50, p95, *_ratios in rows
        if name in ("status", "resume", "checkpoint (offline merge)")
    ]


if __name__ == "__main__":
    from common import scratch

    url = f"sqlite:///{Path(scratch('ic-bench-store-')) / 'brain.db'}"
    quick = "--quick" in sys.argv
    cold_start(5 if quick else 20, url)
    calls(30 if quick else 200, url)
