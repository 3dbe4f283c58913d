"""A store that cannot be used, seen from the real Claude Code CLI used interactively (a
pseudo-terminal, the scripted fake Messages API): SessionStart says what failed and the fix on the
screen, and so does the session's next hook after a hand-off that failed, once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..helpers.claude_session import ClaudeProject, Terminal, claude_binary, interactive
from ..helpers.fake_anthropic import Step, fake_anthropic

pytestmark = pytest.mark.slow  # the real Claude Code CLI (node)


@pytest.fixture
def broken(tmp_path: Path) -> Iterator[ClaudeProject]:
    """Installed with command hooks, its store a path under a file (unusable)."""
    claude_binary()
    project = ClaudeProject.create(tmp_path, hooks="command")
    interactive(project)
    gone = tmp_path / "not-a-folder"
    gone.write_text("")
    project.env["INFINITE_CONTEXT_STORE_URL"] = f"sqlite:///{gone}/brain.db"
    yield project
    project.spool_settled()


def test_an_unusable_store_is_said_on_the_screen_with_its_fix(broken: ClaudeProject) -> None:
    echo = [
        Step(text="Checking.", tool="Bash", input={"command": "echo hi", "description": "echo"}),
        Step(text="Ok."),
    ]
    with (
        fake_anthropic([Step(text="Ok.")], by_prompt={"Check": echo}) as fake,
        Terminal(broken, fake) as term,
    ):
        assert term.ready(), term.shown()[-2000:]
        assert term.wait_for(
            "SessionStart:startup says: infinite-context could not load this project's brain", 30
        )
        assert term.wait_for("Not a directory. Fix: make that folder writable", 5), "\n".join(term.rows())

        mark = term.mark()
        term.submit("Say hello")  # its Stop hand-off is queued, and fails in the worker
        assert term.wait_for("Ok.", 60, mark), "\n".join(term.rows())
        deadline = time.monotonic() + 30
        while "kept for the next run" not in broken.worker_log() and time.monotonic() < deadline:
            time.sleep(0.1)  # the turn ends (Stop queued), the worker runs it
        assert "kept for the next run" in broken.worker_log(), broken.worker_log()

        mark = term.mark()
        term.submit("Check it")  # the session's next hook says it, once
        assert term.wait_for("Ok.", 60, mark), "\n".join(term.rows())
        said = "could not save the hand-off after the last answer"
        assert term.wait_for(said, 10, mark), "\n".join(term.rows())
        once = said.replace(" ", "")  # drawn once (the stream may hold it with letters missing)
        assert term.shown()[mark:].count(once) <= 1 and term.on_screen().count(once) == 1
