"""`/clear` right after an answer, in the real Claude Code CLI used interactively (a pseudo-terminal,
against the scripted fake Messages API), on both hook transports: the next session starts with
what the cleared one did. Claude Code runs SessionEnd and SessionStart at once; the hand-off of
the last turn may still be queued (command hooks) or waiting on our MCP server (``mcp_tool``
Stop), and SessionStart must wait for it. Also with a large transcript never handed off before
(a real 3 MB session, resumed)."""

from __future__ import annotations

import os
import re
import shutil
import time

import pytest

from ..conftest import SPOTTER_LONG
from ..helpers.claude_session import ClaudeProject, Terminal, clear_and_continue
from ..helpers.fake_anthropic import Step, fake_anthropic

pytestmark = pytest.mark.slow  # the real Claude Code CLI (node)

ANSWER = "The parser refactor is done: tokens are typed now."


def test_clear_right_after_an_answer_starts_with_that_answer(interactive_project: ClaudeProject) -> None:
    first = [
        Step(text="Refactoring.", tool="Bash", input={"command": "echo typed-tokens", "description": "echo"}),
        Step(text=ANSWER),
    ]
    with (
        fake_anthropic([Step(text="Picking it up.")], by_prompt={"Refactor": first}, tag="clear") as fake,
        Terminal(interactive_project, fake) as term,
    ):
        assert term.ready(), term.shown()[-2000:]
        mark = term.mark()
        term.submit("Refactor the parser")
        assert term.wait_for(ANSWER, 90, mark), term.shown()[-2000:]
        context = clear_and_continue(term, fake)  # the moment the answer is on the screen
    assert "infinite-context saved this project's context" in context, context
    assert "Refactor the parser" in context and "tokens are typed now" in context, context


@pytest.mark.fixtures
def test_clear_after_resuming_a_large_session_never_handed_off(interactive_project: ClaudeProject) -> None:
    """A real 3 MB session resumed in Claude Code: its whole transcript is handed off for the
    first time right after one more answer, and /clear follows at once."""
    session = SPOTTER_LONG.stem
    config, root = interactive_project.config, interactive_project.root
    folder = config / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(root))
    folder.mkdir(parents=True)
    shutil.copy(SPOTTER_LONG, folder / f"{session}.jsonl")
    os.chmod(folder / f"{session}.jsonl", 0o600)
    with (
        fake_anthropic([Step(text="Picking it up.")], by_prompt={"Carry": [Step(text=ANSWER)]}) as fake,
        Terminal(interactive_project, fake, "--resume", session) as term,
    ):
        assert term.ready(), term.shown()[-2000:]
        mark = term.mark()
        term.submit("Carry on")
        assert term.wait_for(ANSWER, 120, mark), term.shown()[-2000:]
        context = clear_and_continue(term, fake)
    assert "infinite-context saved this project's context" in context, context
    assert "spotter-dov" in context and "tokens are typed now" in context, context


def test_clear_after_an_interrupted_turn_keeps_it(interactive_project: ClaudeProject) -> None:
    """Esc in the middle of a long tool call: Claude Code runs no Stop hook for the turn, so only
    SessionEnd hands it off, and SessionStart right after it must wait for that hand-off."""
    long_call = [
        Step(text="Migrating.", tool="Bash", input={"command": "sleep 30", "description": "migrate"}),
        Step(text="Migrated."),
    ]
    with (
        fake_anthropic([Step(text="Picking it up.")], by_prompt={"Migrate": long_call}, tag="esc") as fake,
        Terminal(interactive_project, fake) as term,
    ):
        assert term.ready(), term.shown()[-2000:]
        mark = term.mark()
        term.submit("Migrate the billing tables to the ledger schema")
        assert term.wait_for("Migrating.", 90, mark), term.shown()[-2000:]
        time.sleep(1.0)  # the tool is running
        term.interrupt()
        assert term.wait_for("Interrupted", 30, mark), term.shown()[-2000:]
        context = clear_and_continue(term, fake)
    assert "Migrate the billing tables to the ledger schema" in context, context
