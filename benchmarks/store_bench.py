"""Store benchmarks, side by side in one run.

* MCP round trips (status / resume / offline checkpoint) on SQLite and on Redis;
  goal: Redis p50 <= 5 ms for status and resume.
* Throughput of 8 concurrent writer processes x 25 checkpoints on each backend, with the
  compare-and-set attempts they needed (1 = no retry).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from common import bench_env, scratch, table, temp_project

LOOP = Path(__file__).resolve().parents[1] / "tests" / "helpers" / "checkpoint_loop.py"


@contextmanager
def redis_server() -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is needed for the store benchmarks (apt-get install redis-server)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    workdir = scratch("ic-bench-redis-")
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            workdir,
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait()


def writers(store_url: str, processes: int = 8, each: int = 25) -> list[object]:
    project = temp_project()
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, str(LOOP), str(project), str(each), str(n)],
            env=bench_env(store_url),
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(processes)
    ]
    attempts: Counter[int] = Counter()
    versions: list[int] = []
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        for line in out.splitlines():
            version, tries = line.split()
            versions.append(int(version))
            attempts[int(tries)] += 1
    elapsed = time.perf_counter() - started
    ok = sorted(versions) == list(range(1, processes * each + 1))
    spread = ", ".join(f"{k}: {v}" for k, v in sorted(attempts.items()))
    return [len(versions) / elapsed, elapsed, spread, "yes" if ok else "NO"]


def run(calls: int, sqlite_url: str) -> None:
    import mcp_bench

    with redis_server() as redis_url:
        rows = []
        for label, url in (("sqlite", sqlite_url), ("redis", redis_url)):
            for tool, p50, p95, goal in mcp_bench._run_round_trips(calls, url):
                redis_goal = "p50 <= 5" if tool in ("status", "resume") else "-"
                rows.append([f"{tool} ({label})", p50, p95, goal if label == "sqlite" else redis_goal])

        table(
            f"MCP round trips, SQLite vs Redis ({calls} calls each, ms)",
            ["tool (backend)", "p50", "p95", "goal"],
            rows,
        )
        throughput = [["sqlite", *writers(sqlite_url)], ["redis", *writers(redis_url)]]
        table(
            "8 writer processes x 25 checkpoints (wall time includes interpreter start)",
            ["backend", "checkpoints/s", "seconds", "CAS attempts: count", "versions 1..200"],
            throughput,
        )
