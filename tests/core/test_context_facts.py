"""Context facts read from real Claude Code transcripts: each extractor on real snippets."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from infinite_context_brain.core.facts import ContextFacts, TaskItem
from infinite_context_brain.core.merge.extract import facts_from_text
from infinite_context_brain.core.transcript.commands import (
    classify,
    commit_of,
    failure_lines,
    outcome,
    settles,
    tracker_events,
)
from infinite_context_brain.core.transcript.digest import digest, project_path, session_root, windows
from infinite_context_brain.core.transcript.markup import is_acknowledgement, strip_markup, user_text
from infinite_context_brain.core.transcript.reader import Entry, TranscriptReader, UserEntry

from ..conftest import FIXTURES

SPOTTER_DOV = FIXTURES / "spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
SPOTTER_GQC = FIXTURES / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
RUST_PORT = FIXTURES / "claude-reliability" / "python-to-rust-port" / "transcript.jsonl"
PHANTOM = next(
    (FIXTURES / "phantom-reads" / "barebones-2122").rglob("c5547154-*.jsonl"), FIXTURES / "missing"
)  # a default: without the fixtures the module still imports, and its tests are skipped


def raw_lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _read(path: Path, line: int) -> list[Entry]:
    """The transcript's entries before line ``line`` (1-based), read by the real reader."""
    return [e for e in TranscriptReader(path) if getattr(e, "line", 0) < line]


# ---- Claude Code markup -----------------------------------------------------------------------


@pytest.mark.fixtures
def test_injected_turns_are_not_the_users_words() -> None:
    texts: dict[int, str] = {}
    for number, raw in enumerate(raw_lines(PHANTOM), 1):
        obj = orjson.loads(raw)
        if obj.get("type") == "user" and isinstance((obj.get("message") or {}).get("content"), str):
            texts[number] = obj["message"]["content"]
    # /context is Claude Code's own command; its stdout and the caveat are injected.
    assert all(user_text(texts[n]) == "" for n in (2, 3, 4))
    # A custom slash command becomes its name and arguments.
    assert user_text(texts[18]) == "/analyze-wpd docs/wpds/pipeline-refactor.md"
    notification = next(
        orjson.loads(raw)["message"]["content"]
        for raw in raw_lines(SPOTTER_DOV)
        if b"<task-notification>" in raw and b'"type":"user"' in raw
    )
    assert user_text(notification) == ""
    assert user_text("Stop hook feedback:\n[stop.sh]: # Uncommitted Changes Detected") == ""
    assert user_text("fix the login bug<system-reminder>\nThe user opened a.py\n</system-reminder>") == (
        "fix the login bug"
    )
    assert "persisted-output" not in strip_markup("<persisted-output>big</persisted-output> after")
    assert is_acknowledgement("continue") and is_acknowledgement("check again")
    assert not is_acknowledgement("new beads for the epic were added. tackle them")


@pytest.mark.fixtures
def test_a_prompt_typed_while_the_assistant_works_is_a_request() -> None:
    queued = [e for e in TranscriptReader(SPOTTER_GQC) if isinstance(e, UserEntry) and e.queued]
    assert [user_text(e.texts[0]) for e in queued if user_text(e.texts[0])] == [
        "check again",
        "new beads for the epic were added. tackle them",
    ]


# ---- shell commands ---------------------------------------------------------------------------


def test_checks_are_classified_and_keyed_without_pipes() -> None:
    assert classify("mix test test/spotter_web/live/session_live_test.exs 2>&1 | tail -30") == (
        "test",
        "mix test test/spotter_web/live/session_live_test.exs",
    )
    assert classify("cd /repo && FOO=1 .venv/bin/python -m pytest -x tests/a.py") == (
        "test",
        "pytest -x tests/a.py",
    )
    assert classify("mix credo --strict 2>&1 | tail -15")[0] == "lint"
    assert classify("mix compile 2>&1 | head -40") == ("build", "mix compile")
    assert classify("git commit -m \"$(cat <<'EOF'\nfeat: x\nEOF\n)\"") == ("vcs", "git commit")
    assert classify("ls -la lib/") == ("other", "")
    assert settles("mix test", "mix test test/a_test.exs")
    assert not settles("mix test test/b_test.exs", "mix test test/a_test.exs")
    assert not settles("cargo test", "mix test")


