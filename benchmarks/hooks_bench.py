"""Claude Code hook wall times, interpreter start included.

Part 1, each hook as Claude Code runs it: a new process, JSON on stdin. p50/p95 over N runs,
interleaved with a bare `python -c pass` (the floor) so machine noise hits both alike.
Goals (p95): SessionStart <= 400 ms, the hand-off (the worker's checkpoint of a 3 MB transcript)
<= 1,000 ms, PostToolUse (queue only) <= 50 ms, Stop (queue, and the check whether to ask the model
for a checkpoint: below the share, past it when it asks, past it once asked) <= 50 ms. The peer:
claude-mem's PostToolUse averaged 2.4 s.

Part 2, inside the real Claude Code CLI (tools/, against the scripted fake Messages API, 3 Bash
calls then the answer): each hook's wall time from its stream-json hook events
(--include-hook-events), and the whole `claude -p` run with our hooks vs our MCP server alone vs
nothing of ours. Goal: hooks add <= 100 ms per run. Our hooks as installed for this CLI
(PostToolUse and Stop as `mcp_tool` calls to the running MCP server), every hook a command
(`--hooks command`), and PostToolUse as an `http` hook (Claude Code POSTs the payload to a local
server that answers at once).

Part 3, SessionStart's wait for the hand-offs still running (``hooks.settle``), interleaved with a
SessionStart on an empty queue (the peer): beside a queued hand-off of another project whose store
is gone (it once cost every SessionStart 5.3 s), and with this project's SessionEnd queued behind
a backlog of PostToolUse records a worker is busy with (once: a 5 s wait, then no hand-off).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import bench_env, console, median, percentile, scratch, table, temp_project

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "claude-code"
BIG = FIXTURES / "spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
HOOK = [sys.executable, "-m", "infinite_context_brain.server", "hook"]
SCRIPT = [str(Path(sys.executable).parent / "infinite-context"), "hook"]
#: the worker's side of a deferred hook: the handler itself, inline
INLINE = [
    sys.executable,
    "-c",
    "import sys; from infinite_context_brain.server.claude_code import events, payloads; "
    "from infinite_context_brain.server.claude_code.hooks import run_command; "
    "run_command(events.find(sys.argv[1]), payloads.parse(sys.stdin.buffer.read()), None)",
]
#: PostToolUse records ahead of this project's SessionEnd in part 3
BACKLOG = 300


def _time(cmd: list[str], stdin: bytes, env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(cmd, input=stdin, env=env, cwd=cwd, capture_output=True)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0 or b'"level":"error"' in done.stderr:
        raise RuntimeError(f"{cmd}: {done.stderr.decode()[-500:]}")
    return elapsed


def run(runs: int, store_url: str) -> None:
    root = Path(__file__).resolve().parents[1]
    # As after `pip install`: our modules byte-compiled (an editable install does not do it).
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(root / "shared"), str(root / "server")],
        check=True,
        capture_output=True,
    )
    project = temp_project()
    data_dir = Path(scratch("ic-bench-data-"))
    env = {**bench_env(store_url), "INFINITE_CONTEXT_DATA_DIR": str(data_dir)}
    transcript = data_dir / "session.jsonl"
    shutil.copy(BIG, transcript)
    base = {"session_id": "bench", "transcript_path": str(transcript), "cwd": str(project)}
    times: dict[str, list[float]] = {
        k: []
        for k in (
            "session-start",
            "session-end",
            "post-tool-use",
            "post-tool-use-m",
            "stop",
            "stop-ask",
            "stop-asked",
            "floor",
        )
    }
    for i in range(runs):
        shutil.rmtree(data_dir / "cursors", ignore_errors=True)  # the whole 3 MB each time
        end = json.dumps({**base, "hook_event_name": "SessionEnd", "reason": "clear"}).encode()
        times["session-end"].append(_time([*INLINE, "session-end"], end, env, project))
        start = json.dumps({**base, "hook_event_name": "SessionStart", "source": "clear"}).encode()
        times["session-start"].append(_time([*HOOK, "session-start"], start, env, project))
        tool = {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q"},
            "tool_response": {
                "stdout": "collected 40 items\n" + "." * 40 + "\n40 passed in 1.2s",
                "stderr": "",
            },
            "tool_use_id": f"toolu_bench_{i}",
        }
        times["post-tool-use"].append(
            _time([*SCRIPT, "post-tool-use"], json.dumps(tool).encode(), env, project)
        )
        tool["tool_use_id"] += "m"
        times["post-tool-use-m"].append(
            _time([*HOOK, "post-tool-use"], json.dumps(tool).encode(), env, project)
        )
        stop = json.dumps({**base, "hook_event_name": "Stop"}).encode()
        times["stop"].append(_time([*SCRIPT, "stop"], stop, env, project))
        asking = {**env, "INFINITE_CONTEXT_CHECKPOINT_NUDGE": "0.3"}  # past the share: it asks
        shutil.rmtree(data_dir / "asks", ignore_errors=True)  # not asked yet: the whole file
        times["stop-ask"].append(_time([*SCRIPT, "stop"], stop, asking, project))
        times["stop-asked"].append(_time([*SCRIPT, "stop"], stop, asking, project))
        times["floor"].append(_time([sys.executable, "-c", "pass"], b"", env, project))
    goals = {
        "session-start": 400,
        "session-end": 1000,
        "post-tool-use": 50,
        "stop": 50,
        "stop-ask": 50,
        "stop-asked": 50,
    }
    rows = []
    for name, label in (
        ("session-start", "SessionStart (clear): resume text"),
        ("session-end", f"hand-off (worker): checkpoint of {BIG.stat().st_size / 1e6:.1f} MB transcript"),
        ("post-tool-use", "PostToolUse via the console script: queue one payload"),
        ("post-tool-use-m", "PostToolUse via python -m infinite_context_brain.server"),
        ("stop", "Stop via the console script: queue, the context from the tail (below the share)"),
        ("stop-ask", "Stop past the share: reads the whole transcript, asks for a checkpoint"),
        ("stop-asked", "Stop past the share, asked already: reads what came since the ask"),
        ("floor", "python -c pass (floor)"),
    ):
        p95 = percentile(times[name], 95)
        goal = goals.get(name)
        rows.append(
            (
                label,
                percentile(times[name], 50),
                p95,
                f"<= {goal}" if goal else "",
                ("met" if p95 <= goal else "missed") if goal else "",
            )
        )
    rows.append(
        (
            "claude-mem PostToolUse (published mean)",
            2400.0,
            "",
            "",
            f"{2400 / median(times['post-tool-use']):.1f}x ours",
        )
    )
    table(
        f"Claude Code hooks, wall time incl. interpreter start ({runs} runs)",
        ["hook", "p50 ms", "p95 ms", "goal p95", ""],
        rows,
    )
    settle(max(3, runs // 3), store_url)


def _queue(data: Path, kind: str, payload: dict[str, object], env: dict[str, str], cwd: Path) -> None:
    """A record as a hook run with ``env`` in ``cwd`` queues it (no worker started)."""
    from infinite_context_brain.server.claude_code import spool

    spool.enqueue(kind, json.dumps(payload).encode(), None, str(data / "spool"), env=env, cwd=str(cwd))


def settle(runs: int, store_url: str) -> None:
    """Part 3: SessionStart beside unrelated or stuck records, against SessionStart alone."""
    from infinite_context_brain.server.claude_code import spool

    times: dict[str, list[float]] = {"alone": [], "dead store elsewhere": [], "behind a backlog": []}
    small = FIXTURES / "claude-reliability" / "coverage-test-fix" / "transcript.jsonl"
    for _ in range(runs):  # interleaved
        project, elsewhere = temp_project(), temp_project()
        data = Path(scratch("ic-bench-settle-"))
        env = {**bench_env(store_url), "INFINITE_CONTEXT_DATA_DIR": str(data)}
        transcript = data / "session.jsonl"
        shutil.copy(small, transcript)
        start = json.dumps(
            {"session_id": "new", "cwd": str(project), "source": "clear", "hook_event_name": "SessionStart"}
        ).encode()
        end = {
            "session_id": "old",
            "transcript_path": str(transcript),
            "cwd": str(project),
            "reason": "clear",
        }
        times["alone"].append(_time([*HOOK, "session-start"], start, env, project))

        gone = data / "not-a-folder"
        gone.write_text("")
        dead = {**env, "INFINITE_CONTEXT_STORE_URL": f"sqlite:///{gone}/brain.db"}
        _queue(data, "session-end", {**end, "cwd": str(elsewhere)}, dead, elsewhere)
        times["dead store elsewhere"].append(_time([*HOOK, "session-start"], start, env, project))

        tool = {"session_id": "old", "cwd": str(project), "tool_name": "Bash", "tool_input": {}}
        for i in range(BACKLOG):
            _queue(
                data,
                "post-tool-use",
                {**tool, "tool_use_id": f"t{i}", "tool_response": {"stdout": "ok"}},
                env,
                project,
            )
        _queue(data, "session-end", end, env, project)
        spool.ensure_worker(str(data / "spool"))  # busy with the backlog meanwhile
        started = time.perf_counter()
        done = subprocess.run(
            [*HOOK, "session-start"], input=start, env=env, cwd=project, capture_output=True
        )
        times["behind a backlog"].append((time.perf_counter() - started) * 1000)
        if b"multiply_numbers" not in done.stdout:  # the ended session, run by SessionStart itself
            raise RuntimeError(f"SessionStart missed the hand-off: {done.stderr.decode()[-500:]}")
    peer = median(times["alone"])
    table(
        f"SessionStart waiting for hand-offs ({runs} runs, interleaved)",
        ["SessionStart", "p50 ms", "p95 ms", "vs alone"],
        [(name, median(ms), percentile(ms, 95), f"{median(ms) / peer:.2f}x") for name, ms in times.items()],
    )


def _claude_runs(runs: int, kind: str) -> list[object]:
    """``runs`` `claude -p` sessions of one configuration: none, mcp (the server alone), hooks
    (installed as `install claude-code` does with this CLI: PostToolUse and Stop as mcp_tool
    calls), command (every hook a command) or http (command, but PostToolUse as an http hook)."""
    import http.server
    import threading

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.helpers.claude_session import ClaudeProject, run_claude
    from tests.helpers.fake_anthropic import Step

    script = [Step(tool="Bash", input={"command": f"echo {i}", "description": "echo"}) for i in range(3)]
    script.append(Step(text="Done."))
    out: list[object] = []
    server = None
    for _ in range(runs):
        project = ClaudeProject.create(
            Path(scratch("ic-bench-claude-")),
            install=kind != "none",
            hooks="mcp" if kind == "hooks" else "command",
        )
        settings = project.root / ".claude" / "settings.json"
        if kind == "mcp":
            settings.unlink()
        elif kind == "http":
            if server is None:

                class Answer(http.server.BaseHTTPRequestHandler):
                    def log_message(self, *args: object) -> None:
                        pass

                    def do_POST(self) -> None:
                        self.rfile.read(int(self.headers.get("content-length") or 0))
                        self.send_response(200)
                        self.send_header("content-length", "0")
                        self.end_headers()

                server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
                threading.Thread(target=server.serve_forever, daemon=True).start()
            data = json.loads(settings.read_text())
            url = f"http://127.0.0.1:{server.server_address[1]}/hook"
            data["hooks"]["PostToolUse"] = [{"hooks": [{"type": "http", "url": url, "timeout": 10}]}]
            settings.write_text(json.dumps(data))
        run = run_claude(project, script, prompt="Run three commands")
        if run.returncode != 0:
            raise RuntimeError(run.stderr[-1000:])
        out.append(run)
        project.spool_settled()
    if server is not None:
        server.shutdown()
    return out


def in_claude_code(runs: int) -> None:
    """Part 2: hooks inside the real Claude Code CLI, and what they add to a `claude -p` run."""
    from tests_path import claude_available

    if not claude_available():
        console.print("hooks in Claude Code: skipped (no Claude Code CLI in tools/; run `make tools`)")
        return
    walls: dict[str, list[float]] = {}
    hook_ms: dict[str, list[float]] = {}
    for _ in range(runs):  # interleaved, so machine noise hits every configuration alike
        for kind in ("none", "mcp", "hooks", "command", "http"):
            for run in _claude_runs(1, kind):
                walls.setdefault(kind, []).append(run.wall * 1000)  # type: ignore[attr-defined]
                for hook in run.hooks():  # type: ignore[attr-defined]
                    event = hook["event"]
                    if kind in ("hooks", "command", "http") and hook["outcome"] != "success":
                        raise RuntimeError(f"{kind}: {hook}")
                    if kind == "hooks" and event in ("PostToolUse", "Stop"):
                        hook_ms.setdefault(f"{event} (mcp_tool)", []).append(hook["ms"])
                    elif kind == "command" or (kind == "http" and event == "PostToolUse"):
                        label = "http" if kind == "http" else "command"
                        hook_ms.setdefault(f"{event} ({label})", []).append(hook["ms"])
    rows = [(label, median(ms), percentile(ms, 95), len(ms)) for label, ms in sorted(hook_ms.items())]
    table(
        f"Hook wall time inside Claude Code (stream-json hook events, {runs} runs of 3 tool calls)",
        ["hook", "p50 ms", "p95 ms", "n"],
        rows,
    )
    base = median(walls["mcp"])
    added = median(walls["hooks"]) - base
    table(
        f"Whole `claude -p` run, 3 tool calls (median of {runs})",
        ["configuration", "wall ms", "vs MCP only", "goal", ""],
        [
            ("nothing of ours", median(walls["none"]), median(walls["none"]) - base, "", ""),
            ("our MCP server only (alwaysLoad)", base, 0.0, "", ""),
            (
                "MCP + our hooks as installed (PostToolUse, Stop: mcp_tool)",
                median(walls["hooks"]),
                added,
                "<= 100",
                "met" if added <= 100 else "missed",
            ),
            (
                "MCP + hooks, all command (--hooks command)",
                median(walls["command"]),
                median(walls["command"]) - base,
                "",
                "",
            ),
            ("MCP + hooks, PostToolUse as http", median(walls["http"]), median(walls["http"]) - base, "", ""),
        ],
    )
