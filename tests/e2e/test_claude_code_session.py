"""A whole session of the real Claude Code CLI (pinned in tools/) against a scripted fake
Messages API: what the current CLI version writes to its transcript must read as the right facts,
and the hand-off hook must turn them into a resume that names the work in progress."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from infinite_context_brain.core.transcript.digest import digest, session_root
from infinite_context_brain.core.transcript.reader import TranscriptReader

from ..conftest import PYTHON, settle_hooks
from ..helpers.claude_session import claude_binary, claude_env, claude_print
from ..helpers.fake_anthropic import Step, fake_anthropic

pytestmark = pytest.mark.slow  # the real Claude Code CLI (node)

REQUEST = "Add a hello module with a test, and run the tests"


def script(project: Path) -> list[Step]:
    """The task list as this CLI version keeps it (TaskCreate / TaskUpdate), a file written, a
    failing test run, and a closing question."""

    def task(subject: str) -> Step:
        return Step(tool="TaskCreate", input={"subject": subject, "description": subject})

    hello = {"file_path": str(project / "hello.py"), "content": "def hi():\n    return 'hi'\n"}
    command = f"cd {project} && {PYTHON} -m pytest -q test_missing_hello.py 2>&1"
    return [
        task("Write hello.py"),
        task("Run the tests"),
        task("Fix what fails"),
        Step(tool="TaskUpdate", input={"taskId": "1", "status": "completed"}),
        Step(tool="TaskUpdate", input={"taskId": "2", "status": "in_progress"}),
        Step(text="Writing the module.", tool="Write", input=hello),
        Step(text="Now the tests.", tool="Bash", input={"command": command, "description": "Run tests"}),
        Step(text="The tests fail: test_missing_hello.py does not exist yet. Want me to write it?"),
    ]


def run_session(tmp_path: Path) -> tuple[Path, Path]:
    claude = claude_binary()
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = claude_env(tmp_path)
    with fake_anthropic(script(project)) as fake:
        env.update(
            ANTHROPIC_BASE_URL=fake.url,
            ANTHROPIC_API_KEY="sk-ant-fake-key-for-tests",
            DISABLE_AUTOUPDATER="1",
            DISABLE_ERROR_REPORTING="1",
        )
        claude_print(claude, REQUEST, "Bash Write TaskCreate TaskUpdate", project, env)
        assert len(fake.main_requests()) >= 8, [r.get("messages", [])[-1:] for r in fake.main_requests()]
    transcripts = list((Path(env["CLAUDE_CONFIG_DIR"]) / "projects").rglob("*.jsonl"))
    main = [t for t in transcripts if "subagents" not in t.parts]
    assert len(main) == 1, transcripts
    return project, main[0]


def test_the_current_cli_transcript_reads_as_facts_and_resumes(tmp_path: Path, store_url: str) -> None:
    project, transcript = run_session(tmp_path)
    assert session_root(transcript) == project.resolve()

    facts = digest(TranscriptReader(transcript), [project.resolve()])
    assert facts.requests == [REQUEST]
    assert facts.tasks is not None and [t.status for t in facts.tasks] == [
        "completed",
        "in_progress",
        "pending",
    ]
    assert facts.files_edited == ["hello.py"] and facts.uncommitted == ["hello.py"]
    assert [f.check for f in facts.failures] == ["pytest -q test_missing_hello.py"]
    assert [q.text for q in facts.questions if q.answer is None] == ["Want me to write it?"]

    # The hand-off hook, as Claude Code runs it at SessionEnd, then what SessionStart injects.
    env = {
        "INFINITE_CONTEXT_STORE_URL": store_url,
        "INFINITE_CONTEXT_MERGE": "offline",
        "CLAUDE_PROJECT_DIR": str(project),
    }
    import os

    full_env = {**os.environ, **env}
    payload = {"session_id": "s", "transcript_path": str(transcript), "cwd": str(project), "reason": "exit"}
    subprocess.run(
        [PYTHON, "-m", "infinite_context_brain.server", "hook", "session-end"],
        input=json.dumps(payload),
        text=True,
        env=full_env,
        check=True,
        timeout=60,
    )
    settle_hooks()  # SessionEnd is queued; its worker writes the hand-off
    started = subprocess.run(
        [PYTHON, "-m", "infinite_context_brain.server", "hook", "session-start"],
        input=json.dumps({**payload, "source": "clear"}),
        text=True,
        env=full_env,
        capture_output=True,
        check=True,
        timeout=60,
    )
    text = json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"**Task:** {REQUEST}" in text
    assert "**In progress:** Run the tests" in text and "- Fix what fails" in text
    assert "`pytest -q test_missing_hello.py` failed" in text
    assert "`hello.py`" in text and "Done: Write hello.py" in text
    assert "[open] Want me to write it? (you asked the user)" in text
