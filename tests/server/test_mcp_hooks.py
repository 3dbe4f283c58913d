"""Claude Code hooks as ``mcp_tool`` calls: the installer's choice of transport, the
entries it writes and replaces, and the hidden hook tool of the real MCP server over stdio."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.errors import InvalidInput
from infinite_context_brain.core.storage import open_store
from infinite_context_brain.core.transcript.nudge import MARK
from infinite_context_brain.server.claude_code import spool
from infinite_context_brain.server.claude_code.entries import claude_code_version, hook_transport
from infinite_context_brain.server.claude_code.hook_tool import HOOK_TOOL, MIN_CLAUDE_CODE

from ..conftest import FIXTURES, PHANTOM, cli_env
from ..conftest import run_cli as run
from ..helpers.mcp_client import mcp_session, text_of

SCRIPT = Path(sys.executable).parent / "infinite-context"


def test_auto_picks_mcp_only_for_a_claude_code_that_has_mcp_tool_hooks(tmp_path: Path) -> None:
    assert hook_transport("auto", (2, 1, 117))[0] == "command"
    assert hook_transport("auto", MIN_CLAUDE_CODE)[0] == "mcp"
    assert hook_transport("auto", (3, 0, 0))[0] == "mcp"
    transport, why = hook_transport("auto", None)
    assert transport == "command" and "no Claude Code found" in why
    assert hook_transport("command", (9, 9, 9))[0] == "command"
    with pytest.raises(InvalidInput) as bad:
        hook_transport("grpc", None)
    assert bad.value.field == "--hooks" and "auto, mcp or command" in str(bad.value)
    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\necho '2.1.200 (Claude Code)'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    assert claude_code_version(str(fake)) == (2, 1, 200)
    silent = tmp_path / "silent"
    silent.write_text("#!/bin/sh\necho nothing\n")
    silent.chmod(silent.stat().st_mode | stat.S_IXUSR)
    assert claude_code_version(str(silent)) is None
    assert claude_code_version(str(tmp_path / "missing")) is None


def test_switching_transports_replaces_our_entries_and_uninstall_removes_both(
    store_url: str, project_dir: Path
) -> None:
    settings = project_dir / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "prettier -w"}]}]}
    settings.write_text(json.dumps({"hooks": theirs}))

    done = run(store_url, "--json", "install", "claude-code", "--hooks", "mcp", cwd=project_dir)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hooks"] == "mcp_tool hooks (asked for)"
    hooks = json.loads(settings.read_text())["hooks"]
    post = hooks["PostToolUse"][1]["hooks"][0]
    assert post["type"] == "mcp_tool" and post["server"] == "infinite-context" and post["tool"] == HOOK_TOOL
    assert post["input"]["event"] == "PostToolUse" and post["input"]["tool_response"] == "${tool_response}"
    assert hooks["Stop"][0]["hooks"][0]["type"] == "mcp_tool"
    for event in ("SessionStart", "SessionEnd", "PreCompact"):  # no MCP client then: commands
        assert hooks[event][0]["hooks"][0]["type"] == "command"

    again = run(store_url, "--json", "install", "claude-code", "--hooks", "mcp", cwd=project_dir)
    assert json.loads(again.stdout)["changes"] == []
    # doctor: an older Claude Code on PATH does not know mcp_tool hooks
    old_claude = project_dir.parent / "bin" / "claude"
    old_claude.parent.mkdir()
    old_claude.write_text("#!/bin/sh\necho '2.1.100 (Claude Code)'\n")
    old_claude.chmod(0o755)
    path = f"{old_claude.parent}:{os.environ['PATH']}"
    report = run(store_url, "--json", "doctor", cwd=project_dir, PATH=path)
    (check,) = [c for c in json.loads(report.stdout)["checks"] if c["name"] == "claude code mcp hooks"]
    assert check["status"] == "fail" and "2.1.100" in check["detail"] and "--hooks command" in check["fix"]

    switched = run(store_url, "--json", "install", "claude-code", "--hooks", "command", cwd=project_dir)
    backup = settings.with_name("settings.json.infinite-context.bak")
    assert json.loads(backup.read_text()) == {"hooks": theirs}  # the first backup is kept
    changes = json.loads(switched.stdout)["changes"]
    assert sorted(c.split(" in ")[0] for c in changes) == ["updated hook PostToolUse", "updated hook Stop"]
    hooks = json.loads(settings.read_text())["hooks"]
    assert hooks["PostToolUse"][0] == theirs["PostToolUse"][0] and len(hooks["PostToolUse"]) == 2
    assert hooks["PostToolUse"][1]["hooks"][0]["args"] == ["hook", "post-tool-use"]

    run(store_url, "install", "claude-code", "--hooks", "mcp", cwd=project_dir)
    removed = run(store_url, "install", "claude-code", "--uninstall", cwd=project_dir)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(settings.read_text()) == {"hooks": theirs}

    bad = run(store_url, "install", "claude-code", "--hooks", "fast", cwd=project_dir)
    assert bad.returncode == 2 and b"--hooks" in bad.stderr and b"auto" in bad.stderr


def _tool_use(tool_use_id: str, **fields: str) -> dict[str, str]:
    """The arguments Claude Code sends for our PostToolUse entry (objects as their JSON text)."""
    return {
        "event": "PostToolUse",
        "session_id": "s1",
        "transcript_path": "/nowhere.jsonl",
        "cwd": "/",
        "tool_name": "Bash",
        "tool_use_id": tool_use_id,
        "tool_input": json.dumps({"command": "pytest -q", "description": "tests"}),
        "tool_response": json.dumps({"stdout": "3 failed, 40 passed in 2.1s", "stderr": ""}),
        **fields,
    }


async def _stored(project_dir: Path, store_url: str, ids: list[str], timeout: float = 30.0) -> dict[str, Any]:
    """The observations of ``ids`` once all are stored (or what is there at ``timeout``)."""
    deadline = time.monotonic() + timeout
    with open_store(load_settings(store_url=store_url)) as store:
        while True:
            id_file = project_dir / ".claude_session_id"
            session = id_file.read_text().strip() if id_file.exists() else ""
            found = dict(store.observations.get_observations(session, ids)) if session else {}
            if len(found) == len(ids) or time.monotonic() > deadline:
                return found
            await asyncio.sleep(0.05)


async def test_the_hidden_hook_tool_stores_observations_and_rejects_bad_calls(
    project_dir: Path, store_url: str
) -> None:
    async with mcp_session(project_dir, store_url) as s:
        assert HOOK_TOOL not in {t.name for t in (await s.list_tools()).tools}  # the model never sees it
        done = await s.call_tool(HOOK_TOOL, _tool_use("toolu_a"))
        assert not done.is_error and text_of(done) == "{}"
        plain = await s.call_tool(HOOK_TOOL, _tool_use("toolu_b", tool_response="{not json, plain output"))
        assert not plain.is_error
        wrong = await s.call_tool(HOOK_TOOL, {"event": "PreToolUse"})
        assert wrong.is_error and "event:" in text_of(wrong) and "PostToolUse, Stop" in text_of(wrong)
        missing = await s.call_tool(HOOK_TOOL, _tool_use(""))
        assert missing.is_error and "tool_use_id" in text_of(missing)
        big = json.dumps({"stdout": "".join(f"line {i}: ok\n" for i in range(80_000)), "stderr": ""})
        assert len(big) > 1_000_000
        large = await s.call_tool(HOOK_TOOL, _tool_use("toolu_big", tool_response=big))
        assert not large.is_error
        alive = await s.call_tool("status", {})
        assert not alive.is_error
        # the answers came first; the observations are stored right after, in the background
        ids = ["toolu_a", "toolu_b", "toolu_big"]
        stored = await _stored(project_dir, store_url, ids)
    assert set(stored) == set(ids)
    assert stored["toolu_big"].original_tokens > 100_000 and stored["toolu_big"].tokens < 1_000
    assert stored["toolu_a"].source == "hook" and "3 failed" in stored["toolu_a"].text
    assert "{not json, plain output" in stored["toolu_b"].text


def _stop_on_a_real_session(project_dir: Path, tmp_path: Path) -> dict[str, str]:
    """The Stop hook's input for a copy of a real transcript (in ``tmp_path``)."""
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(
        (FIXTURES / "claude-reliability" / "coverage-test-fix" / "transcript.jsonl").read_bytes()
    )
    return {"event": "Stop", "session_id": "s1", "transcript_path": str(transcript), "cwd": str(project_dir)}


