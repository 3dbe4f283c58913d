"""Language-server benchmarks.

* cold start: spawn -> `initialize` result, ours and a bare one-request pygls server, interleaved;
* custom requests over stdio: p50/p95 of status, resume, checkpoint (offline merge);
* notification latency: another process checkpoints the folder's brain -> our
  `infiniteContext/budget` notification with the new version arrives (change feed);
* context meter: a reply appended to a 3 MB live Claude Code transcript -> the notification with
  its figures (the server polls once a second), and in process the cost of one meter refresh
  (full re-read vs the incremental cursor) and of the budget figures (``status`` vs ``budget``).
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from common import bench_env, median, percentile, scratch, table, temp_project

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parents[1] / "shared" / "fixtures" / "claude-code"
BIG = FIXTURES / "spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


class Client:
    """Just enough LSP framing to drive a server over pipes."""

    def __init__(self, cmd: list[str], env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            cmd, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while (line := out.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line:
                return
            self.messages.put(json.loads(out.read(length)))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def request(self, method: str, params: Any) -> Any:
        self._next += 1
        ident = self._next
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        while True:
            message = self.messages.get(timeout=60)
            if message.get("id") == ident and "method" not in message:
                if "error" in message:
                    raise RuntimeError(message["error"])
                return message["result"]

    def wait_notification(self, method: str, predicate: Any, timeout: float = 10) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                message = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if message.get("method") == method and predicate(message.get("params") or {}):
                return message["params"]  # type: ignore[no-any-return]
        raise TimeoutError(method)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _init_params(folder: Path, store_url: str) -> dict[str, Any]:
    return {
        "processId": None,
        "rootUri": folder.as_uri(),
        "capabilities": {},
        "workspaceFolders": [{"uri": folder.as_uri(), "name": folder.name}],
        "initializationOptions": {"storeUrl": store_url},
    }


def cold_start(runs: int, store_url: str) -> None:
    ours = [sys.executable, "-m", "infinite_context_brain.server", "lsp", "--stdio"]
    bare = [sys.executable, str(HERE / "bare_lsp_server.py")]
    times: dict[str, list[float]] = {"ours": [], "bare": []}
    for _ in range(runs):
        for name, cmd in (("ours", ours), ("bare", bare)):
            project = temp_project()
            started = time.perf_counter()
            client = Client(cmd, bench_env(store_url), project)
            client.request("initialize", _init_params(project, store_url))
            times[name].append((time.perf_counter() - started) * 1000)
            client.close()
    rows = [
        ("infinite-context lsp", median(times["ours"]), percentile(times["ours"], 95)),
        ("bare pygls server", median(times["bare"]), percentile(times["bare"], 95)),
        ("ratio (median)", median(times["ours"]) / median(times["bare"]), ""),
    ]
    table(
        f"LSP cold start: spawn -> initialize result ({runs} runs each, ms)", ["server", "p50", "p95"], rows
    )


def requests_and_notifications(calls: int, store_url: str) -> None:
    from infinite_context_brain.core.brain import ProjectBrain
    from infinite_context_brain.core.config import load_settings

    project = temp_project()
    client = Client(
        [sys.executable, "-m", "infinite_context_brain.server", "lsp"], bench_env(store_url), project
    )
    try:
        client.request("initialize", _init_params(project, store_url))
        client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        client.wait_notification("infiniteContext/budget", lambda p: True)
        uri = project.as_uri()
        rows = []
        for method, params in (
            ("infiniteContext/checkpoint", {"folderUri": uri, "context": "Current task: bench src/app.py"}),
            ("infiniteContext/status", {"folderUri": uri}),
            ("infiniteContext/resume", {"folderUri": uri}),
        ):
            samples = []
            for _ in range(calls):
                started = time.perf_counter()
                client.request(method, params)
                samples.append((time.perf_counter() - started) * 1000)
            rows.append((method, percentile(samples, 50), percentile(samples, 95)))
        table(f"LSP custom requests over stdio ({calls} calls each, ms)", ["request", "p50", "p95"], rows)

        latencies = []
        settings = load_settings(store_url=store_url, project_root=project)
        with ProjectBrain.open(settings=settings) as brain:  # "another process": not the server
            for n in range(20):
                while not client.messages.empty():
                    client.messages.get_nowait()
                started = time.perf_counter()
                version = brain.checkpoint(f"Done: step {n} in src/app.py").version
                client.wait_notification("infiniteContext/budget", lambda p, v=version: p.get("version") == v)
                latencies.append((time.perf_counter() - started) * 1000)
        table(
            "Budget notification after another process's checkpoint (20 writes, ms; goal < 1,000)",
            ["", "p50", "p95", "max"],
            [("write -> notification", percentile(latencies, 50), percentile(latencies, 95), max(latencies))],
        )
    finally:
        client.close()


def _reply(n: int) -> bytes:
    usage = {"input_tokens": 1, "cache_read_input_tokens": 100_000 + n, "output_tokens": 5}
    message = {"id": f"msg_bench_{n}", "model": "claude-opus-4-6", "content": [], "usage": usage}
    line = {"type": "assistant", "uuid": f"bench-{n}", "isSidechain": False, "message": message}
    return json.dumps(line).encode() + b"\n"


def live_transcript(appends: int, store_url: str) -> None:
    """A reply appended to the folder's live transcript -> the budget notification with its figures."""
    import shutil

    from infinite_context_brain.core.transcript.locate import project_slug

    project = temp_project()
    config = Path(scratch("ic-bench-claude-"))
    live = config / "projects" / project_slug(project.resolve()) / "session.jsonl"
    live.parent.mkdir(parents=True)
    shutil.copy(BIG, live)
    env = bench_env(store_url) | {"CLAUDE_CONFIG_DIR": str(config)}
    client = Client([sys.executable, "-m", "infinite_context_brain.server", "lsp"], env, project)
    latencies = []
    try:
        client.request("initialize", _init_params(project, store_url))
        client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        client.wait_notification("infiniteContext/budget", lambda p: p.get("contextTokens"), timeout=60)
        for n in range(appends):
            with open(live, "ab") as handle:
                handle.write(_reply(n))
            started = time.perf_counter()
            expected = 100_001 + n
            client.wait_notification(
                "infiniteContext/budget", lambda p, e=expected: p.get("contextTokens") == e
            )
            latencies.append((time.perf_counter() - started) * 1000)
    finally:
        client.close()
    table(
        f"Budget notification after a reply is appended to a {BIG.stat().st_size / 1e6:.1f} MB live "
        f"transcript ({appends} appends, ms; the server polls every 1,000 ms)",
        ["", "p50", "p95", "max"],
        [("append -> notification", percentile(latencies, 50), percentile(latencies, 95), max(latencies))],
    )


