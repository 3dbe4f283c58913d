"""MCP server benchmarks (issue: foundation).

* cold start: spawn -> `initialize` reply, raw JSON-RPC over the pipes, ours and a bare one-tool
  mcp server interleaved in one run (median of N each); goal: ratio <= 1.15. Also against the
  bare server started without the garbage collector, as ours starts (our own cost beside the SDK).
* round trips through the real MCP client over stdio: p50/p95 of `status`, `resume` and an
  offline `checkpoint`; goals: resume p50 <= 5 ms, checkpoint p50 <= 20 ms.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

from common import bench_env, median, percentile, table, temp_project

HERE = Path(__file__).resolve().parent
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


def cold_start_once(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write((json.dumps(INIT) + "\n").encode())
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - started
    proc.kill()
    proc.wait()
    if b'"result"' not in line:
        raise RuntimeError(f"{cmd}: no initialize result: {line[:200]!r}")
    return elapsed * 1000


def cold_start(runs: int, store_url: str) -> None:
    project = temp_project()
    env = bench_env(store_url)
    servers = {
        "infinite-context mcp": [sys.executable, "-m", "infinite_context_brain.server", "mcp"],
        "bare one-tool mcp server": [sys.executable, str(HERE / "bare_mcp_server.py")],
        # the same start-up without the garbage collector as ours: our own cost on top of the SDK
        "bare, collector paused like ours": [sys.executable, str(HERE / "bare_mcp_server.py"), "--gc-paused"],
    }
    for cmd in servers.values():  # warm the OS file cache once
        cold_start_once(cmd, project, env)
    times: dict[str, list[float]] = {name: [] for name in servers}
    for _ in range(runs):
        for name, cmd in servers.items():
            times[name].append(cold_start_once(cmd, project, env))
    ours, bare, paused = (median(t) for t in times.values())
    table(
        f"MCP cold start, spawn -> initialize reply (ms, {runs} runs each, interleaved)",
        ["server", "median", "p95", "min"],
        [[name, median(t), percentile(t, 95), min(t)] for name, t in times.items()]
        + [
            [f"ratio (goal <= 1.15): {ours / bare:.3f}", "", "", ""],
            [f"ratio to the paused peer: {ours / paused:.3f}", "", "", ""],
        ],
    )


async def _round_trips(calls: int, store_url: str) -> list[list[object]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    project = temp_project()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "infinite_context_brain.server", "mcp"],
        cwd=str(project),
        env=bench_env(store_url),
    )
    rows: list[list[object]] = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        for i in range(10):  # a realistic state to read back, and warm-up
            await s.call_tool("checkpoint", {"context": f"Done: step {i} in src/app.py. Next: step {i + 1}."})

        async def measure(label: str, args: dict[str, object], goal: str) -> None:
            name = label.split()[0]
            times = []
            for i in range(calls):
                call_args = {k: (v.format(i=i) if isinstance(v, str) else v) for k, v in args.items()}
                t = time.perf_counter()
                result = await s.call_tool(name, call_args)
                times.append((time.perf_counter() - t) * 1000)
                if result.is_error:
                    raise RuntimeError(result.content)
            rows.append([label, median(times), percentile(times, 95), goal])

        await measure("status", {}, "-")
        await measure("resume", {}, "p50 <= 5 ms")
        await measure(
            "checkpoint (offline merge)",
            {"context": "Done: task {i} in src/auth.py. Decided: keep plan {i}. Current task: task {i}+1"},
            "p50 <= 20 ms",
        )
    return rows


def _run_round_trips(calls: int, store_url: str) -> list[list[object]]:
    return asyncio.run(_round_trips(calls, store_url))


def round_trips(calls: int, store_url: str, label: str = "sqlite") -> list[list[object]]:
    rows = _run_round_trips(calls, store_url)
    table(
        f"MCP round trips through the real client over stdio, {label} ({calls} calls each, ms)",
        ["tool", "p50", "p95", "goal"],
        rows,
    )
    return rows
