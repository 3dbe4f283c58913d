"""`infinite-context install claude-code` and the hooks, as Claude Code runs them: JSON on stdin, a
real SQLite store, a real transcript from the fixtures. The first hand-off and reload run as the
real processes Claude Code starts; the other calls run ``main(argv)`` in this process."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from infinite_context_brain.core.transcript.nudge import MARK
from infinite_context_brain.server.claude_code.install import install_for_claude_code

from ..conftest import FIXTURES, PHANTOM, cli_env, run_cli_process, settle_hooks
from ..conftest import run_cli as run

SMALL = FIXTURES / "claude-reliability" / "coverage-test-fix" / "transcript.jsonl"


def hook(
    store_url: str, event: str, *, process: bool = False, **payload: object
) -> subprocess.CompletedProcess[bytes]:
    runner = run_cli_process if process else run
    return runner(store_url, "hook", event, stdin=json.dumps({"hook_event_name": event, **payload}).encode())


def status(store_url: str, project: Path) -> dict[str, object]:
    done = run(store_url, "--project", str(project), "--json", "status")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.fixture
def session(project_dir: Path, tmp_path: Path) -> dict[str, str]:
    """A live transcript of a real session, and the files it edited, in the temp project."""
    for rel in ("src/math_utils.py", "tests/test_math_utils.py"):
        (project_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (project_dir / rel).write_text("")
    transcript = tmp_path / "session.jsonl"
    shutil.copy(SMALL, transcript)
    return {"session_id": "s1", "transcript_path": str(transcript), "cwd": str(project_dir)}


@pytest.mark.fixtures
def test_session_end_then_start_carries_the_thread(
    store_url: str, project_dir: Path, session: dict[str, str]
) -> None:
    ended = hook(store_url, "SessionEnd", process=True, reason="clear", **session)
    assert ended.returncode == 0 and ended.stdout == b"", ended.stderr
    settle_hooks()  # SessionEnd only queued the payload; the worker wrote the hand-off
    state = status(store_url, project_dir)
    assert state["version"] == 1
    assert "multiply_numbers" in str(state["current_task"])

    started = hook(store_url, "SessionStart", process=True, source="clear", **session)
    assert started.returncode == 0, started.stderr
    out = json.loads(started.stdout)
    context = out["hookSpecificOutput"]["additionalContext"]
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "src/math_utils.py" in context and "multiply_numbers" in context and "/clear" in context
    assert len(context) < 10_000

    # PreCompact on the same transcript: nothing new, no duplicate version; run twice, still none
    for _ in range(2):
        again = hook(store_url, "PreCompact", trigger="auto", custom_instructions=None, **session)
        assert again.returncode == 0 and again.stdout == b""
        assert b"nothing new" in again.stderr
    assert status(store_url, project_dir)["version"] == 1
    compacted = hook(store_url, "SessionStart", source="compact", **session)
    assert "multiply_numbers" in json.loads(compacted.stdout)["hookSpecificOutput"]["additionalContext"]

    # the session goes on: only the new part is checkpointed
    with open(session["transcript_path"], "a") as handle:
        handle.write(
            json.dumps(
                {
                    "type": "user",
                    "uuid": "new-1",
                    "isSidechain": False,
                    "cwd": session["cwd"],
                    "message": {"role": "user", "content": "Now add divide_numbers with a zero check"},
                }
            )
            + "\n"
        )
        handle.write('{"type": "user", "message": {"content": "half a li')  # being written: skipped
    manual = hook(store_url, "PreCompact", trigger="manual", custom_instructions="keep tests", **session)
    assert manual.returncode == 0, manual.stderr
    after = status(store_url, project_dir)
    assert after["version"] == 2 and "divide_numbers" in str(after["current_task"])


@pytest.mark.fixtures
def test_session_start_on_startup_without_a_state_prints_nothing(
    store_url: str, session: dict[str, str]
) -> None:
    started = hook(store_url, "SessionStart", source="startup", **session)
    assert started.returncode == 0 and started.stdout == b"", started.stderr


@pytest.mark.parametrize("event", ["session-start", "session-end", "pre-compact", "post-tool-use"])
@pytest.mark.parametrize("stdin", [b"", b"{not json", b"[]"], ids=["empty", "garbage", "array"])
def test_hooks_exit_0_quietly_on_malformed_stdin(store_url: str, event: str, stdin: bytes) -> None:
    done = run(store_url, "hook", event, stdin=stdin)
    assert done.returncode == 0 and done.stdout == b""
    assert b'"level":"error"' in done.stderr


@pytest.mark.fixtures
def test_missing_transcript_and_broken_store_are_logged_not_raised(
    store_url: str, tmp_path: Path, session: dict[str, str]
) -> None:
    gone = hook(
        store_url,
        "SessionEnd",
        reason="other",
        **{**session, "transcript_path": str(tmp_path / "nope.jsonl")},
    )
    assert gone.returncode == 0 and gone.stdout == b""
    log = settle_hooks()  # a session that wrote no transcript (`claude mcp list`): a quiet no-op
    assert "nothing new since the last one" in log and '"level":"error"' not in log
    assert not (Path(session["cwd"]) / ".claude_session_id").exists()  # and it writes nothing
    bad = hook(store_url, "SessionEnd", reason="other", **{**session, "transcript_path": str(tmp_path)})
    assert bad.returncode == 0 and bad.stdout == b""
    log = settle_hooks()  # a folder given as the transcript: an error, logged, dropped
    assert "transcript_path" in log and '"level":"error"' in log
    assert not (Path(session["cwd"]) / ".claude_session_id").exists()  # a failed hook writes nothing
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    broken = f"sqlite:///{blocked}/brain.db"
    for event in ("SessionStart", "SessionEnd", "PreCompact"):
        done = hook(broken, event, source="clear", reason="clear", trigger="auto", **session)
        assert done.returncode == 0, event
        if event == "SessionEnd":  # queued: its failure comes later, from the worker
            assert done.stdout == b""
        else:  # said to the user, with the fix, and logged
            assert b'"level":"error"' in done.stderr
            told = json.loads(done.stdout)["systemMessage"]
            assert "Not a directory" in told and "Fix:" in told, told
    assert "kept for the next run" in settle_hooks()  # the store is down: the record waits


def test_install_merges_is_idempotent_and_uninstall_restores(
    store_url: str, project_dir: Path, tmp_path: Path
) -> None:
    settings = project_dir / ".claude" / "settings.json"
    settings.parent.mkdir()
    original_settings = {
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {
            "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "prettier -w"}]}]
        },
    }
    settings.write_text(json.dumps(original_settings))
    mcp = project_dir / ".mcp.json"
    original_mcp = {"mcpServers": {"other": {"type": "stdio", "command": "other-server"}}}
    mcp.write_text(json.dumps(original_mcp))

    first = run(store_url, "--json", "install", "claude-code", "--hooks", "command", cwd=project_dir)
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert len(report["changes"]) == 6 and len(report["backups"]) == 2
    merged = json.loads(settings.read_text())
    assert merged["permissions"] == original_settings["permissions"]
    post = merged["hooks"]["PostToolUse"]
    assert post[0] == original_settings["hooks"]["PostToolUse"][0]
    ours = post[1]["hooks"][0]
    # Shared with the team: the console script by name (no venv path), exec form, synchronous
    # (it only queues the payload), alwaysLoad for the server.
    assert ours == {
        "type": "command",
        "command": "infinite-context",
        "args": ["hook", "post-tool-use"],
        "timeout": 10,
    }
    assert {"SessionStart", "SessionEnd", "PreCompact", "Stop"} <= set(merged["hooks"])
    servers = json.loads(mcp.read_text())["mcpServers"]
    assert servers["other"] == original_mcp["mcpServers"]["other"]
    assert servers["infinite-context"] == {
        "type": "stdio",
        "command": "infinite-context",
        "args": ["mcp"],
        "env": {},
        "alwaysLoad": True,
    }

    snapshot = (settings.read_bytes(), mcp.read_bytes())
    second = run(store_url, "--json", "install", "claude-code", "--hooks", "command", cwd=project_dir)
    assert json.loads(second.stdout)["changes"] == []
    assert (settings.read_bytes(), mcp.read_bytes()) == snapshot

    removed = run(store_url, "install", "claude-code", "--uninstall", cwd=project_dir)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(settings.read_text()) == original_settings
    assert json.loads(mcp.read_text()) == original_mcp
    assert not list(project_dir.rglob("*.infinite-context.bak"))  # nothing of ours is left behind


def test_install_local_and_user_scopes_keep_claude_codes_own_config(
    store_url: str, project_dir: Path, tmp_path: Path
) -> None:
    config = tmp_path / "claude-config"
    config.mkdir()
    own = {"numStartups": 7, "projects": {"/elsewhere": {"mcpServers": {"x": {"command": "x"}}}}}
    (config / ".claude.json").write_text(json.dumps(own))
    env = {"CLAUDE_CONFIG_DIR": str(config)}
    for scope in ("local", "user"):
        done = run(store_url, "install", "claude-code", "--scope", scope, cwd=project_dir, **env)
        assert done.returncode == 0, done.stderr
    data = json.loads((config / ".claude.json").read_text())
    assert data["numStartups"] == 7 and data["projects"]["/elsewhere"] == own["projects"]["/elsewhere"]
    assert "infinite-context" in data["mcpServers"]
    assert "infinite-context" in data["projects"][str(project_dir.resolve())]["mcpServers"]
    assert (project_dir / ".claude" / "settings.local.json").is_file() and (
        config / "settings.json"
    ).is_file()
    for scope in ("local", "user"):
        run(store_url, "install", "claude-code", "--scope", scope, "--uninstall", cwd=project_dir, **env)
    data = json.loads((config / ".claude.json").read_text())
    assert "infinite-context" not in data.get("mcpServers", {})
    assert not (project_dir / ".claude" / "settings.local.json").exists()


def test_install_refuses_a_malformed_settings_file_and_changes_nothing(
    store_url: str, project_dir: Path
) -> None:
    settings = project_dir / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{ not json")
    done = run(store_url, "install", "claude-code", cwd=project_dir)
    assert done.returncode == 2 and b"settings.json" in done.stderr and b"not valid JSON" in done.stderr
    assert settings.read_text() == "{ not json" and not (project_dir / ".mcp.json").exists()


def test_install_never_writes_through_a_symlink(store_url: str, project_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "shared-settings.json"
    elsewhere.write_text('{"permissions": {}}')
    settings = project_dir / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.symlink_to(elsewhere)
    done = run(store_url, "install", "claude-code", cwd=project_dir)
    assert done.returncode == 2 and b"settings.json" in done.stderr and b"symlink" in done.stderr
    assert b"fix: replace" in done.stderr
    assert elsewhere.read_text() == '{"permissions": {}}' and not (project_dir / ".mcp.json").exists()

    settings.unlink()
    settings.write_text("{}")
    trap = tmp_path / "trap"
    trap.write_text("keep me")
    (project_dir / ".mcp.json").write_text("{}")
    (project_dir / ".mcp.json.infinite-context.bak").symlink_to(trap)  # a planted backup link
    done = run(store_url, "install", "claude-code", cwd=project_dir)
    assert done.returncode == 2 and b".mcp.json.infinite-context.bak" in done.stderr
    assert trap.read_text() == "keep me" and settings.read_text() == "{}"


def test_install_keeps_a_read_only_settings_file_read_only(store_url: str, project_dir: Path) -> None:
    settings = project_dir / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{}")
    settings.chmod(0o444)
    done = run(store_url, "install", "claude-code", cwd=project_dir)
    assert done.returncode == 2 and b"read-only" in done.stderr and b"chmod u+w" in done.stderr
    assert settings.read_text() == "{}" and settings.stat().st_mode & 0o777 == 0o444
    assert not (project_dir / ".mcp.json").exists()


def test_local_scope_pins_this_installation(store_url: str, project_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "claude-config"
    config.mkdir()
    done = run(
        store_url,
        "install",
        "claude-code",
        "--scope",
        "local",
        cwd=project_dir,
        CLAUDE_CONFIG_DIR=str(config),
    )
    assert done.returncode == 0, done.stderr
    hooks = json.loads((project_dir / ".claude" / "settings.local.json").read_text())["hooks"]
    assert Path(hooks["Stop"][0]["hooks"][0]["command"]).is_absolute()


def test_doctor_says_how_to_install_a_missing_console_script(
    store_url: str, project_dir: Path, tmp_path: Path
) -> None:
    assert run(store_url, "install", "claude-code", cwd=project_dir).returncode == 0
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    done = run(store_url, "--json", "doctor", cwd=project_dir, PATH=str(empty))
    checks = [c for c in json.loads(done.stdout)["checks"] if c["name"] == "claude code command"]
    assert checks and checks[0]["status"] == "fail"
    assert "not on the PATH of a new terminal" in checks[0]["detail"]
    assert "pipx install infinite-context-brain" in checks[0]["fix"]
    hooks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}["claude code hooks"]
    assert hooks["status"] == "ok" and "Stop" in hooks["detail"]


def test_reads_doctor_and_failed_hooks_create_no_session_file(store_url: str, project_dir: Path) -> None:
    for args in (("--json", "doctor"), ("--json", "status"), ("resume",)):
        run(store_url, "--project", str(project_dir), *args)
    hook(store_url, "SessionStart", source="startup", cwd=str(project_dir), session_id="s")
    hook(
        store_url,
        "SessionEnd",
        reason="exit",
        cwd=str(project_dir),
        transcript_path=str(project_dir / "gone.jsonl"),
    )
    hook(store_url, "PostToolUse", cwd=str(project_dir), tool_name="Bash")  # no tool_use_id: refused
    settle_hooks()
    assert not (project_dir / ".claude_session_id").exists()


def _install(store_url: str, project: Path, *flags: str, **env: str) -> dict[str, Any]:
    done = run(
        store_url, "--json", "install", "claude-code", "--hooks", "command", *flags, cwd=project, **env
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_endless_goes_to_the_local_scope_unless_asked_and_warns_for_the_committed_one(
    store_url: str, project_dir: Path, tmp_path: Path
) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config")}
    report = _install(store_url, project_dir, "--endless", **env)
    local = json.loads((project_dir / ".claude" / "settings.local.json").read_text())
    shared = json.loads((project_dir / ".claude" / "settings.json").read_text())
    assert local["env"]["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:") and "env" not in shared
    assert "SessionStart" in shared["hooks"] and not any("committed" in p for p in report["problems"])
    report = _install(store_url, project_dir, "--endless", "--scope", "project", **env)
    shared = json.loads((project_dir / ".claude" / "settings.json").read_text())
    assert shared["env"]["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:")
    (warning,) = [p for p in report["problems"] if "committed" in p]
    assert "closed port" in warning and "--scope project" in warning


def test_hooks_in_several_scopes_are_reported_by_install_and_doctor(
    store_url: str, project_dir: Path, tmp_path: Path
) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config")}
    assert not [p for p in _install(store_url, project_dir, **env)["problems"] if "also registered" in p]
    report = _install(store_url, project_dir, "--scope", "user", **env)
    (twice,) = [p for p in report["problems"] if "also registered" in p]
    assert "project scope" in twice and "SessionStart" in twice and "--scope project --uninstall" in twice
    hooks = {c["name"]: c for c in report["checks"]}["claude code hooks"]
    assert hooks["status"] == "warn" and "several scopes (project, user)" in hooks["detail"]
    doctor = run(store_url, "--json", "doctor", cwd=project_dir, **env)
    check = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}["claude code hooks"]
    assert check["status"] == "warn" and "SessionStart x2" in check["detail"]
    assert "--scope user --uninstall" in check["fix"]


def test_uninstall_leaves_nothing_it_created(store_url: str, project_dir: Path, tmp_path: Path) -> None:
    """Every scope installed, then removed: the project is as it was (no .mcp.json, no .claude
    folder, no backup) and Claude Code's own config holds exactly what it held (no empty
    ``mcpServers``, no project entry of ours)."""
    config = tmp_path / "claude-config"
    config.mkdir()
    own = {"numStartups": 3, "projects": {"/elsewhere": {"allowedTools": []}}}
    (config / ".claude.json").write_text(json.dumps(own))
    env = {"CLAUDE_CONFIG_DIR": str(config)}
    before = sorted(p.relative_to(project_dir) for p in project_dir.rglob("*"))
    for scope in ("project", "local", "user"):
        _install(store_url, project_dir, "--scope", scope, **env)
    assert (project_dir / ".claude").is_dir() and list(config.glob("*.infinite-context.bak"))
    for scope in ("project", "local", "user"):
        done = run(
            store_url, "install", "claude-code", "--scope", scope, "--uninstall", cwd=project_dir, **env
        )
        assert done.returncode == 0, done.stderr
    assert sorted(p.relative_to(project_dir) for p in project_dir.rglob("*")) == before
    assert json.loads((config / ".claude.json").read_text()) == own
    assert sorted(p.name for p in config.iterdir()) == [".claude.json"]


def test_doctor_says_command_hooks_do_not_wait_for_approval(
    store_url: str, project_dir: Path, tmp_path: Path
) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config")}
    _install(store_url, project_dir, **env)
    doctor = run(store_url, "--json", "doctor", cwd=project_dir, **env)
    check = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}["claude code approval"]
    assert check["status"] == "warn" and "its tools do not run" in check["detail"]
    assert (
        "the command hooks (SessionStart, SessionEnd, PreCompact, PostToolUse, Stop) run" in check["detail"]
    )
    assert "neither" not in check["detail"]


def test_install_says_when_claude_code_cannot_start_the_command(
    store_url: str, project_dir: Path, tmp_path: Path
) -> None:
    """The project scope names the bare console script: from a new terminal (a fresh login shell
    whose profile does not add this installation's folder to PATH) Claude Code cannot start it.
    Install says so, with the fix, and ends with doctor's checks, the files and the restart
    hint; once the login profile puts it on PATH, nothing stands in the way."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"), "HOME": str(home), "SHELL": "/bin/bash"}
    report = _install(store_url, project_dir, **env)
    (problem,) = [p for p in report["problems"] if "new terminal" in p]
    assert "`infinite-context` is not on the PATH of a new terminal" in problem
    assert "--scope local" in problem and "~/.local/bin" in problem
    command = {c["name"]: c for c in report["checks"]}["claude code command"]
    assert command["status"] == "fail"
    assert str(project_dir / ".mcp.json") in report["files"]
    assert str(project_dir / ".claude" / "settings.json") in report["files"]
    assert report["restart"].startswith("Restart Claude Code")
    human = run(store_url, "install", "claude-code", "--hooks", "mcp", cwd=project_dir, **env)
    text = " ".join(human.stdout.decode().split())
    assert "Files changed:" in text and "Restart Claude Code" in text and "not on the PATH" in text

    (home / ".profile").write_text(f'PATH="{Path(sys.executable).parent}:$PATH"\n')
    report = _install(store_url, project_dir, "--hooks", "mcp", **env)
    assert report["problems"] == [] and report["restart"] == ""  # nothing changed, nothing in the way
    command = {c["name"]: c for c in report["checks"]}["claude code command"]
    assert command["status"] == "ok" and command["detail"].endswith(
        str(Path(sys.executable).parent / "infinite-context")
    )
    local = _install(store_url, project_dir, "--scope", "local", **{**env, "HOME": str(tmp_path)})
    assert not [p for p in local["problems"] if "new terminal" in p]  # an absolute path


