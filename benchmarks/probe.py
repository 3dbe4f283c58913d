"""A bounded fault-and-fuzz probe of the real servers and stores; prints one table.

    .venv/bin/python benchmarks/probe.py [--inputs 150] [--kills 10] [--seed 17]     (make probe)

Per backend (SQLite file, a throwaway redis-server on a loopback port):
* MCP and LSP servers, real processes over stdio: generated bad requests (lone surrogates, deep
  nesting, 64-bit overflow, Infinity/NaN, huge and odd ids, wrong types, broken JSON, frames
  without Content-Length), each followed by a good one. Counted: a crash (process gone), a hang
  (no reply within 2 s), a traceback in a reply, a wrong success (a bad input accepted).
* hooks: garbage on stdin for each event; a crash is a non-zero exit or a traceback on stderr.
* secrets: every line of tests/core/secret_corpus.py stored through checkpoint and memory (content,
  summary, tags); then the SQLite file / every Redis key and value, and the data
  dir are searched for the secret parts.
* kill -9: a writer process stores memory items and prints each id once the call returned;
  it is killed at a random moment, N times; every printed id must be in the store.

Bounded: every count is a flag, every wait has a timeout; loopback only. Goal: all zeros.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.core.secret_corpus import CORPUS  # noqa: E402
from tests.helpers.raw_stdio import RawServer, has_traceback, start_lsp, start_mcp  # noqa: E402
from tests.helpers.redis_servers import RedisServer, free_port  # noqa: E402

PY = sys.executable
HANG_SECONDS = 2.0
COLUMNS = ["inputs", "crashes", "hangs", "tracebacks", "wrong successes", "secrets persisted", "writes lost"]


def env_for(url: str, data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INFINITE_CONTEXT_", "REDIS_URL"))}
    env.update(
        INFINITE_CONTEXT_STORE_URL=url,
        INFINITE_CONTEXT_DATA_DIR=str(data),
        INFINITE_CONTEXT_MERGE_MODE="offline",
        INFINITE_CONTEXT_REFINE="off",
        GEMINI_API_KEY="",
        ANTHROPIC_API_KEY="",
    )
    return env


# ---- generated bad values --------------------------------------------------------------------
def bad_values(rng: random.Random) -> list[str]:
    """JSON texts (as sent) that no argument of ours accepts."""
    depth = rng.choice([70, 300, 5_000, 100_000])
    return [
        '"cut \\ud83d"',
        '"\\udc00 low"',
        "[" * depth + "]" * depth,
        str(2**63 + rng.randint(0, 1000)),
        str(-(2**64)),
        "Infinity",
        "-Infinity",
        "NaN",
        json.dumps("x" * rng.choice([129, 10_000, 10_000_000])),
        '"../../etc/passwd"',
        '"}brace{"',
        '""',
        "true",
        "{}",
        "-5",
    ]


MCP_TARGETS = [  # (tool, argument, the valid rest)
    ("store", "content", {}),
    ("store", "importance", {"content": "x"}),
    ("store", "tags", {"content": "x"}),
    ("store", "summary", {"content": "x"}),
    ("forget", "id", {}),
    ("pin", "id", {}),
    ("update", "id", {"content": "x"}),
    ("list", "offset", {}),
    ("list", "limit", {}),
    ("compact", "target", {}),
    ("configure", "threshold", {}),
    ("configure", "budget", {}),
    ("history", "limit", {}),
    ("diff", "from_version", {"to_version": 1}),
    ("rollback", "version", {}),
    ("resume", "max_tokens", {}),
    ("checkpoint", "token_count", {"context": "x"}),
    ("checkpoint", "context", {}),
    ("expand", "tool_use_id", {}),
    ("expand", "offset", {"tool_use_id": "toolu_01ABC"}),
    ("query", "query", {}),
]
LSP_TARGETS = [
    ("checkpoint", "context", {}),
    ("checkpoint", "tokenCount", {"context": "x"}),
    ("resume", "maxTokens", {}),
    ("history", "limit", {}),
    ("rollback", "steps", {}),
    ("diff", "from", {"to": 1}),
    ("status", "folderUri", {}),
]
#: values that are valid for some arguments (an empty summary, a list of tags, a 129-char text)
MAYBE_VALID = {"{}", "true", "-5", '""'}
#: free-text arguments: any valid string is fine there (only surrogates, depth, size are refused)
TEXT_ARGS = {"content", "summary", "query", "context", "folderUri"}


def must_fail(arg: str, value: str) -> bool:
    if value in MAYBE_VALID:
        return False
    # any valid string is fine for a free-text argument
    free_text = arg in TEXT_ARGS and value.startswith('"') and "\\ud" not in value
    return not (free_text and len(value) < 100_000)


class Tally:
    def __init__(self) -> None:
        self.counts = dict.fromkeys(COLUMNS, 0)
        self.examples: list[str] = []

    def add(self, column: str, example: str = "") -> None:
        self.counts[column] += 1
        if example and len(self.examples) < 12:
            self.examples.append(f"{column}: {example[:160]}")


def _judge(tally: Tally, server: RawServer, msg_id: int, label: str, refuse: bool, mcp: bool) -> None:
    tally.add("inputs")
    reply = server.reply(msg_id, HANG_SECONDS)
    if not server.alive():
        tally.add("crashes", label)
        return
    if reply is None:
        tally.add("hangs", label)
        return
    opaque = re.search(r'Error executing tool \w+"', json.dumps(reply))  # the name and nothing else
    if has_traceback(reply) or opaque:
        tally.add("tracebacks", label)
    failed = "error" in reply or (mcp and reply.get("result", {}).get("isError"))
    if refuse and not failed:
        tally.add("wrong successes", label)


def fuzz_mcp(root: Path, env: dict[str, str], count: int, rng: random.Random, tally: Tally) -> None:
    server = start_mcp(root, env)
    try:
        for n in range(count):
            if not server.alive():
                server.close()
                server = start_mcp(root, env)
            tool, arg, rest = rng.choice(MCP_TARGETS)
            value = rng.choice(bad_values(rng))
            args = json.dumps(rest)[:-1] + (", " if rest else "") + f'"{arg}": {value}}}'
            msg_id = 1000 + n
            if rng.random() < 0.08:
                line = f'{{"jsonrpc":"2.0","id":{msg_id},"method":"tools/call","params":{{"name":"{tool}"'
            else:
                line = (
                    f'{{"jsonrpc":"2.0","id":{msg_id},"method":"tools/call",'
                    f'"params":{{"name":"{tool}","arguments":{args}}}}}'
                )
            server.send(line)
            _judge(tally, server, msg_id, f"mcp {tool}.{arg}={value[:40]}", must_fail(arg, value), mcp=True)
    finally:
        server.close()


def fuzz_lsp(root: Path, env: dict[str, str], count: int, rng: random.Random, tally: Tally) -> None:
    server = start_lsp(root, env)
    try:
        for n in range(count):
            if not server.alive():
                server.close()
                server = start_lsp(root, env)
            method, arg, rest = rng.choice(LSP_TARGETS)
            value = rng.choice(bad_values(rng))
            params = json.dumps(rest)[:-1] + (", " if rest else "") + f'"{arg}": {value}}}'
            msg_id = 1000 + n
            body = f'{{"jsonrpc":"2.0","id":{msg_id},"method":"infiniteContext/{method}","params":{params}}}'
            if rng.random() < 0.05:  # a frame without Content-Length, then a good one must still work
                server.send_raw(b"Content-Type: application/json\r\n\r\n" + body.encode())
                server.request(msg_id + 50_000, "infiniteContext/status", {})
                tally.add("inputs")
                if server.reply(msg_id + 50_000, HANG_SECONDS) is None:
                    tally.add("hangs", "lsp: stream desynchronised after a frame without Content-Length")
                server.reply(msg_id, 0.5)
                continue
            server.send(body)
            _judge(
                tally, server, msg_id, f"lsp {method}.{arg}={value[:40]}", must_fail(arg, value), mcp=False
            )
    finally:
        server.close()


def fuzz_hooks(root: Path, env: dict[str, str], rng: random.Random, tally: Tally) -> None:
    inputs = [
        b"",
        b"not json",
        b"[]",
        b'{"session_id": "\\ud83d"}',
        b"{" * 5000,
        os.urandom(200),
        b'{"transcript_path": "/dev/zero", "session_id": "x"}',
        b'{"hook_event_name": 5}',
    ]
    for event in ("session-start", "session-end", "pre-compact", "post-tool-use"):
        for data in rng.sample(inputs, 4):
            tally.add("inputs")
            try:
                done = subprocess.run(
                    [PY, "-m", "infinite_context_brain.server", "hook", event],
                    input=data,
                    cwd=root,
                    env=env,
                    capture_output=True,
                    timeout=10,
                )
            except subprocess.TimeoutExpired:
                tally.add("hangs", f"hook {event} {data[:30]!r}")
                continue
            if done.returncode != 0:
                tally.add("crashes", f"hook {event} exit {done.returncode}")
            if b"Traceback" in done.stdout or b"Traceback" in done.stderr:
                tally.add("tracebacks", f"hook {event} {data[:30]!r}")


# ---- secrets ---------------------------------------------------------------------------------
def plant_secrets(root: Path, env: dict[str, str], tally: Tally) -> list[str]:
    """Store every corpus line through the brain's write paths; returns the secret parts."""
    code = r"""
import json, sys
from infinite_context_brain.core.brain import ProjectBrain
lines = json.load(sys.stdin)
brain = ProjectBrain.open(sys.argv[1])
memory = brain.memory()
for n, line in enumerate(lines):
    brain.checkpoint("Done: " + line + "\nCommand: " + line)
    memory.store_item(content=line, summary=line[:80], tags=[line[:90]])
brain.close()
"""
    lines = [line for line, _secret in CORPUS.values()]
    tally.counts["inputs"] += len(lines)
    done = subprocess.run(
        [PY, "-c", code, str(root)],
        input=json.dumps(lines).encode(),
        env=env,
        capture_output=True,
        timeout=300,
    )
    if done.returncode != 0:
        tally.add("crashes", "secret planting: " + done.stderr.decode(errors="replace")[-300:])
    return [s for _line, secrets in CORPUS.values() for s in secrets]


