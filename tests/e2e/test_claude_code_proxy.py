"""The real Claude Code CLI (pinned in tools/) through the live endless-mode proxy to a scripted
fake Anthropic upstream: a multi-turn session with large tool outputs. The upstream sees
observations for the old results and the recent ones whole, never more than four breakpoints,
Claude Code completes (its requests pass the proxy's Host and Origin rules), and ``expand``
returns the original of a replaced result: from the transcript, or from what the proxy kept for
that Claude Code session, but never for another project. With another listener on the installed
port, the SessionStart hook tells the user to stop (Claude Code 2.1 shows a hook's
``systemMessage``; it does not honour ``continue: false`` at SessionStart)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from ..conftest import PYTHON
from ..helpers.claude_session import claude_binary, claude_env, claude_print
from ..helpers.fake_anthropic import Step, fake_anthropic
from ..helpers.proxy_run import impostor

pytestmark = pytest.mark.slow  # the real Claude Code CLI (node)

MARKER = "[endless-mode"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_claude_code_runs_through_the_proxy(tmp_path: Path) -> None:
    claude = claude_binary()
    project = tmp_path / "project"
    project.mkdir()
    data = tmp_path / "data"
    steps = [
        Step(
            text=f"Listing part {n}.",
            tool="Bash",
            input={"command": f"seq {n}000 {n}999", "description": "list"},
        )
        for n in range(1, 6)
    ]
    steps.append(Step(text="Done: five listings read."))
    env = claude_env(tmp_path)
    ours = {
        "INFINITE_CONTEXT_DATA_DIR": str(data),
        "INFINITE_CONTEXT_PROXY_EPOCH_TOKENS": "2000",
        "INFINITE_CONTEXT_PROXY_KEEP_RECENT": "1",
    }
    cli = [PYTHON, "-m", "infinite_context_brain.server"]
    with fake_anthropic(steps, tag="px") as fake:
        port = free_port()
        proxy_env = {**{k: v for k, v in os.environ.items() if not k.startswith("INFINITE_CONTEXT_")}, **ours}
        started = subprocess.run(
            [*cli, "proxy", "start", "--port", str(port), "--upstream", fake.url],
            env=proxy_env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert started.returncode == 0, started.stderr
        try:
            env.update(
                ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}",
                ANTHROPIC_API_KEY="sk-ant-fake-key-for-proxy-tests",
                DISABLE_AUTOUPDATER="1",
                DISABLE_ERROR_REPORTING="1",
            )
            done = claude_print(claude, "Read the five listings", "Bash", project, env)
            assert "five listings" in done["result"]
            status = subprocess.run(
                [*cli, "--json", "proxy", "status"], env=proxy_env, capture_output=True, text=True, timeout=30
            )
            figures = json.loads(status.stdout)["figures"]
            assert figures["epochs"] >= 1 and figures["tokens_after"] < figures["tokens_before"]
        finally:
            subprocess.run([*cli, "proxy", "stop"], env=proxy_env, timeout=30, check=False)
        last = fake.main_requests()[-1]
        assert all(json.dumps(r).count('"cache_control"') <= 4 for r in fake.main_requests())
    results = [
        b
        for m in last["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    assert len(results) == 5

    def text(block: dict[str, object]) -> str:
        content = block["content"]
        return content if isinstance(content, str) else "".join(c.get("text", "") for c in content)  # type: ignore[union-attr]

    assert all(text(b).startswith(MARKER) for b in results[:3]), [text(b)[:80] for b in results]
    assert not text(results[-1]).startswith(MARKER) and "5999" in text(results[-1])  # recent: whole
    replaced = results[0]["tool_use_id"]
    assert f"expand {replaced}" in text(results[0]).replace("`", "")

    transcripts = [
        t
        for t in (Path(env["CLAUDE_CONFIG_DIR"]) / "projects").rglob("*.jsonl")
        if "subagents" not in t.parts
    ]
    assert len(transcripts) == 1
    expanded = subprocess.run(
        [*cli, "--json", "transcript", "expand", replaced, "--file", str(transcripts[0])],
        env=proxy_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    original = json.loads(expanded.stdout).get("text", expanded.stdout + expanded.stderr)
    assert original.splitlines()[0] == "1000" and original.splitlines()[-1] == "1999"
    # from the store: the proxy kept the original under this Claude Code session, found through
    # the project's transcripts even when the transcript no longer holds the result
    transcript = transcripts[0]
    trimmed = tmp_path / "trimmed-config"
    (trimmed / "projects" / transcript.parent.name).mkdir(parents=True)
    first_line = transcript.read_text().splitlines()[0]
    (trimmed / "projects" / transcript.parent.name / transcript.name).write_text(first_line + "\n")

    def expand_from(folder: Path, config: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*cli, "--json", "--project", str(folder), "transcript", "expand", replaced],
            env={**proxy_env, "CLAUDE_CONFIG_DIR": str(config)},
            capture_output=True,
            text=True,
            timeout=60,
        )

    stored = expand_from(project, trimmed)
    assert json.loads(stored.stdout).get("text") == original, stored.stdout + stored.stderr
    # another project (its own transcripts, or none) never reads it
    (tmp_path / "elsewhere").mkdir()
    refused = expand_from(tmp_path / "elsewhere", trimmed)
    assert refused.returncode != 0 and original not in refused.stdout + refused.stderr
    assert "no claude code transcript found" in (refused.stdout + refused.stderr).lower()


def test_another_listener_on_the_installed_port_is_told_to_the_user(tmp_path: Path) -> None:
    claude = claude_binary()
    project = tmp_path / "project"
    project.mkdir()
    data = tmp_path / "data"
    cli = [PYTHON, "-m", "infinite_context_brain.server"]
    env = claude_env(tmp_path)
    ours = {k: v for k, v in env.items() if not k.startswith(("INFINITE_CONTEXT_", "ANTHROPIC_BASE"))}
    ours["INFINITE_CONTEXT_DATA_DIR"] = str(data)
    ours["PATH"] = f"{Path(PYTHON).parent}{os.pathsep}{ours['PATH']}"  # the hooks name the console script
    installed = subprocess.run(
        [*cli, "--project", str(project), "install", "claude-code", "--endless", "--hooks", "command"],
        env=ours,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert installed.returncode == 0, installed.stderr
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())  # --endless: local
    port = int(settings["env"]["ANTHROPIC_BASE_URL"].rsplit(":", 1)[1])
    with fake_anthropic([Step(text="hello")], tag="sq") as fake, impostor(port):
        done = subprocess.run(
            [claude, "-p", "hi", "--output-format", "stream-json", "--verbose", "--include-hook-events"],
            cwd=project,
            env={**ours, "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-proxy-tests", "DISABLE_AUTOUPDATER": "1"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert not fake.requests  # nothing reached the real upstream through the impostor
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    said = [
        e.get("stdout", "")
        for e in events
        if e.get("subtype") == "hook_response" and e.get("hook_event") == "SessionStart"
    ]
    assert said and "not this user's proxy" in said[0] and "API key" in said[0], done.stdout[-2000:]
    answer = json.loads(said[0])
    assert answer["systemMessage"] == answer["stopReason"] and answer["continue"] is False