@pytest.mark.fixtures
async def test_stop_writes_the_hand_off_a_moment_later(
    project_dir: Path, store_url: str, tmp_path: Path
) -> None:
    stop = _stop_on_a_real_session(project_dir, tmp_path)
    async with mcp_session(project_dir, store_url) as s:
        done = await s.call_tool(HOOK_TOOL, stop)
        assert not done.is_error and text_of(done) == "{}"
        deadline, version = time.monotonic() + 30, None
        while not version and time.monotonic() < deadline:  # written about a second later
            await asyncio.sleep(0.1)
            status = await s.call_tool("status", {})
            version = (status.structured_content or {}).get("version")
        assert version == 1
        again = await s.call_tool(HOOK_TOOL, stop)  # nothing new in the transcript: no new version
        assert not again.is_error
        await asyncio.sleep(1.5)
        after = await s.call_tool("status", {})
        assert (after.structured_content or {}).get("version") == 1


@pytest.mark.fixtures
async def test_stop_asks_for_a_checkpoint_when_the_context_is_nearly_full(
    project_dir: Path, store_url: str, tmp_path: Path
) -> None:
    """The ``mcp_tool`` Stop hook answers at once: on a session whose context is past the share,
    Claude Code's block decision asking for a checkpoint; with ``stop_hook_active`` (which the
    hook passes as text), nothing."""
    stop = _stop_on_a_real_session(project_dir, tmp_path)
    Path(stop["transcript_path"]).write_bytes(PHANTOM.read_bytes())  # 153k tokens of context
    async with mcp_session(project_dir, store_url) as s:
        asked = json.loads(text_of(await s.call_tool(HOOK_TOOL, stop)))
        assert asked["decision"] == "block" and asked["reason"].startswith(MARK)
        going_on = await s.call_tool(HOOK_TOOL, {**stop, "stop_hook_active": "true"})
        assert not going_on.is_error and text_of(going_on) == "{}"


