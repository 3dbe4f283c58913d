"""ProjectBrain on a real SQLite file: the API every adapter calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.errors import CorruptState, InvalidInput, NotFound


def test_status_on_empty_brain(brain: ProjectBrain) -> None:
    status = brain.status()
    assert not status.has_state and status.version == 0 and status.history_versions == []
    assert "No checkpoint yet" in brain.resume().markdown


def test_checkpoint_resume_rollback_history_diff(brain: ProjectBrain) -> None:
    r1 = brain.checkpoint("Current task: login form in src/auth.py. Question: JWT or sessions?")
    r2 = brain.checkpoint("Decided: sessions. Done: login form in src/auth.py. Next: logout in src/app.py")
    assert (r1.version, r2.version) == (1, 2)
    assert r2.merged_by == "offline" and r2.state_tokens <= r2.token_cap
    text = brain.resume().markdown
    assert "logout in src/app.py" in text and "`src/auth.py`" in text and "sessions" in text

    rb = brain.rollback()
    assert (rb.version, rb.restored_from, rb.merged_by) == (3, 1, "rollback:v1")
    assert brain.resume().state.active_context.current_task.startswith("login form")  # type: ignore[union-attr]
    assert [h.version for h in brain.history(10)] == [3, 2, 1]

    d = brain.diff(1, 2)
    paths = {c.path for c in d.changes}
    assert "active_context.current_task" in paths and d.unified.startswith("--- v1")
    assert brain.diff(1, 3).changes == []  # rollback restored the content exactly


def test_resume_respects_max_tokens(brain: ProjectBrain) -> None:
    for i in range(10):
        brain.checkpoint(f"Fixed issue {i} " + "with a long explanation " * 20 + "in src/app.py")
    full = brain.resume()
    small = brain.resume(max_tokens=120)
    assert small.tokens <= 120 < full.tokens
    assert small.markdown.startswith("# Project context")


def test_missing_active_files_are_kept_and_marked(brain: ProjectBrain, project_dir: Path) -> None:
    brain.checkpoint("Working on src/app.py and src/auth.py")
    (project_dir / "src" / "auth.py").unlink()
    result = brain.resume()
    assert result.state.active_context.active_files == ["src/app.py", "src/auth.py"]  # type: ignore[union-attr]
    assert "- `src/auth.py` (not on disk here)" in result.markdown
    assert any("src/auth.py" in w for w in result.warnings)
    assert any("src/auth.py" in w for w in brain.status().warnings)


def test_secrets_never_reach_the_store(brain: ProjectBrain, store_url: str) -> None:
    key = "sk-ant-api03-" + "A" * 40
    brain.checkpoint(
        f"Current task: connect with ANTHROPIC_API_KEY={key} and postgres://bob:hunter2pass@db/x"
    )
    db = Path(store_url.split("sqlite://", 1)[1]).read_bytes()
    wal = Path(store_url.split("sqlite://", 1)[1] + "-wal")
    blob = db + (wal.read_bytes() if wal.exists() else b"")
    assert key.encode() not in blob and b"hunter2pass" not in blob
    assert "[REDACTED" in brain.resume().markdown


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda b: b.checkpoint(""), "context"),
        (lambda b: b.checkpoint("   \n"), "context"),
        (lambda b: b.checkpoint(123), "context"),
        (lambda b: b.checkpoint("x", token_count=-1), "token_count"),
        (lambda b: b.checkpoint("x", token_count="many"), "token_count"),
        (lambda b: b.resume(max_tokens=3), "max_tokens"),
        (lambda b: b.rollback(steps=0), "steps"),
        (lambda b: b.rollback(steps=1, version=1), "steps"),
        (lambda b: b.history(0), "limit"),
        (lambda b: b.diff(0, 1), "from_version"),
    ],
)
def test_bad_arguments_name_the_field(brain: ProjectBrain, call, field: str) -> None:  # type: ignore[no-untyped-def]
    brain.checkpoint("Current task: keep me")
    with pytest.raises(InvalidInput) as info:
        call(brain)
    assert info.value.field == field and info.value.fix
    assert brain.status().version == 1


def test_huge_context_is_refused_cleanly(brain: ProjectBrain) -> None:
    brain.checkpoint("Current task: keep me")
    with pytest.raises(InvalidInput) as info:
        brain.checkpoint("x" * 10_000_000)
    assert "10,000,000 characters" in str(info.value)
    assert brain.resume().state.active_context.current_task == "keep me"  # type: ignore[union-attr]


def test_unknown_versions(brain: ProjectBrain) -> None:
    with pytest.raises(NotFound):
        brain.rollback()
    brain.checkpoint("a")
    with pytest.raises(NotFound) as info:
        brain.rollback(version=42)
    assert "kept: [1]" in str(info.value)
    with pytest.raises(InvalidInput):
        brain.rollback(steps=1)  # would go before version 1
    with pytest.raises(NotFound):
        brain.diff(1, 9)


def test_corrupt_row_is_recoverable_with_rollback(brain: ProjectBrain, store_url: str) -> None:
    import sqlite3

    brain.checkpoint("Current task: first")
    brain.checkpoint("Current task: second")
    conn = sqlite3.connect(store_url.split("sqlite://", 1)[1])
    with conn:
        conn.execute("UPDATE states SET state = 'not json'")
    conn.close()
    with pytest.raises(CorruptState):
        brain.status()
    with pytest.raises(CorruptState):
        brain.checkpoint("Current task: third")
    result = brain.rollback(steps=1)
    assert result.restored_from == 1 and result.version == 3
    assert brain.status().current_task == "first"
    assert json.loads(brain.resume().state.model_dump_json())["meta"]["version"] == 3  # type: ignore[union-attr]


def test_advisory_claim_warns_but_never_blocks(brain: ProjectBrain, caplog: pytest.LogCaptureFixture) -> None:
    assert brain.claim("first").acquired  # no brain yet: held from the first write on
    assert brain.checkpoint("first write").version == 1
    assert brain.status().lock_holder == "first"
    second = brain.claim("second")
    assert not second.acquired and second.holder == "first"
    assert "also in use" in caplog.text
    assert brain.checkpoint("still writable").version == 2
    assert brain.status().lock_holder == "first"