def test_failures_are_seen_through_pipes_and_exit_codes() -> None:
    hidden = "Running ExUnit\n\n  1) test mount (SpotterWeb.LiveTest)\n\n10 tests, 1 failure\n"
    assert outcome("test", hidden, is_error=False) is False
    assert outcome("test", "10 tests, 0 failures\n", is_error=False) is True
    assert (
        outcome("vcs", "Exit code 1\nOn branch master\nnothing to commit, working tree clean", True) is None
    )
    assert outcome("other", "The user doesn't want to proceed with this tool use.", True) is None
    lines = failure_lines("Exit code 128\nfatal: The current branch spotter-gqc has no upstream branch.\n")
    assert lines == ["fatal: The current branch spotter-gqc has no upstream branch."]


def test_tracker_commands_and_commits_from_the_fixture() -> None:
    show = tracker_events(
        "bd show spotter-dov.3",
        "○ spotter-dov.3 · Implement debug JSON sidecar and expand controls in shared transcript UI"
        "   [● P1 · OPEN]\nOwner: Marco Rotili · Type: task",
    )
    assert show[0].action == "viewed"
    assert show[0].title == "Implement debug JSON sidecar and expand controls in shared transcript UI"
    (claim,) = tracker_events(
        "bd update spotter-dov.3 --status in_progress", "✓ Updated issue: spotter-dov.3"
    )
    assert (claim.item, claim.action) == ("spotter-dov.3", "claimed")
    closed = tracker_events('bd close spotter-dov.1 --reason="Extracted shared"', "✓ Closed spotter-dov.1: x")
    assert [(e.item, e.action, e.title) for e in closed] == [("spotter-dov.1", "closed", "Extracted shared")]
    epic = tracker_events("bd show spotter-gqc", "○ spotter-gqc.1: other\n○ spotter-gqc [EPIC] · Annotations")
    assert epic[0].title == "Annotations"  # the id as a whole word, decorations dropped
    assert [e.action for e in tracker_events("gh issue close 12", "")] == ["closed"]
    commit = commit_of(
        "git add -A && git commit -m \"$(cat <<'EOF'\nPort Python utility library to Rust\n\nbody\nEOF\n)\"",
        "[master 7e2d976] Port Python utility library to Rust\n 23 files changed",
    )
    assert commit is not None and (commit.sha, commit.subject) == (
        "7e2d976",
        "Port Python utility library to Rust",
    )


# ---- the digest -------------------------------------------------------------------------------


@pytest.mark.fixtures
def test_digest_names_the_claimed_subtask_and_what_is_not_committed() -> None:
    root = session_root(SPOTTER_DOV)
    assert root == Path("/home/USER/projects/spotter-worktrees/spotter-dov")
    facts = digest(_read(SPOTTER_DOV, 754), [root])  # up to the real compaction point
    assert facts.requests[0].startswith("Work on bead spotter-dov")
    assert "continue" not in facts.requests and facts.user_replied
    claimed = [e.item for e in facts.tracker if e.action == "claimed"]
    assert claimed == ["spotter-dov.1", "spotter-dov.2", "spotter-dov.3"]
    assert [e.item for e in facts.tracker if e.action == "closed"] == ["spotter-dov.1", "spotter-dov.2"]
    assert "lib/spotter_web/components/transcript_components.ex" in facts.files_edited
    assert all(not p.startswith("/") for p in facts.files_edited)  # relative to the session's folder
    assert (
        facts.commits == [] and facts.uncommitted[-1] == "lib/spotter_web/components/transcript_components.ex"
    )
    assert facts.last_step.startswith("Now update the shared transcript component")
    assert any(c.kind == "run" and "Explore" in c.command for c in facts.commands)  # a subagent dispatch