def in_process_costs(runs: int, store_url: str) -> None:
    """What the server does per change, timed in process: the meter refresh and the budget figures."""
    import shutil

    from infinite_context_brain.core.brain import ProjectBrain
    from infinite_context_brain.core.config import load_settings
    from infinite_context_brain.core.transcript import meter

    live = Path(scratch("ic-bench-live-")) / "session.jsonl"
    shutil.copy(BIG, live)
    full, incremental = [], []
    running = meter.IncrementalMeter(live)
    running.update()
    for n in range(runs):
        with open(live, "ab") as handle:
            handle.write(_reply(n))
        started = time.perf_counter()
        meter.measure(live)
        full.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        running.update()
        incremental.append((time.perf_counter() - started) * 1000)
    rows: list[tuple[object, ...]] = [
        ("meter: full re-read (measure)", percentile(full, 50), percentile(full, 95)),
        ("meter: incremental (IncrementalMeter)", percentile(incremental, 50), percentile(incremental, 95)),
    ]

    project = temp_project()
    for n in range(40):  # a brain with a full history and active files, as after a day of work
        (project / "src" / f"mod{n}.py").write_text("# bench\n")
    settings = load_settings(store_url=store_url, project_root=project)
    with ProjectBrain.open(settings=settings) as brain:
        for n in range(8):
            files = " ".join(f"src/mod{k}.py" for k in range(n * 5, n * 5 + 5))
            brain.checkpoint(f"Current task: step {n}. Edited {files}. Decided: keep step {n}.")
        for name, call in (("status", brain.status), ("budget", brain.budget)):
            samples = []
            for _ in range(runs):
                started = time.perf_counter()
                call()
                samples.append((time.perf_counter() - started) * 1000)
            rows.append((f"brain.{name}()", percentile(samples, 50), percentile(samples, 95)))
    table(
        f"Per-change work in process ({runs} runs, ms; a {BIG.stat().st_size / 1e6:.1f} MB transcript, "
        "a brain with 8 versions and 40 active files)",
        ["", "p50", "p95"],
        rows,
    )


def run(quick: bool, store_url: str) -> None:
    cold_start(5 if quick else 15, store_url)
    requests_and_notifications(30 if quick else 200, store_url)
    live_transcript(5 if quick else 20, store_url)
    in_process_costs(10 if quick else 50, store_url)