def persisted_text(url: str, data: Path, root: Path) -> str:
    parts: list[str] = []
    if url.startswith("redis"):
        import redis

        client = redis.Redis.from_url(url)
        for key in client.scan_iter(count=1000):
            parts.append(key.decode(errors="replace"))
            kind = client.type(key).decode()
            if kind == "string":
                parts.append(str(client.get(key)))
            elif kind == "hash":
                parts.append(str(client.hgetall(key)))
            elif kind == "list":
                parts.append(str(client.lrange(key, 0, -1)))
            elif kind == "set":
                parts.append(str(client.smembers(key)))
            elif kind == "zset":
                parts.append(str(client.zrange(key, 0, -1, withscores=True)))
    for folder in (data, root):
        for path in folder.rglob("*"):
            if path.is_file():
                if path.suffix == ".db" or path.name.endswith((".db-wal", ".db-shm")):
                    parts.append(path.read_bytes().decode("latin-1"))
                    if path.suffix == ".db":
                        parts.append(
                            subprocess.run(
                                ["sqlite3", str(path), ".dump"],
                                capture_output=True,
                                text=True,
                                errors="replace",
                            ).stdout
                            if shutil.which("sqlite3")
                            else ""
                        )
                else:
                    parts.append(path.read_text(errors="replace"))
    return "\n".join(parts)


