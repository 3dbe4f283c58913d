"""Drive the real Claude Code CLI (pinned in tools/) against the scripted fake Messages API, in a
throwaway project with our ``install claude-code``: used by the end-to-end tests and by
``benchmarks/hooks_bench.py``. Hook events come from ``--include-hook-events`` (stream-json), each
stamped when its line arrives, so a hook's wall time inside Claude Code is response - start."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyte
import pytest

from .fake_anthropic import FakeAnthropic, Step, fake_anthropic

REPO = Path(__file__).resolve().parents[2]
CLAUDE = REPO / "tools" / "node_modules" / ".bin" / "claude"
BIN = Path(sys.executable).parent  # our console script, put on PATH as a teammate would have it


def claude_binary() -> str:
    """The Claude Code CLI to run: ``CLAUDE_BIN``, the one pinned in tools/, or one on PATH;
    without any the test is skipped (and fails in CI, where tools/ must be installed)."""
    candidates = [
        os.environ.get("CLAUDE_BIN"),
        str(REPO / "tools" / "node_modules" / ".bin" / "claude"),
        shutil.which("claude"),
    ]
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            return candidate
    if os.environ.get("CI"):
        pytest.fail("Claude Code CLI missing: .ci/run must run `make test`, which installs tools/")
    pytest.skip("Claude Code CLI not installed (run `make tools`)")


def claude_env(tmp_path: Path) -> dict[str, str]:
    """This environment with a fresh Claude Code config folder (project MCP servers allowed) and
    temp folder under ``tmp_path``, telemetry and other traffic off."""
    config = tmp_path / "claude-config"
    config.mkdir()
    (config / "settings.json").write_text('{"enableAllProjectMcpServers": true}')
    env = dict(os.environ)
    own_tmp = tmp_path / "cli-tmp"  # the CLI's temp files (its Bash tool's too), not /tmp's
    own_tmp.mkdir()
    env.update(
        CLAUDE_CONFIG_DIR=str(config),
        TMPDIR=str(own_tmp),
        DISABLE_TELEMETRY="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        MCP_TIMEOUT="20000",
    )
    return env


def claude_print(claude: str, prompt: str, tools: str, cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """``claude -p PROMPT`` (tools ``tools`` allowed, JSON output) run to its end; it must succeed.
    Returns its JSON result."""
    done = subprocess.run(
        [claude, "-p", prompt, "--allowedTools", tools, "--output-format", "json"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


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
    project: ClaudeProject,
    script: list[Step],
    *extra: str,
    tag: str = "fake",
    prompt: str = "Do the task",
    by_prompt: dict[str, list[Step]] | None = None,
    context_tokens: int = 0,
) -> Run:
    with fake_anthropic(script, tag=tag, by_prompt=by_prompt, context_tokens=context_tokens) as fake:
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


_ESCAPES = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: cursor moves, colours, modes
    rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: titles, links
    rb"|\x1b[()][0-9A-Za-z]|\x1b[@-Z\\-_]"  # character sets, two-byte escapes
)


def session_start_context(fake: FakeAnthropic) -> str:
    """What SessionStart injected into the session whose request ``fake`` received last (Claude
    Code sends it inside a message of that request), or "" when nothing was."""
    pattern = re.compile(r"SessionStart hook additional context: (.*?)(?:\n\n\nAvailable|\Z)", re.S)
    for message in fake.main_requests()[-1]["messages"]:
        content = message.get("content")
        blocks = [content] if isinstance(content, str) else content or []
        for block in blocks:
            text = block.get("text") if isinstance(block, dict) else block
            found = pattern.search(text) if isinstance(text, str) else None
            if found:
                return found.group(1)
    return ""


def interactive(project: ClaudeProject) -> None:
    """What a person does once before using Claude Code interactively in ``project``: finish its
    onboarding, trust the folder, accept the API key (all in Claude Code's own config file)."""
    config = project.config / ".claude.json"
    data = json.loads(config.read_text()) if config.exists() else {}
    key = project.env["ANTHROPIC_API_KEY"]
    data.update(
        hasCompletedOnboarding=True,
        theme="dark",
        customApiKeyResponses={"approved": [key[-20:]], "rejected": []},
    )
    entry = data.setdefault("projects", {}).setdefault(str(project.root), {})
    entry.update(hasTrustDialogAccepted=True, hasCompletedProjectOnboarding=True)
    config.write_text(json.dumps(data))


class Terminal:
    """The real Claude Code CLI in a pseudo-terminal, driven as a person types: what it shows is
    read back without its escape sequences (and without spaces, which its renderer draws as
    cursor moves)."""

    def __init__(self, project: ClaudeProject, fake: FakeAnthropic, *args: str) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 140, 0, 0))
        env = {**project.env, "ANTHROPIC_BASE_URL": fake.url, "TERM": "xterm-256color"}
        #: Claude Code's own debug log (``--debug-file``): when its MCP servers connected
        self.debug = Path(project.root.parent / f"claude-debug-{time.time_ns()}.log")
        self.process = subprocess.Popen(
            [
                str(CLAUDE),
                "--allowedTools",
                "Bash mcp__infinite-context",
                "--debug-file",
                str(self.debug),
                *args,
            ],
            cwd=project.root,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
        os.close(slave)
        self.fd = master
        self.screen = b""
        #: the screen as a terminal shows it now (what is drawn where)
        self.view = pyte.Screen(140, 50)
        self._stream = pyte.ByteStream(self.view)
        self._lock = threading.Lock()
        self._screens: dict[int, str] = {}  # mark -> the screen then
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self.screen += chunk
                self._stream.feed(chunk)

    def shown(self) -> str:
        """Everything drawn so far, escape sequences and white space removed."""
        with self._lock:
            raw = self.screen
        return re.sub(r"\s+", "", _ESCAPES.sub(b"", raw).decode("utf-8", "replace"))

    def on_screen(self) -> str:
        """The screen as shown now, white space removed."""
        return re.sub(r"\s+", "", "".join(self.rows()))

    def wait_for(self, text: str, timeout: float = 60.0, since: int = 0) -> bool:
        """Whether ``text`` (spaces ignored) is drawn after position ``since`` within ``timeout``:
        in the bytes written since then, or on the screen as shown now while it was not at
        ``since`` (Claude Code's renderer redraws only the cells that changed, so a line drawn
        over an older one reaches the stream with letters missing, e.g. "Pckitup.")."""
        needle = re.sub(r"\s+", "", text)
        before = self._screens.get(since, "")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.shown()[since:]:
                return True
            if needle not in before and needle in self.on_screen():
                return True
            time.sleep(0.05)
        return False

    def ready(self, server: str = "infinite-context", timeout: float = 60.0) -> bool:
        """Claude Code waits for input and has connected ``server`` (a person types after that;
        an ``mcp_tool`` hook of a server not connected yet is skipped)."""
        needle = f'MCP server "{server}": Successfully connected'
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            log = self.debug.read_text(errors="replace") if self.debug.exists() else ""
            if needle in log and "forshortcuts" in self.shown():
                return True
            time.sleep(0.1)
        return False

    def mark(self) -> int:
        """A position in what was drawn, for ``wait_for(since=...)``; the screen at that moment is
        kept with it."""
        position = len(self.shown())
        self._screens[position] = self.on_screen()
        return position

    def submit(self, text: str) -> None:
        """Type ``text``, then Enter (after a moment: the input box takes the text first)."""
        os.write(self.fd, text.encode())
        time.sleep(0.4)
        os.write(self.fd, b"\r")

    def rows(self) -> list[str]:
        """The screen's rows as shown now."""
        with self._lock:
            return [row.rstrip() for row in self.view.display]

    def _rules(self, rows: list[str]) -> list[int]:
        """The rows of the rules drawn above and below the input box."""
        return [i for i, row in enumerate(rows) if row.startswith("─" * 20)]

    def input_box(self) -> str | None:
        """What the input box holds now (None: no input box on the screen)."""
        rows = self.rows()
        rules = self._rules(rows)
        if len(rules) < 2:
            return None
        text = " ".join(row.strip() for row in rows[rules[-2] + 1 : rules[-1]])
        return text.removeprefix("❯").strip()

    def idle(self) -> bool:
        """Claude Code waits for input: the footer under the input box says "? for shortcuts"
        (not "esc to interrupt"), and no message waits in its queue."""
        rows = self.rows()
        rules = self._rules(rows)
        footer = " ".join(rows[rules[-1] + 1 :]) if rules else ""
        return "? for shortcuts" in footer and not any("queued messages" in row for row in rows)

    def command(self, text: str, menu: str, timeout: float = 30.0) -> None:
        """Run a slash command as a person does: type it, and once Claude Code's menu shows it
        (``menu``: its description there), press Enter at once; returns when it has run
        (Claude Code queues it while it ends a turn, and would merge a prompt typed meanwhile
        into it). An Enter that only picked the command in the menu is pressed again."""
        mark = self.mark()
        os.write(self.fd, text.encode())
        assert self.wait_for(menu, timeout, mark), self.shown()[-2000:]
        for _ in range(3):
            os.write(self.fd, b"\r")
            time.sleep(0.5)  # the screen catches up with the key
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                box = self.input_box()
                if box is not None and text in box and self.idle():
                    break  # idle with the command still typed: the Enter only picked it
                if box == "" and self.idle():
                    return
                time.sleep(0.05)
        raise AssertionError(f"{text} did not run: " + "\n".join(self.rows()))

    def interrupt(self) -> None:
        """Esc: stop the turn in progress."""
        os.write(self.fd, b"\x1b")

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        os.close(self.fd)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def clear_and_continue(term: Terminal, fake: FakeAnthropic) -> str:
    """/clear at once (Claude Code queues it while it ends the turn), then, once it is idle
    again, a prompt (answered "Picking it up." by the fake): what the new session was started
    with, as SessionStart gave it."""
    term.command("/clear", "Start a new session with empty context")
    mark = term.mark()
    requests = len(fake.main_requests())
    term.submit("What next?")
    assert term.wait_for("Picking it up.", 90, mark), term.shown()[-2000:]
    assert len(fake.main_requests()) > requests
    assert "hookerror" not in term.shown(), term.shown()[-2000:]  # "Stop hook error occurred"
    return session_start_context(fake)
