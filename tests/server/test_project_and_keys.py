"""The surfaces agree on the project folder and show which key pays: `doctor` and `status`
(in-process CLI), and a hook run as Claude Code runs it (a real process); the session id file is
trusted only as a short id in a plain file."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest

from infinite_context_brain.server.cli.main import main

from ..conftest import FIXTURES, run_cli, settle_hooks

SMALL = FIXTURES / "claude-reliability" / "coverage-test-fix" / "transcript.jsonl"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, store_url: str, tmp_path: Path) -> pytest.MonkeyPatch:
    monkeypatch.setenv("INFINITE_CONTEXT_STORE_URL", store_url)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    return monkeypatch


def _doctor(project: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str]:
    code = main(["--project", str(project), *flags, "doctor"])
    return code, capsys.readouterr().out


def test_doctor_says_claude_codes_key_is_not_used(
    env: pytest.MonkeyPatch, project_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env.setenv("CLAUDECODE", "1")
    env.setenv("ANTHROPIC_API_KEY", "sk-claude-codes-own")
    code, out = _doctor(project_dir, capsys, "--json")
    merge = next(c for c in json.loads(out)["checks"] if c["name"] == "merge")
    assert code == 0 and merge["status"] == "warn"
    assert "anthropic skipped: ANTHROPIC_API_KEY is inherited from Claude Code" in merge["detail"]
    assert "INFINITE_CONTEXT_ANTHROPIC_API_KEY" in merge["fix"]
    assert "sk-claude-codes-own" not in out

    code, out = _doctor(project_dir, capsys)  # the human form says the same
    assert "merge: mode auto: offline; gemini skipped: no key" in " ".join(out.split())


def test_doctor_names_the_variable_that_pays(
    env: pytest.MonkeyPatch, project_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env.setenv("CLAUDECODE", "1")
    env.setenv("INFINITE_CONTEXT_ANTHROPIC_API_KEY", "sk-ours")
    code, out = _doctor(project_dir, capsys, "--json")
    merge = next(c for c in json.loads(out)["checks"] if c["name"] == "merge")
    assert merge["status"] == "ok"
    assert merge["detail"].startswith(
        "mode auto: anthropic (claude-sonnet-5-5, key from INFINITE_CONTEXT_ANTHROPIC_API_KEY) -> offline"
    )

    env.setenv("INFINITE_CONTEXT_MERGE", "gemini")  # a mode that cannot work is a failure
    code, out = _doctor(project_dir, capsys, "--json")
    merge = next(c for c in json.loads(out)["checks"] if c["name"] == "merge")
    assert code == 1 and merge["status"] == "fail" and "GEMINI_API_KEY" in merge["fix"]


def test_status_shows_the_merge_plan(
    env: pytest.MonkeyPatch, project_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env.setenv("ANTHROPIC_API_KEY", "sk-plain")  # not under Claude Code: it counts
    assert main(["--project", str(project_dir), "--json", "status"]) == 0
    plan = json.loads(capsys.readouterr().out)["merge_plan"]
    anthropic = next(t for t in plan["tiers"] if t["tier"] == "anthropic")
    assert anthropic["runs"] and anthropic["key_from"] == "ANTHROPIC_API_KEY"
    assert main(["--project", str(project_dir), "status"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "Merge plan: mode auto: anthropic (claude-sonnet-5-5, key from ANTHROPIC_API_KEY) -> offline" in text
    )


@pytest.mark.fixtures
def test_a_hook_uses_claude_project_dir_before_the_payloads_cwd(
    store_url: str, project_dir: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    transcript = tmp_path / "session.jsonl"
    shutil.copy(SMALL, transcript)
    payload = {
        "hook_event_name": "SessionEnd",
        "reason": "clear",
        "session_id": "s1",
        "transcript_path": str(transcript),
        "cwd": str(elsewhere),
    }
    done = run_cli(
        store_url,
        "hook",
        "session-end",
        stdin=json.dumps(payload).encode(),
        CLAUDE_PROJECT_DIR=str(project_dir),
    )
    assert done.returncode == 0, done.stderr
    settle_hooks()  # SessionEnd is queued; its worker writes the hand-off
    assert (project_dir / ".claude_session_id").exists()
    assert not (elsewhere / ".claude_session_id").exists()
    status = run_cli(store_url, "--project", str(project_dir), "--json", "status")
    assert json.loads(status.stdout)["version"] == 1


def test_a_session_id_file_that_is_a_link_is_never_followed(
    store_url: str, project_dir: Path, tmp_path: Path
) -> None:
    """A repository shipping ``.claude_session_id -> ../.git-credentials``: the credential never
    becomes the id (shown by status, sent to the model, in every store key); a read sees no brain,
    a write is refused with the fix, and the link's target is left alone."""
    credentials = tmp_path / ".git-credentials"
    credentials.write_text("https://me:ghp_secret0123456789abcdefghij@github.com\n")
    (project_dir / ".claude_session_id").symlink_to(credentials)
    status = run_cli(store_url, "--project", str(project_dir), "--json", "status")
    assert status.returncode == 0 and b"ghp_secret" not in status.stdout + status.stderr
    assert json.loads(status.stdout)["has_state"] is False
    write = run_cli(store_url, "--project", str(project_dir), "checkpoint", "-m", "Current task: x")
    assert write.returncode != 0 and b"ghp_secret" not in write.stdout + write.stderr
    assert b"is a symbolic link" in write.stderr and b"delete" in write.stderr
    assert credentials.read_text().startswith("https://me:")


@pytest.mark.parametrize(
    "content",
    ["{ic}:state\n", "a" * 65, "../../etc\n", "name with spaces", "\x1b[31mred"],
    ids=["hash-tag", "too-long", "path", "spaces", "escape"],
)
def test_a_session_id_is_a_short_run_of_safe_characters(
    store_url: str, project_dir: Path, content: str
) -> None:
    (project_dir / ".claude_session_id").write_text(content)
    write = run_cli(store_url, "--project", str(project_dir), "checkpoint", "-m", "Current task: x")
    assert write.returncode != 0 and b"does not hold a session id" in write.stderr, write.stderr


def test_a_new_session_id_is_a_uuid_and_a_name_of_safe_characters_is_kept(
    store_url: str, project_dir: Path
) -> None:
    assert (
        run_cli(store_url, "--project", str(project_dir), "checkpoint", "-m", "Current task: x").returncode
        == 0
    )
    created = (project_dir / ".claude_session_id").read_text().strip()
    assert str(uuid.UUID(created)) == created
    named = project_dir / "sub"
    (named / ".git").mkdir(parents=True)
    (named / ".claude_session_id").write_text("team-brain_2.0\n")
    assert run_cli(store_url, "--project", str(named), "checkpoint", "-m", "Current task: y").returncode == 0
    status = json.loads(run_cli(store_url, "--project", str(named), "--json", "status").stdout)
    assert status["session_id"] == "team-brain_2.0"
