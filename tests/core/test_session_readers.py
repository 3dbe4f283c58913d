"""What is left and what is stale, read from real Claude Code sessions: Claude Code's compaction
summary, the assistant's plans, tracker listings, decisions in its words, moves and deletes,
compound checks, rejected tool calls with the user's words, edited symbols, markup."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from infinite_context_brain.core.facts import CompactSummary, ContextFacts
from infinite_context_brain.core.merge import MergeRequest, OfflineMerger
from infinite_context_brain.core.merge.record import finish
from infinite_context_brain.core.models import ProjectState
from infinite_context_brain.core.render import render_within
from infinite_context_brain.core.transcript.commands import classify, file_changes, settles, unsettled
from infinite_context_brain.core.transcript.digest import digest
from infinite_context_brain.core.transcript.leftover import (
    approved_plan,
    decisions_in,
    plan_in,
    tracker_listing,
)
from infinite_context_brain.core.transcript.markup import compact_instructions, strip_markup, user_text
from infinite_context_brain.core.transcript.reader import TranscriptReader
from infinite_context_brain.core.transcript.summary import read_summary
from infinite_context_brain.core.transcript.symbols import edited_symbols

from ..conftest import FIXTURES

SPOTTER_DOV = FIXTURES / "spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
SPOTTER_GQC = FIXTURES / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
ENTIRE = FIXTURES / "other-projects" / "entireio+cli" / "1284c080-f9cd-45f8-9942-ff58f5c517e5.jsonl"
APOLLO = FIXTURES / "other-projects" / "dspurkayastha+Apollo" / "132cf69f-fa54-4f25-abb4-28763a7e29e8.jsonl"
CIPHER = FIXTURES / "other-projects" / "FSM1+cipher-box" / "2095544c-fa50-4027-b664-c37e578957ce.jsonl"
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
    "edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\n"
)


def _objects(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(raw) for raw in path.read_bytes().splitlines() if raw.strip()]


def _text(obj: dict[str, Any]) -> str:
    content = (obj.get("message") or {}).get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


def _summaries(path: Path) -> list[str]:
    return [_text(o) for o in _objects(path) if o.get("isCompactSummary")]


def _assistant_text(path: Path, line: int) -> str:
    return _text(_objects(path)[line - 1])


def _merge(facts: ContextFacts, old: ProjectState | None = None) -> ProjectState:
    request = MergeRequest(
        old=old, facts=facts, session_id="s", project_root=Path("/nowhere"), token_cap=12_000, now=NOW
    )
    return finish(OfflineMerger().merge(request).state, old, facts, NOW, 12_000)[0]


# ---- Claude Code's compaction summary -------------------------------------------------------------


@pytest.mark.fixtures
def test_every_real_summary_is_read_part_by_part() -> None:
    paths = [SPOTTER_DOV, SPOTTER_GQC, ENTIRE, APOLLO, CIPHER]
    for path in paths:
        for text in _summaries(path):
            summary = read_summary(text)
            assert summary is not None
            assert summary.pending and summary.current_work and summary.next_step, path.name
            assert "If you need specific details" not in summary.next_step
    entire = read_summary(_summaries(ENTIRE)[0])
    assert entire is not None
    assert any("findSessionsForWorktree" in p for p in entire.pending)
    assert "TestShadow_CommitBeforeStop" in entire.current_work
    assert "mise run test:ci" in entire.next_step
    # an error and the fix written under it stay one item
    assert any("Fixed" in e or "Resolved" in e for e in entire.errors_and_fixes)
    assert read_summary("Fixed the login bug.") is None


@pytest.mark.fixtures
def test_the_summary_survives_clear_and_its_next_steps_are_kept_until_a_commit() -> None:
    lines = _objects(SPOTTER_DOV)

    boundary = next(i for i, o in enumerate(lines) if o.get("subtype") == "compact_boundary")
    after = [o for o in lines[boundary : boundary + 3] if o.get("isCompactSummary")]
    facts = digest(_entries(after))
    assert facts.compact_summary is not None
    state = _merge(facts)
    origins = {s.origin for s in state.active_context.next_steps}
    assert origins == {"summary"}
    text = render_within(state, 2000)
    assert "Access.get" in text and "compute_expand_groups" in text
    committed = ContextFacts(source="transcript", settled=["plan", "summary"])
    later = _merge(committed, state)
    assert not later.active_context.next_steps and later.compact_summary is not None
    assert later.compact_summary.settled


def _entries(objects: list[dict[str, Any]]) -> list[Any]:
    """Entries of ``objects`` read by the real reader, from a file of their own."""
    import tempfile

    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as handle:
        handle.write(b"\n".join(orjson.dumps(o) for o in objects) + b"\n")
    try:
        return list(TranscriptReader(Path(handle.name)))
    finally:
        Path(handle.name).unlink()


def test_compact_instructions_are_the_users_intent() -> None:
    wrapped = (
        "<command-name>/compact</command-name>\n<command-message>compact</command-message>\n"
        "<command-args>focus on the webhook retry bug and the open PR review</command-args>"
    )
    assert compact_instructions(wrapped) == "focus on the webhook retry bug and the open PR review"
    assert user_text(wrapped) == ""  # a session command, not a request
    assert compact_instructions("<command-name>/clear</command-name>") == ""


# ---- what is left ---------------------------------------------------------------------------------


@pytest.mark.fixtures
def test_the_assistants_numbered_plan_is_read() -> None:
    text = next(
        _text(o)
        for o in _objects(SPOTTER_DOV)
        if o.get("type") == "assistant" and "Let me implement all the pieces" in _text(o)
    )
    steps = plan_in(text)
    assert steps is not None and len(steps) == 6
    assert steps[0].startswith("TranscriptComputers") and "spotter.css" in steps[-1]
    assert plan_in("All 72 tests pass. Let me run the full suite:") is None


def test_next_steps_and_still_needed_lists() -> None:
    text = (
        "Tests pass.\n\n**Next steps:**\n1. Add tests for `close_review_session`\n"
        "2. Run `mix credo --strict`\n"
        "3. `bd close spotter-gqc.6`\n\nStill needed:\n- [x] compile\n- [ ] push"
    )
    assert plan_in(text) == ["push"]  # the last plan wins; a checked box is done
    assert plan_in(text.split("Still needed")[0]) == [
        "Add tests for `close_review_session`",
        "Run `mix credo --strict`",
        "`bd close spotter-gqc.6`",
    ]


def test_an_approved_plan_mode_plan_gives_its_steps() -> None:
    plan = (
        "# Phase 2\n\n## Context\nWhy.\n\n## 2.1 Upstash Redis\n...\n## 2.2 R2 storage\n...\n"
        "## 2.3 Env validation\n"
    )
    assert approved_plan(plan) == ["2.1 Upstash Redis", "2.2 R2 storage", "2.3 Env validation"]
    assert approved_plan("1. migrate\n2. backfill\n   - detail\n3. switch") == [
        "migrate",
        "backfill",
        "switch",
    ]


@pytest.mark.fixtures
def test_tracker_listings_give_open_items_with_titles() -> None:
    ready = [
        str(b.get("content"))
        for o in _objects(SPOTTER_DOV)
        if o.get("type") == "user"
        for b in ((o.get("message") or {}).get("content") or [])
        if isinstance(b, dict) and b.get("type") == "tool_result" and "Ready work" in str(b.get("content"))
    ][-1]

    items = tracker_listing("bd ready", ready)
    assert items is not None and any(
        i.startswith("spotter-dov.3: Implement debug JSON sidecar") for i in items
    )
    assert tracker_listing("ls -la", ready) is None
    gh = "12\tOPEN\tCrash on empty SKU\tbug\t2026-01-02\n13\tOPEN\tDark mode\t\t2026-01-03"
    assert tracker_listing("gh issue list --limit 5", gh) == ["#12: Crash on empty SKU", "#13: Dark mode"]


def test_decisions_in_the_assistants_words() -> None:
    text = (
        "The root cause is that the heartbeat timer is never cleared. I'll use a WeakMap instead of a "
        "plain object so closed sockets are collected. Should I also refactor?"
    )
    found = decisions_in(text)
    assert any("root cause" in d for d in found) and any("WeakMap instead of" in d for d in found)
    assert not any(d.endswith("?") for d in found)


# ---- nothing stale ----------------------------------------------------------------------------------


def test_compound_checks_are_judged_per_command() -> None:
    kind, check = classify("cd /w && mix compile --warnings-as-errors && mix credo --strict 2>&1 | tail -20")
    assert kind == "build" and check == "mix compile --warnings-as-errors && mix credo --strict"
    assert unsettled("mix compile --warnings-as-errors", check) == ["mix credo --strict"]
    assert settles("mix credo --strict && mix compile --warnings-as-errors", check)
    assert not settles("mix compile --warnings-as-errors", check)


def test_a_compound_failure_settles_part_by_part_across_runs(tmp_path: Path) -> None:
    uses = [
        ("mix compile && mix credo --strict", "Exit code 1\n** (CompileError) lib/a.ex:3: undefined", True),
        ("mix compile", "Compiling 1 file", False),
        ("mix credo --strict", "Analysis took 0.2s\n0 issues", False),
    ]
    facts = digest(_entries(_bash_session(uses)), [tmp_path])
    assert facts.failures == []
    first = digest(_entries(_bash_session(uses[:2])), [tmp_path])
    (failure,) = first.failures
    assert failure.check == "mix credo --strict"  # the compile part passed since


def test_moved_and_removed_files_leave_every_list(tmp_path: Path) -> None:
    assert file_changes("git mv lib/old.ex lib/new.ex && rm -f tmp/a.txt 'b c.txt'") == (
        ["tmp/a.txt", "b c.txt"],
        [("lib/old.ex", "lib/new.ex")],
    )
    assert file_changes("git rm --cached secrets.env") == ([], [])
    objects = [
        _edit("t1", str(tmp_path / "lib" / "old.ex")),
        _result("t1", "ok"),
        _edit("t2", str(tmp_path / "lib" / "gone.ex")),
        _result("t2", "ok"),
        *_bash_session(
            [(f"cd {tmp_path} && git mv lib/old.ex lib/new.ex && rm lib/gone.ex", "", False)], start=3
        ),
    ]
    facts = digest(_entries(objects), [tmp_path])
    assert facts.files_moved == {"lib/old.ex": "lib/new.ex"} and facts.files_removed == ["lib/gone.ex"]
    assert facts.uncommitted == ["lib/new.ex"]
    state = _merge(facts)
    assert state.active_context.active_files == ["lib/new.ex"]
    assert state.active_context.uncommitted_files == ["lib/new.ex"]


def test_a_rejected_tool_call_carries_the_users_words() -> None:
    objects = [
        {"type": "user", "message": {"role": "user", "content": "Add the summary option"}},
        _edit("t1", "/w/docs/README.md"),
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "is_error": True,
                        "content": REJECTED + "actually maybe let's test this first",
                    }
                ],
            },
        },
    ]
    facts = digest(_entries(objects))
    assert facts.requests == ["Add the summary option", "actually maybe let's test this first"]


def test_content_free_prompts_and_notifications_never_become_the_task() -> None:
    objects = [
        {"type": "user", "message": {"role": "user", "content": "Fix the flaky upload test"}},
        {"type": "user", "message": {"role": "user", "content": "continue implementation"}},
        {"type": "user", "message": {"role": "user", "content": "fix it up"}},
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": "<background-job-report>\n<job>bb7f051</job>\n<state>failed</state>\n"
                "</background-job-report>",
            },
        },
    ]
    facts = digest(_entries(objects))
    assert facts.requests == ["Fix the flaky upload test"]


def test_markup_removal_removes_only_the_markup() -> None:
    mentioned = "Large outputs become a <persisted-output> stand-in; the model reads the file next."
    assert strip_markup(mentioned) == "Large outputs become a   stand-in; the model reads the file next."
    closed = "<persisted-output>Output too large (77 KB)</persisted-output> The tests pass."
    assert strip_markup(closed) == "The tests pass."
    assert strip_markup("<system-reminder>cut off mid-way") == ""


def test_edits_name_the_functions_they_touch() -> None:
    new = (
        "defp compute_expand_groups(lines, expanded) do\n  ...\nend\n\n"
        'def handle_event("close_review_session", _, socket)'
    )
    assert edited_symbols("Edit", {"new_string": new}) == [
        "compute_expand_groups",
        "handle_event",
        "close_review_session",
    ]
    assert edited_symbols("Write", {"content": "class Parser:\n    def feed(self, chunk): ..."}) == [
        "Parser",
        "feed",
    ]
    assert edited_symbols("Edit", {"new_string": 42}) == []


def test_malformed_task_items_are_skipped_not_fatal() -> None:
    todo = {
        "todos": [
            {"content": "ok item", "status": "pending"},
            {"content": "bad status", "status": ["in_progress"]},
            {"content": ["not text"], "status": "pending"},
            "not an object",
        ]
    }
    objects = [
        {
            "type": "assistant",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "TodoWrite", "input": todo}],
            },
        },
        {
            "type": "assistant",
            "message": {
                "id": "m2",
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t2",
                        "name": "TaskUpdate",
                        "input": {"taskId": ["1"], "status": {"x": 1}},
                    }
                ],
            },
        },
    ]
    facts = digest(_entries(objects))
    assert [t.content for t in facts.tasks or []] == ["ok item"]


# ---- helpers ------------------------------------------------------------------------------------


def _edit(uid: str, path: str) -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {
            "id": f"m-{uid}",
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": uid,
                    "name": "Edit",
                    "input": {"file_path": path, "old_string": "a", "new_string": "b"},
                }
            ],
        },
    }


def _result(uid: str, text: str, error: bool = False) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": uid, "content": text, "is_error": error}],
        },
    }


def _bash_session(uses: list[tuple[str, str, bool]], start: int = 0) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for number, (command, output, error) in enumerate(uses, start):
        uid = f"b{number}"
        objects.append(
            {
                "type": "assistant",
                "message": {
                    "id": f"m-{uid}",
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": uid, "name": "Bash", "input": {"command": command}}
                    ],
                },
            }
        )
        objects.append(_result(uid, output, error))
    return objects


@pytest.mark.fixtures
def test_a_tracker_reached_through_mcp_gives_titles_and_what_was_created() -> None:
    """Linear through its MCP server, as a real session used it."""
    session = FIXTURES / "other-projects" / "entireio+cli" / "1e0816ef-6f89-4f05-b331-dab09bb14485.jsonl"
    facts = digest(_entries(_objects(session)))
    assert any(e.item == "ENT-96" and e.title.startswith("Auto-summarise") for e in facts.tracker)

    assert any(
        s.startswith("ENT-197: Summaries should be stored as map[sessionID]") for s in facts.next_steps
    )
    assert any(e.item == "ENT-163" and e.action == "created" for e in facts.tracker)


def test_claude_codes_pending_tasks_replace_an_earlier_plan() -> None:
    """A plan the assistant stated before the compaction is covered by Claude Code's pending
    tasks, the newer and whole account of what is left: the plan's steps go, a tracker's stay."""
    plan = ContextFacts(
        source="transcript", plan=["TranscriptComputers - visible lines", "app.js - merge hooks"]
    )
    plan.open_items = ["web-1: Global history page"]
    before = _merge(plan)
    summary = CompactSummary(pending=["Update SessionLive to pass the new attrs"], next_step="Fix the guard")
    after = _merge(ContextFacts(source="transcript", compact_summary=summary), before)
    origins = [(s.origin, s.text) for s in after.active_context.next_steps]
    assert ("plan", "app.js - merge hooks") in [(s.origin, s.text) for s in before.active_context.next_steps]
    assert not any(origin == "plan" for origin, _ in origins)
    assert ("summary", "Update SessionLive to pass the new attrs") in origins
    assert ("tracker", "web-1: Global history page") in origins
