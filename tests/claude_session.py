"""Drive the real Claude Code CLI (pinned in tools/) against the scripted fake Messages API, in a
throwaway project with our ``install claude-code``: used by the end-to-end tests and by
``benchmarks/hooks_bench.py``. Hook events come from ``--include-hook-events`` (stream-json), each
stamped when its line arrives, so a hook's wall time inside Claude Code is response - start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .fake_anthropic import FakeAnthropic, Step, fake_anthropic

REPO = Path(__file__).resolve().parents[1]
CLAUDE = REPO / "tools" / "node_modules" / ".bin" / "claude"
BIN = Path(sys.executable).parent  # our console script, put on PATH as a teammate would have it


def install_claude_code(root: Path, env: dict[str, str], hooks: str = "auto") -> None:
    """``infinite-context install claude-code --hooks <hooks>`` (our console script) in ``root``;
    it must succeed."""
    done = subprocess.run(
        [str(BIN / "infinite-context"), "install", "claude-code", "--hooks", hooks],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


@dataclass
class ClaudeProject:
    root: Path
    config: Path
    data: Path
    store_url: str
    env: dict[str, str]

    @classmethod
    def create(
        cls, base: Path, *, install: bool = True, claude: str | None = None, hooks: str = "auto"
    ) -> ClaudeProject:
        """``hooks``: ``install --hooks``; with auto, the pinned CLI (on PATH) decides."""
        root, config, data = base / "project", base / "claude-config", base / "data"
        cli_tmp = base / "claude-tmp"  # the CLI's temp files (per project, its Bash tool's), not /tmp's
        for folder in (root, config, data, cli_tmp):
            folder.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        (config / "settings.json").write_text('{"enableAllProjectMcpServers": true}')
        env = {k: v for k, v in os.environ.items() if not k.startswith(("INFINITE_CONTEXT_", "CLAUDE"))}
        store_url = f"sqlite:///{base / 'brain.db'}"
        env.update(
            CLAUDE_CONFIG_DIR=str(config),
            TMPDIR=str(cli_tmp),
            DISABLE_TELEMETRY="1",
            DISABLE_AUTOUPDATER="1",
            DISABLE_ERROR_REPORTING="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            MCP_TIMEOUT="20000",
            ANTHROPIC_API_KEY="sk-ant-fake-key-for-tests",
            INFINITE_CONTEXT_DATA_DIR=str(data),
            INFINITE_CONTEXT_STORE_URL=store_url,
            INFINITE_CONTEXT_MERGE="offline",
            PATH=os.pathsep.join([str(BIN), str(CLAUDE.parent), env.get("PATH", "")]),
        )
        project = cls(root, config, data, store_url, env)
        if install:
            install_claude_code(root, env, hooks)
        return project

    def spool_settled(self, timeout: float = 30.0) -> bool:
        """Wait until the hook queue is empty and its worker gone."""
        from infinite_context_brain.server.claude_code.spool import pending, worker_alive

        folder = str(self.data / "spool")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not pending(folder) and not worker_alive(folder):
                return True
            time.sleep(0.05)
        return False

    def worker_log(self) -> str:
        path = self.data / "spool" / "worker.log"
        return path.read_text() if path.exists() else ""


@dataclass
class Run:
    fake: FakeAnthropic
    returncode: int
    wall: float  # seconds, process start to exit
    events: list[tuple[float, dict[str, Any]]] = field(default_factory=list)  # (seconds, line)
    stderr: str = ""

    def hooks(self) -> list[dict[str, Any]]:
        """One entry per hook run: name, event, outcome, exit code, wall ms inside Claude Code."""
        started: dict[str, float] = {}
        out = []
        for at, event in self.events:
            kind = event.get("subtype")
            if kind == "hook_started":
                started[event["hook_id"]] = at
            elif kind == "hook_response":
                began = started.get(event["hook_id"], at)
                out.append(
                    {
                        "name": event.get("hook_name"),
                        "event": event.get("hook_event"),
                        "outcome": event.get("outcome"),
                        "exit_code": event.get("exit_code"),
                        "stderr": event.get("stderr"),
                        "ms": (at - began) * 1000,
                    }
                )
        return out

    def first_main_request(self) -> dict[str, Any]:
        return self.fake.main_requests()[0]


def run_claude(
    project: ClaudeProject, script: list[Step], *extra: str, tag: str = "fake", prompt: str = "Do the task"
) -> Run:
    with fake_anthropic(script, tag=tag) as fake:
        env = {**project.env, "ANTHROPIC_BASE_URL": fake.url}
        command = [
            str(CLAUDE),
            "-p",
            prompt,
            "--allowedTools",
            "Bash mcp__infinite-context",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-hook-events",
            *extra,
        ]
        started = time.perf_counter()
        process = subprocess.Popen(
            command,
            cwd=project.root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None and process.stderr is not None
        events = []
        for line in process.stdout:
            at = time.perf_counter() - started
            try:
                events.append((at, json.loads(line)))
            except json.JSONDecodeError:
                continue
        stderr = process.stderr.read()
        code = process.wait(timeout=180)
        wall = time.perf_counter() - started
    return Run(fake=fake, returncode=code, wall=wall, events=events, stderr=stderr)