@pytest.mark.fixtures
def test_digest_keeps_a_failing_check_until_it_passes() -> None:
    facts = digest(_read(SPOTTER_GQC, 1000), [session_root(SPOTTER_GQC) or Path("/")])
    failing = {f.check for f in facts.failures}
    assert "mix test test/spotter_web/live/project_review_live_test.exs" in failing
    later = digest(_read(SPOTTER_GQC, 1256), [Path("/")])
    assert "mix test test/spotter_web/live/project_review_live_test.exs" not in {
        f.check for f in later.failures
    }
    assert "mix test test/spotter_web/live/project_review_live_test.exs" in later.passed_checks
    assert any(c.sha and "spotter-gqc" in c.subject for c in later.commits)


@pytest.mark.fixtures
def test_digest_reads_the_task_list_and_commits() -> None:
    windows_seen = list(windows(RUST_PORT, every=20))
    first = windows_seen[0]
    assert first.tasks is not None and any(t.status == "in_progress" for t in first.tasks)
    last = windows_seen[-1]
    assert last.tasks is not None and all(t.status == "completed" for t in last.tasks)
    assert [c.subject for c in last.commits] == ["Port Python utility library to Rust"]
    assert last.uncommitted == []
    assert not any("Stop hook" in r for w in windows_seen for r in w.requests)


def test_paths_follow_each_entrys_cwd(tmp_path: Path) -> None:
    lines = [
        {"type": "user", "cwd": "/work/app", "message": {"role": "user", "content": "restyle the page"}},
        {
            "type": "assistant",
            "cwd": "/work/app/assets",  # after `cd assets`
            "message": {
                "id": "m1",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "Edit", "input": {"file_path": "css/site.css"}},
                    {
                        "type": "tool_use",
                        "id": "t2",
                        "name": "Write",
                        "input": {"file_path": "/work/app/a.py"},
                    },
                    {"type": "tool_use", "id": "t3", "name": "Edit", "input": {"file_path": "never.py"}},
                ],
            },
        },
        {
            "type": "user",
            "cwd": "/work/app/assets",
            "message": {
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "ok"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "t3",
                        "is_error": True,
                        "content": "<tool_use_error>File has not been read yet.</tool_use_error>",
                    },
                ]
            },
        },
        {"type": "user", "message": "a string where an object belongs"},
        {"type": "assistant", "message": None},
    ]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    facts = digest(TranscriptReader(path), [Path("/work/app")])
    assert facts.files_edited == ["assets/css/site.css", "a.py"]  # the failed edit is not an edit
    assert facts.requests == ["restyle the page"]
    assert project_path("/elsewhere/x.py", "/work/app", [Path("/work/app")]) == "/elsewhere/x.py"


def test_free_text_checkpoints_state_the_same_facts(project_dir: Path) -> None:
    facts = facts_from_text(
        "Current task: add login\nIn progress: the session cookie\nNext steps:\n- write tests\n- deploy\n"
        "Blockers: pytest tests/test_login.py fails\nDecided: use JWT\nFiles: src/app.py, src/gone.py",
        project_dir,
    )
    assert facts.requests == ["add login"]
    assert facts.in_progress == "the session cookie"
    assert facts.next_steps == ["write tests", "deploy"]
    assert [f.check for f in facts.failures] == ["pytest tests/test_login.py fails"]
    assert facts.files_mentioned == ["src/app.py", "src/gone.py"]  # a listed missing file is kept
    combined = ContextFacts(tasks=[TaskItem(content="a")]).combined(facts)
    assert combined.tasks == [TaskItem(content="a")] and combined.requests == ["add login"]


def test_secrets_are_redacted_before_anything_is_cut(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "k" * 60
    command = "curl -H 'x-api-key: " + key + "' https://api.example.com/v1/messages " + "-d @body.json " * 8
    lines = [
        {"type": "user", "cwd": "/w", "message": {"content": f"use {key} for the {'long ' * 60}call"}},
        {
            "type": "assistant",
            "cwd": "/w",
            "message": {
                "id": "m1",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": command}}],
            },
        },
        {
            "type": "user",
            "message": {
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "is_error": True,
                        "content": "Exit code 1\nerror: " + "x" * 150 + " bad key " + key,
                    }
                ]
            },
        },
    ]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    dumped = digest(TranscriptReader(path), [Path("/w")]).model_dump_json()
    assert "sk-ant-api03-kkkk" not in dumped and "REDACTED" in dumped


