"""Language-server benchmarks (issue: language server + VS Code).

* cold start: spawn -> `initialize` result, ours and a bare one-request pygls server, interleaved;
* custom requests over stdio: p50/p95 of status, resume, checkpoint (offline merge);
* notification latency: another process checkpoints the folder's brain -> our
  `infiniteContext/budget` notification with the new version arrives (change feed).
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

from common import bench_env, median, percentile, table, temp_project

HERE = Path(__file__).resolve().parent


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
    ours = [sys.executable, "-m", "infinite_context.server", "lsp", "--stdio"]
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
    from infinite_context.core.brain import ProjectBrain
    from infinite_context.core.config import load_settings

    project = temp_project()
    client = Client([sys.executable, "-m", "infinite_context.server", "lsp"], bench_env(store_url), project)
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


def run(quick: bool, store_url: str) -> None:
    cold_start(5 if quick else 15, store_url)
    requests_and_notifications(30 if quick else 200, store_url)
