"""The real Claude Code CLI (pinned in tools/) through the live endless-mode proxy to a scripted
fake Anthropic upstream: a multi-turn session with large tool outputs. The upstream sees
observations for the old results and the recent ones whole, Claude Code completes, and
``expand`` returns the original of a replaced result."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from ..conftest import PYTHON
from ..fake_anthropic import Step, fake_anthropic
from .test_claude_code_cli import claude_binary, claude_env, claude_print

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
    # and from the store alone (no transcript): the proxy kept the original
    (tmp_path / "elsewhere").mkdir()
    stored = subprocess.run(
        [*cli, "--json", "--project", str(tmp_path / "elsewhere"), "transcript", "expand", replaced],
        env={**proxy_env, "CLAUDE_CONFIG_DIR": str(tmp_path / "empty-config")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(stored.stdout).get("text") == original, stored.stdout + stored.stderr