# ---- kill -9 during writes -------------------------------------------------------------------
WRITER = r"""
import sys, uuid
from infinite_context_brain.core.brain import ProjectBrain
memory = ProjectBrain.open(sys.argv[1]).memory()
prefix = sys.argv[2]
n = 0
while True:
    item_id = f"{prefix}-{n}"
    memory.bulk_store([{"id": item_id, "content": f"write {n} " + uuid.uuid4().hex}])
    print(item_id, flush=True)
    n += 1
"""


def kill_writers(root: Path, env: dict[str, str], kills: int, rng: random.Random, tally: Tally) -> None:
    acked: list[str] = []
    for k in range(kills):
        proc = subprocess.Popen(
            [PY, "-c", WRITER, str(root), f"k{k}"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        time.sleep(rng.uniform(0.6, 1.5))
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=10)
        acked += out.decode().split()
    tally.counts["inputs"] += len(acked)
    check = r"""
import json, sys
from infinite_context_brain.core.brain import ProjectBrain
memory = ProjectBrain.open(sys.argv[1]).memory()
print(json.dumps([i["id"] for i in memory.export(summaries_only=True)]))
"""
    done = subprocess.run([PY, "-c", check, str(root)], env=env, capture_output=True, timeout=120)
    found = set(json.loads(done.stdout or b"[]"))
    for item_id in acked:
        if item_id not in found:
            tally.add("writes lost", item_id)


# ---- the run ---------------------------------------------------------------------------------
def run_backend(name: str, url: str, work: Path, args: argparse.Namespace, rng: random.Random) -> Tally:
    tally = Tally()
    root, data = work / f"{name}-project", work / f"{name}-data"
    root.mkdir()
    (root / ".git").mkdir()
    env = env_for(url, data)
    fuzz_mcp(root, env, args.inputs, rng, tally)
    fuzz_lsp(root, env, args.inputs, rng, tally)
    fuzz_hooks(root, env, rng, tally)
    secrets = plant_secrets(root, env, tally)
    text = persisted_text(url, data, root)
    for secret in secrets:
        if secret and secret in text:
            tally.add("secrets persisted", secret[:12] + "...")
    kill_writers(root, env, args.kills, rng, tally)
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=150, help="bad requests per server and backend")
    parser.add_argument("--kills", type=int, default=10, help="kill -9 of a writer per backend")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--backend", choices=["sqlite", "redis", "both"], default="both")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="ic-probe-"))
    results: dict[str, Tally] = {}
    redis_server: RedisServer | None = None
    try:
        if args.backend in ("sqlite", "both"):
            results["SQLite"] = run_backend("sqlite", f"sqlite:///{work / 'brain.db'}", work, args, rng)
        if args.backend in ("redis", "both"):
            redis_server = RedisServer(free_port(), work / "redis")
            redis_server.start()
            results["Redis"] = run_backend("redis", redis_server.url, work, args, rng)
    finally:
        if redis_server is not None:
            redis_server.stop()
        shutil.rmtree(work, ignore_errors=True)
    width = max(len(c) for c in COLUMNS)
    print(f"{'':<{width}}  " + "  ".join(f"{name:>8}" for name in results))
    for column in COLUMNS:
        print(f"{column:<{width}}  " + "  ".join(f"{t.counts[column]:>8}" for t in results.values()))
    print(f"({time.monotonic() - started:.0f} s; seed {args.seed})")
    bad = False
    for name, tally in results.items():
        for example in tally.examples:
            print(f"  {name}: {example}")
        bad = bad or any(v for k, v in tally.counts.items() if k != "inputs")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