@pytest.mark.parametrize("event", ["session-start", "session-end", "pre-compact", "post-tool-use", "stop"])
def test_hooks_given_input_nested_too_deep_exit_0_with_a_clear_line(store_url: str, event: str) -> None:
    deep = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
    done = subprocess.run(
        [str(Path(sys.executable).parent / "infinite-context"), "hook", event],
        input=deep,
        env=cli_env(store_url),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == b""
    (line,) = [json.loads(line) for line in done.stderr.splitlines()]
    assert line["level"] == "error" and "nested too deeply" in line["msg"], line


@pytest.mark.fixtures
def test_the_first_failed_hand_off_is_said_once_in_its_session(
    store_url: str, session: dict[str, str], tmp_path: Path
) -> None:
    """A Stop queued as a command fails in the worker (its store is gone); the session's next
    hook says so once (``systemMessage``), the next one says nothing."""
    gone = tmp_path / "not-a-folder"
    gone.write_text("")
    broken = f"sqlite:///{gone}/brain.db"
    assert hook(broken, "Stop", process=True, **session).stdout == b""
    settle_hooks()
    post = {"tool_name": "Bash", "tool_input": {}, "tool_response": {"stdout": "ok"}, **session}
    told = hook(broken, "PostToolUse", process=True, tool_use_id="toolu_a", **post)
    message = json.loads(told.stdout)["systemMessage"]
    assert "could not save the hand-off after the last answer" in message and "Not a directory" in message
    assert hook(broken, "PostToolUse", process=True, tool_use_id="toolu_b", **post).stdout == b""


def test_the_editors_connect_command_gets_files_problems_and_the_restart_hint(
    project_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the language server's installClaudeCode request returns (``report.__dict__`` of the
    same call): plain JSON with the files changed, what stands in the way, the checks and the
    restart hint."""
    monkeypatch.setenv("HOME", str(tmp_path))  # a login shell whose PATH lacks this venv
    report = install_for_claude_code(project_dir, "project", claude_config_dir=tmp_path / "cc", hooks="mcp")
    sent = json.loads(json.dumps(report.__dict__))
    assert sent["files"] == [str(project_dir / ".mcp.json"), str(project_dir / ".claude" / "settings.json")]
    assert any("new terminal" in p and "Fix:" in p for p in sent["problems"])
    assert {"claude code mcp", "claude code hooks", "claude code command"} <= {
        c["name"] for c in sent["checks"]
    }
    assert sent["restart"].startswith("Restart Claude Code")


@pytest.mark.fixtures
def test_stop_asks_the_model_for_a_checkpoint_once_the_context_is_nearly_full(
    store_url: str, project_dir: Path, tmp_path: Path
) -> None:
    """The Stop hook as Claude Code runs it (a process, the fast path that queues the hand-off) on
    a real session whose last answer had 153k tokens of context: it blocks once, with the request
    for a checkpoint as its reason; never when Claude Code already continues for a Stop hook; a
    wrong share in the environment is logged by its name and nothing is blocked."""
    transcript = tmp_path / "full.jsonl"
    shutil.copy(PHANTOM, transcript)
    payload = {"session_id": "s1", "transcript_path": str(transcript), "cwd": str(project_dir)}
    asked = hook(store_url, "Stop", process=True, **payload)
    assert asked.returncode == 0, asked.stderr
    output = json.loads(asked.stdout)
    assert output["decision"] == "block" and output["reason"].startswith(MARK)
    going_on = hook(store_url, "Stop", process=True, stop_hook_active=True, **payload)
    assert going_on.returncode == 0 and going_on.stdout == b"", going_on.stderr
    stdin = json.dumps({"hook_event_name": "Stop", **payload}).encode()
    wrong = run_cli_process(store_url, "hook", "stop", stdin=stdin, INFINITE_CONTEXT_CHECKPOINT_NUDGE="most")
    assert wrong.returncode == 0 and wrong.stdout == b""
    assert b"INFINITE_CONTEXT_CHECKPOINT_NUDGE" in wrong.stderr
    off = run_cli_process(store_url, "hook", "stop", stdin=stdin, INFINITE_CONTEXT_CHECKPOINT_NUDGE="0")
    assert off.returncode == 0 and off.stdout == b""
    settle_hooks()  # the hand-offs the Stops queued are written all the same
    assert status(store_url, project_dir)["version"] == 1


def test_hook_outputs_combine_keeping_every_message_for_the_user() -> None:
    from infinite_context_brain.server.claude_code.failures import combined, with_message

    asked = {"decision": "block", "reason": "r", "systemMessage": "asking"}
    assert combined(None, None) is None
    assert with_message(None, "saved") == {"systemMessage": "saved"}
    assert with_message(asked, None) == asked
    assert with_message(asked, "a hook failed") == {**asked, "systemMessage": "asking\na hook failed"}
    assert combined({"systemMessage": "a"}, {"continue": False}) == {"systemMessage": "a", "continue": False}
