"""The `infinite-context` command as a user runs it, on a real SQLite file: ``main(argv)`` in this
process for the commands, and the installed console script as a real process for start-up,
stdin, exit status and the logs on stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ..conftest import cli_env, run_cli
from ..helpers.fake_providers import fake_provider

LOG_KEYS = {"ts", "level", "logger", "msg"}


def run(
    project: Path, store_url: str, *args: str, stdin: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    done = run_cli(store_url, "--project", str(project), *args, stdin=stdin.encode(), **env)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def log_lines(stderr: str) -> list[dict[str, object]]:
    """Every stderr line as the JSON object it must be (fails on any other line)."""
    lines = [json.loads(line) for line in stderr.splitlines()]
    assert all(isinstance(line, dict) and set(line) >= LOG_KEYS for line in lines), lines
    return lines


def test_checkpoint_from_message_file_and_stdin_then_json_views(
    project_dir: Path, store_url: str, tmp_path: Path
) -> None:
    assert run(project_dir, store_url, "checkpoint", "-m", "Current task: A in src/app.py").returncode == 0
    notes = tmp_path / "notes.md"
    notes.write_text("Done: A. Next: B in src/auth.py")
    assert run(project_dir, store_url, "checkpoint", "--file", str(notes)).returncode == 0
    piped = run(project_dir, store_url, "--json", "checkpoint", "-", stdin="Decided: use C for B.")
    assert piped.returncode == 0 and json.loads(piped.stdout)["version"] == 3

    status = json.loads(run(project_dir, store_url, "--json", "status").stdout)
    assert status["version"] == 3 and status["current_task"] == "B in src/auth.py"
    resume = run(project_dir, store_url, "resume")
    assert resume.returncode == 0 and "B in src/auth.py" in resume.stdout
    history = json.loads(run(project_dir, store_url, "--json", "history").stdout)
    assert [h["version"] for h in history["items"]] == [3, 2, 1]
    diff = json.loads(run(project_dir, store_url, "--json", "diff", "1", "2").stdout)
    assert diff["changes"]
    rb = json.loads(run(project_dir, store_url, "--json", "rollback", "--version", "1").stdout)
    assert rb == {"version": 4, "restored_from": 1, "merged_by": "rollback:v1"}


def test_errors_have_a_message_a_fix_and_an_exit_status(
    project_dir: Path, store_url: str, tmp_path: Path
) -> None:
    empty = run(project_dir, store_url, "checkpoint", "-m", "")
    assert empty.returncode == 2 and "argument -m: is empty" in empty.stderr and "fix:" in empty.stderr
    missing = run(project_dir, store_url, "checkpoint", "--file", str(tmp_path / "nope.txt"))
    assert missing.returncode == 2 and "--file" in missing.stderr
    unknown = run(project_dir, store_url, "--json", "rollback", "--version", "7")
    assert unknown.returncode == 3 and json.loads(unknown.stdout)["error"] == "NotFound"
    bad_store = run(project_dir, "sqlite:////proc/forbidden/brain.db", "status")
    assert bad_store.returncode == 4 and "INFINITE_CONTEXT_STORE_URL" in bad_store.stderr
    assert "Traceback" not in bad_store.stderr
    usage = run(project_dir, store_url, "rollback", "--steps", "many")
    assert usage.returncode == 2 and "--steps" in usage.stderr and usage.stdout == ""


def test_doctor(project_dir: Path, store_url: str) -> None:
    out = run(project_dir, store_url, "--json", "doctor")
    checks = {c["name"]: c for c in json.loads(out.stdout)["checks"]}
    assert out.returncode == 0
    assert {"python", "settings", "project", "store", "merge"} <= set(checks)
    assert all(c["status"] != "fail" for c in checks.values())
    broken = run(project_dir, "sqlite:////proc/forbidden/brain.db", "doctor")
    assert broken.returncode == 1 and "fix:" in broken.stdout


def test_logs_are_json_lines_on_stderr(project_dir: Path, store_url: str) -> None:
    # A checkpoint worth a warning: the Gemini key is rejected, so the merge falls back offline.
    with fake_provider("gemini", [("status", 401)]) as gemini:
        done = run(
            project_dir,
            store_url,
            "checkpoint",
            "-m",
            "Working on src/app.py",
            GEMINI_API_KEY="rejected",
            INFINITE_CONTEXT_GEMINI_BASE_URL=gemini.url,
            INFINITE_CONTEXT_MERGE="gemini",
            INFINITE_CONTEXT_LOG_LEVEL="DEBUG",
        )
    assert done.returncode == 0 and "merged by offline" in done.stdout, done.stderr
    lines = log_lines(done.stderr)
    assert any(
        line["level"] == "warning"
        and str(line["logger"]).startswith("infinite_context_brain")
        and "gemini" in str(line["msg"]).lower()
        for line in lines
    ), lines
    assert gemini.requests


def test_memory_commands(project_dir: Path, store_url: str, tmp_path: Path) -> None:
    stored = run(
        project_dir,
        store_url,
        "--json",
        "memory",
        "store",
        "-m",
        "Error: redis timed out",
        "--importance",
        "8",
    )
    assert stored.returncode == 0, stored.stderr
    assert json.loads(stored.stdout)["item"]["content_type"] == "error"
    assert (
        run(
            project_dir, store_url, "memory", "store", "-", stdin="We decided to go with getUserById"
        ).returncode
        == 0
    )
    hits = json.loads(run(project_dir, store_url, "--json", "memory", "query", "user", "id").stdout)["items"]
    assert hits and "getUserById" in hits[0]["item"]["content"]
    listed = run(project_dir, store_url, "memory", "list")
    assert listed.returncode == 0 and "redis timed out" in listed.stdout
    exported = run(project_dir, store_url, "memory", "export")
    dump = tmp_path / "memory.json"
    dump.write_text(exported.stdout)
    assert len(json.loads(exported.stdout)) == 2
    compacted = json.loads(run(project_dir, store_url, "--json", "memory", "compact", "--target", "1").stdout)
    assert compacted["after_tokens"] <= 1
    other = tmp_path / "other"
    other.mkdir()
    imported = run(other, store_url, "--json", "memory", "import", str(dump))
    assert json.loads(imported.stdout) == {"imported": 2}
    bad = run(project_dir, store_url, "memory", "store", "-m", "x", "--importance", "11")
    assert bad.returncode == 2 and "importance" in bad.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("[{")
    assert run(project_dir, store_url, "memory", "import", str(broken)).returncode == 2
    status = json.loads(run(project_dir, store_url, "--json", "status").stdout)
    assert status["memory"]["archived"] == 2


def test_the_console_script_as_a_real_process(project_dir: Path, store_url: str) -> None:
    """The installed ``infinite-context`` script: start-up, stdin, stdout, exit status, logs."""
    script = Path(sys.executable).with_name("infinite-context")
    env = cli_env(store_url, INFINITE_CONTEXT_LOG_LEVEL="DEBUG")

    def real(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(script), "--project", str(project_dir), *args],
            input=stdin,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    piped = real("--json", "checkpoint", "-", stdin="Current task: ship it in src/app.py")
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["version"] == 1
    log_lines(piped.stderr)
    unknown = real("rollback", "--version", "7")
    assert unknown.returncode == 3 and "error:" in unknown.stderr and unknown.stdout == ""
    usage = real("no-such-command")
    assert usage.returncode == 2 and "invalid choice" in usage.stderr
