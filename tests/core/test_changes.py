"""What changed between two versions, field by field (``core/changes.py``): lists by their
items (a reordered list is not removed + added, an item changed in place is one change), mappings
by their keys, values before and after; and the one-line summary a history row shows."""

from __future__ import annotations

from typing import Any

from infinite_context_brain.core.changes import field_diffs, summary_line
from infinite_context_brain.core.models import ProjectState


def state(**active: Any) -> dict[str, object]:
    """A stored state's content as ``diff`` compares it (validated by the real model)."""
    data = {"meta": {"session_id": "s1"}, "active_context": active}
    return ProjectState.model_validate(data).content_dict()


def by_label(before: dict[str, object], after: dict[str, object]) -> dict[str, dict[str, Any]]:
    return {d.label: d.model_dump() for d in field_diffs(before, after)}


def test_a_reordered_list_is_reordered_not_removed_and_added() -> None:
    old = state(next_steps=["wire the button", "write the docs", "deploy"])
    new = state(next_steps=["write the docs", "wire the button", "deploy"])
    steps = by_label(old, new)["next steps"]
    assert steps["added"] == [] and steps["removed"] == [] and steps["reordered"] is True
    assert summary_line(field_diffs(old, new)) == "next steps reordered"


def test_items_added_removed_and_changed_in_place() -> None:
    old = state(
        current_task="fix the login bug",
        next_steps=["wire the button", "write the docs"],
        active_decisions=[{"question": "Use SQLite?", "status": "pending"}],
    )
    new = state(
        current_task="write the docs",
        next_steps=["write the docs", "deploy"],
        active_decisions=[{"question": "Use SQLite?", "status": "decided", "decision": "yes, embedded"}],
    )
    diffs = by_label(old, new)
    assert list(diffs) == ["task", "decisions", "next steps"]  # the state's own field order
    assert (diffs["task"]["before"], diffs["task"]["after"]) == ("fix the login bug", "write the docs")
    steps = diffs["next steps"]
    assert (steps["added"], steps["removed"], steps["reordered"]) == (["deploy"], ["wire the button"], False)
    decisions = diffs["decisions"]
    assert decisions["added"] == decisions["removed"] == []
    assert decisions["changed"] == ["Use SQLite? (status pending -> decided; decision: yes, embedded)"]
    assert summary_line(field_diffs(old, new)) == "task: write the docs; decisions ~1; next steps +1 -1"


def test_bookkeeping_and_unchanged_fields_are_left_out() -> None:
    old = state(current_task="A", task_since="2026-01-01T10:00:00Z")
    new = state(current_task="A", task_since="2026-01-01T11:00:00Z")
    assert field_diffs(old, new) == [] and summary_line([]) == ""
    cleared = field_diffs(state(current_task="A", in_progress="B"), state(current_task="A"))
    assert summary_line(cleared) == "in progress cleared"


def test_journal_entries_and_next_steps_with_an_origin_read_by_their_text() -> None:
    """States whose list items are objects (a journal entry with its time and origin, a next
    step with where it was read) name each item by what was written."""
    entry = {"at": "2026-01-01T10:00:00Z", "text": "Current task: A", "origin": "cli"}
    later = {"at": "2026-01-01T11:00:00Z", "text": "Done: fixed the bug in the login form", "origin": "mcp"}
    old = {
        "meta": {"session_id": "s1"},
        "active_context": {"next_steps": [{"text": "wire the button", "origin": "stated"}]},
        "journal": [entry],
    }
    new = {
        "meta": {"session_id": "s1"},
        "active_context": {"next_steps": [{"text": "wire the button", "origin": "tasks"}]},
        "journal": [entry, later],
    }
    diffs = by_label(old, new)
    assert diffs["journal"]["added"] == ["Done: fixed the bug in the login form"]
    assert diffs["next steps"]["changed"] == ["wire the button (origin stated -> tasks)"]
    assert summary_line(field_diffs(old, new)) == "next steps ~1; journal +1"


def test_mappings_by_their_keys() -> None:
    old = state(item_titles={"PROJ-1": "Login page"}, file_symbols={"src/a.py": ["login"]})
    new = state(item_titles={"PROJ-2": "Docs"}, file_symbols={"src/a.py": ["login", "logout"]})
    diffs = by_label(old, new)
    assert (diffs["tracker titles"]["added"], diffs["tracker titles"]["removed"]) == (
        ["PROJ-2: Docs"],
        ["PROJ-1: Login page"],
    )


def test_a_long_summary_says_how_many_more() -> None:
    old = state()
    new = state(
        current_task="t" * 40,
        in_progress="p" * 40,
        last_step="l" * 40,
        branch="feature/" + "b" * 40,
        earlier_request="r" * 40,
        next_steps=["a"],
    )
    line = summary_line(field_diffs(old, new))
    assert len(line) <= 180 and line.endswith("more") and line.startswith("task: tttt")