def test_queued_prompts_of_newer_versions_count_once(tmp_path: Path) -> None:
    note = "and check the tests too"
    lines = [
        {"type": "user", "cwd": "/w", "message": {"content": "convert the prices"}},
        {"type": "queue-operation", "operation": "enqueue", "content": note},
        {"type": "queue-operation", "operation": "remove"},
        {
            "type": "attachment",
            "attachment": {
                "type": "queued_command",
                "prompt": note,
                "commandMode": "prompt",
                "origin": {"kind": "human"},
            },
        },
        {
            "type": "attachment",
            "attachment": {
                "type": "queued_command",
                "prompt": "Background command finished",
                "commandMode": "task-notification",
            },
        },
        {
            "type": "user",
            "message": {"content": '<cross-session-message from="x">do this</cross-session-message>'},
        },
        {"type": "mode", "mode": "auto"},
    ]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    assert digest(TranscriptReader(path), [Path("/w")]).requests == ["convert the prices", note]


def test_a_reply_split_over_lines_is_read_whole(tmp_path: Path) -> None:
    """Claude Code writes each content block of a reply as its own line (same message id), and
    parallel calls interleave with their results: a tool call that arrives after the text is
    still a tool call, and the text is no turn-ending question."""

    def reply(block: dict[str, object]) -> dict[str, object]:
        return {"type": "assistant", "cwd": "/w", "message": {"id": "m1", "content": [block]}}

    def result(uid: str) -> dict[str, object]:
        return {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": uid, "content": "ok"}]},
        }

    lines = [
        {"type": "user", "cwd": "/w", "message": {"content": "edit both files"}},
        reply({"type": "text", "text": "Shall I edit both? Doing it now."}),
        reply({"type": "tool_use", "id": "t1", "name": "Edit", "input": {"file_path": "/w/a.py"}}),
        result("t1"),
        reply({"type": "tool_use", "id": "t2", "name": "Edit", "input": {"file_path": "/w/b.py"}}),
        result("t2"),
    ]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    facts = digest(TranscriptReader(path), [Path("/w")])
    assert facts.files_edited == ["a.py", "b.py"] and facts.tool_uses == 2
    assert facts.questions == [] and facts.conclusions == []
    assert facts.last_step == "Shall I edit both? Doing it now."


def test_a_replys_question_is_its_own_line_not_the_table_before_it(tmp_path: Path) -> None:
    """A reply that ends a turn with a table and then a question: the open question is the
    question's line, not the table joined to it (a line break ends a sentence)."""
    table = "## PR fixes\n| Comment | Fix |\n|---|---|\n| Context chain | derives from logCtx |"
    lines = [
        {"type": "user", "cwd": "/w", "message": {"content": "fix the review comments"}},
        {
            "type": "assistant",
            "cwd": "/w",
            "message": {
                "id": "m1",
                "content": [{"type": "text", "text": f"All done.\n{table}\nReady to push?"}],
            },
        },
        {"type": "user", "cwd": "/w", "message": {"content": "a moment"}},
    ]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    facts = digest(TranscriptReader(path), [Path("/w")])
    assert [q.text for q in facts.questions] == ["Ready to push?"]


def test_a_blocking_hooks_feedback_is_a_rule_of_the_set_up(tmp_path: Path) -> None:
    """Claude Code hands a Stop hook's blocking output to the model as a meta turn: its first
    line that is no heading is kept once as a gotcha, however often the hook blocked."""
    feedback = (
        "Stop hook feedback:\n[${CLAUDE_PLUGIN_ROOT}/scripts/hooks/stop.sh]: # Running Quality Checks...\n\n"
        "# Uncommitted Changes Detected\n\nCannot exit with unstaged changes.\n\nBefore stopping, please:"
    )
    meta = {"type": "user", "cwd": "/w", "isMeta": True, "message": {"content": feedback}}
    lines = [{"type": "user", "cwd": "/w", "message": {"content": "add the tests"}}, meta, meta]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    facts = digest(TranscriptReader(path), [Path("/w")])
    assert [g.text for g in facts.gotchas] == ["Stop hook: Cannot exit with unstaged changes."]
    assert facts.requests == ["add the tests"]