async def test_the_server_writes_nothing_into_the_project_until_a_write(
    project_dir: Path, store_url: str
) -> None:
    """Starting the server, its background warm-up and reads leave the folder as it was: the id
    file comes with the first write (it used to appear at start, from the warm-up)."""
    async with mcp_session(project_dir, store_url) as s:
        for tool in ("status", "resume", "recall"):
            assert not (await s.call_tool(tool, {})).is_error
        await asyncio.sleep(1.0)  # the warm-up has long finished
        assert not (project_dir / ".claude_session_id").exists()
        assert not (await s.call_tool("store", {"content": "a first item"})).is_error
        assert (project_dir / ".claude_session_id").exists()


def _session_start(store_url: str, project_dir: Path) -> subprocess.CompletedProcess[bytes]:
    """SessionStart as Claude Code runs it after /clear (a command hook, a new process)."""
    payload = {
        "hook_event_name": "SessionStart",
        "session_id": "s2",
        "cwd": str(project_dir),
        "source": "clear",
    }
    return subprocess.run(
        [str(SCRIPT), "hook", "session-start"],
        input=json.dumps(payload).encode(),
        env=cli_env(store_url),
        capture_output=True,
        timeout=60,
    )


@pytest.mark.fixtures
async def test_session_start_waits_for_the_servers_delayed_stop(
    project_dir: Path, store_url: str, tmp_path: Path
) -> None:
    """The Stop hand-off runs a moment after the hook on the server's thread; /clear at once:
    the SessionStart that follows sees it (it is a spool record the server holds meanwhile)."""
    stop = _stop_on_a_real_session(project_dir, tmp_path)
    async with mcp_session(project_dir, store_url) as s:
        done = await s.call_tool(HOOK_TOOL, stop)
        assert not done.is_error and text_of(done) == "{}"
        assert len(spool.hand_offs(spool.spool_dir())) == 1  # held by the server until written
        started = await asyncio.to_thread(_session_start, store_url, project_dir)
        assert started.returncode == 0, started.stderr
        context = json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "multiply_numbers" in context
        assert not spool.hand_offs(spool.spool_dir())


async def test_a_failed_hand_off_is_said_once_by_the_next_hook(
    project_dir: Path, store_url: str, tmp_path: Path
) -> None:
    """The server's Stop hand-off fails in the background (a folder given as the transcript):
    the next hook call of that session answers with a systemMessage saying so, once; doctor
    shows it as the last hook failure until a hand-off works again."""
    stop = {"event": "Stop", "session_id": "s1", "transcript_path": str(tmp_path), "cwd": str(project_dir)}
    async with mcp_session(project_dir, store_url) as s:
        assert text_of(await s.call_tool(HOOK_TOOL, stop)) == "{}"
        deadline = time.monotonic() + 30
        while spool.hand_offs(spool.spool_dir()) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        told = json.loads(text_of(await s.call_tool(HOOK_TOOL, _tool_use("toolu_n1", session_id="s1"))))
        assert "could not save the hand-off after the last answer" in told["systemMessage"]
        assert "is not a file" in told["systemMessage"] and "Fix:" in told["systemMessage"]
        again = await s.call_tool(HOOK_TOOL, _tool_use("toolu_n2", session_id="s1"))
        assert text_of(again) == "{}"  # once per session
        other = json.loads(text_of(await s.call_tool(HOOK_TOOL, _tool_use("toolu_n3", session_id="s9"))))
        assert "systemMessage" in other  # a session not told yet
    doctor = run(store_url, "--json", "doctor", cwd=project_dir)
    check = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}["claude code hook failures"]
    assert check["status"] == "warn" and "Stop" in check["detail"] and "is not a file" in check["detail"]
