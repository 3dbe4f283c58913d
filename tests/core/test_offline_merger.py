"""The offline merger: a merge, not an append; deterministic; under the cap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from infinite_context_brain.core.facts import ContextFacts
from infinite_context_brain.core.merge import MergeRequest, OfflineMerger
from infinite_context_brain.core.merge.extract import facts_from_text
from infinite_context_brain.core.merge.integrity import problems, state_tokens
from infinite_context_brain.core.merge.record import finish
from infinite_context_brain.core.models import Decision, ProjectState

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
SID = "sid-1"


def merge(  # type: ignore[no-untyped-def]
    root: Path,
    context: str | ContextFacts,
    old: ProjectState | None = None,
    cap: int = 4000,
    now: datetime = NOW,
):
    facts = facts_from_text(context, root) if isinstance(context, str) else context
    request = MergeRequest(old=old, facts=facts, session_id=SID, project_root=root, token_cap=cap, now=now)
    return finish(OfflineMerger().merge(request).state, old, facts, now, cap)[0]


def test_files_named_in_prose_must_exist_inside_the_root(project_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("x")
    state = merge(
        project_dir,
        f"Edited src/app.py and ./src/auth.py:12, also {project_dir}/README.md, {outside}, "
        "../outside.py and src/missing.py. See https://example.com/a/b.py",
    )
    assert state.active_context.active_files == ["src/app.py", "src/auth.py", "README.md"]


def test_pending_question_is_decided_by_a_later_decision(project_dir: Path) -> None:
    v1 = merge(project_dir, "Current task: add login. Question: should we use JWT or server sessions?")
    assert v1.active_context.active_decisions == [
        Decision(question="should we use JWT or server sessions?", status="pending")
    ]
    v2 = merge(project_dir, "We'll use server sessions; JWT is overkill for one app.", old=v1)
    (decision,) = v2.active_context.active_decisions
    assert decision.status == "decided"
    assert "server sessions" in (decision.decision or "")


def test_finished_task_moves_to_recent_changes(project_dir: Path) -> None:
    v1 = merge(project_dir, "Current task: implement the login form in src/auth.py")
    assert v1.active_context.current_task == "implement the login form in src/auth.py"
    v2 = merge(
        project_dir,
        "Implemented the login form in src/auth.py. Next: password reset.",
        old=v1,
        now=NOW + timedelta(minutes=5),
    )
    assert v2.active_context.current_task == "password reset"
    (change,) = v2.project_context.recent_changes
    assert "login form" in change.summary
    assert change.files == ["src/auth.py"]
    assert change.timestamp == NOW + timedelta(minutes=5)


def test_unfinished_task_persists_and_overview_is_kept(project_dir: Path) -> None:
    v1 = merge(
        project_dir, "Overview: a todo app for teams.\nArchitecture: Flask + SQLite.\nCurrent task: login"
    )
    v2 = merge(project_dir, "Looked at src/app.py to understand routing.", old=v1)
    assert v2.project_context.overview == "a todo app for teams."
    assert v2.project_context.architecture == "Flask + SQLite."
    assert v2.active_context.current_task == "login"
    assert v2.active_context.active_files == ["src/app.py"]


def test_recent_changes_are_a_ring_of_ten(project_dir: Path) -> None:
    state = None
    for i in range(15):
        state = merge(
            project_dir, f"Fixed bug number {i} in src/app.py.", old=state, now=NOW + timedelta(minutes=i)
        )
    assert state is not None
    summaries = [c.summary for c in state.project_context.recent_changes]
    assert len(summaries) == 10
    assert summaries[0].startswith("Fixed bug number 5") and summaries[-1].startswith("Fixed bug number 14")


def test_labelled_sections_with_bullets(project_dir: Path) -> None:
    state = merge(
        project_dir,
        "## Done\n- fixed the redirect after login\n\n## Decisions\n- going with Postgres for prod\n\n"
        "## Open questions\n- which CI provider?\n\nFiles: src/app.py, src/auth.py\nNext: deploy script",
    )
    ac = state.active_context
    assert ac.current_task == "deploy script"
    assert ac.active_files == ["src/app.py", "src/auth.py"]
    assert {d.status for d in ac.active_decisions} == {"decided", "pending"}
    assert state.project_context.recent_changes[0].summary == "fixed the redirect after login"


def test_deterministic(project_dir: Path) -> None:
    text = "Current task: X in src/app.py. Decided: use Y. Question: Z?"
    assert merge(project_dir, text) == merge(project_dir, text)


def test_merged_state_passes_integrity(project_dir: Path) -> None:
    v1 = merge(project_dir, "Question: A or B? Current task: t1 in src/app.py")
    v2 = merge(project_dir, "Done: t1. Next: t2", old=v1)
    assert problems(v1, v2, session_id=SID, root=project_dir, cap=4000) == []


words = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=0, max_size=400)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunks=st.lists(words, min_size=1, max_size=6), cap=st.integers(min_value=500, max_value=1500))
# characters JSON escapes cost several tokens each: with the smallest cap, trimming reaches the
# last journal entry and the task itself (found by this test)
@example(chunks=["0:0000:0:0:0:0:0:0:0\x07\x07000:0::0 0:0:0:0:0:0:0:0"], cap=500)
@example(chunks=["\x07" * 90], cap=500)
def test_state_always_fits_the_cap(project_dir: Path, chunks: list[str], cap: int) -> None:
    state = None
    for i, chunk in enumerate(chunks):
        text = (
            f"Overview: {chunk * 3}\nArchitecture: {chunk * 4}\nDone: {chunk}\n"
            f"Decided: {chunk}\nCurrent task: {chunk} {i}"
        )
        state = merge(project_dir, text, old=state, cap=cap)
        assert state_tokens(state) <= cap
        assert len(state.project_context.recent_changes) <= 10
