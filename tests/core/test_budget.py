"""``ProjectBrain.budget``: the figures the editor's status bar shows on every change, equal to
``status`` where they overlap, read without the history or any file check."""

from __future__ import annotations

from typing import Any

import pytest

from infinite_context_brain.core.brain import ProjectBrain, refine_lock_id
from infinite_context_brain.core.merge import integrity


def test_budget_matches_status_without_history_or_file_checks(
    brain: ProjectBrain, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = brain.budget()
    assert empty.version == 0 and empty.last_checkpoint is None and empty.current_task == ""
    assert empty.memory == brain.status().memory and empty.store == brain.store.display_url

    brain.checkpoint("Current task: login form in src/auth.py")
    brain.checkpoint("Done: login form in src/auth.py. Current task: logout in src/app.py")
    brain.memory().store_item(content="The logout button lives in src/app.py", importance=7)
    brain.claim("lsp:test")
    brain.store.states.acquire_lock(refine_lock_id(brain.session_id), "refine:gemini:flash:p:host:1", 60)
    status = brain.status()

    def forbidden(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("budget() must not read the history or check files")

    monkeypatch.setattr(brain.store.states, "history", forbidden)
    monkeypatch.setattr(brain.store.states, "history_entry", forbidden)
    # the brain imports it where it checks files (status, resume), not at module level
    monkeypatch.setattr(integrity, "existing_files", forbidden)
    budget = brain.budget()

    assert budget.version == status.version == 2
    assert budget.last_checkpoint == status.last_checkpoint
    assert budget.merged_by == status.merged_by
    assert budget.current_task == status.current_task and "logout" in budget.current_task
    assert budget.memory == status.memory and budget.memory is not None and budget.memory.items == 1
    assert budget.lock_holder == status.lock_holder == "lsp:test"
    assert budget.refining == status.refining == "gemini:flash"
    assert budget.session_id == brain.session_id
