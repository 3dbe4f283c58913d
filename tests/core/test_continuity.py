"""State semantics of the offline merger on facts, and the resume that carries them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.facts import (
    Commit,
    ContextFacts,
    Failure,
    QuestionFact,
    TaskItem,
    TrackerEvent,
)
from infinite_context_brain.core.merge import MergeRequest, OfflineMerger
from infinite_context_brain.core.merge.extract import facts_from_text
from infinite_context_brain.core.merge.llm import build_prompt
from infinite_context_brain.core.models import ProjectState
from infinite_context_brain.core.render import render_within
from infinite_context_brain.core.tokens import count_tokens

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def run(root: Path, *steps: ContextFacts | str) -> ProjectState:
    state: ProjectState | None = None
    for i, step in enumerate(steps):
        facts = facts_from_text(step, root) if isinstance(step, str) else step
        request = MergeRequest(
            old=state,
            facts=facts,
            session_id="sid",
            project_root=root,
            token_cap=4000,
            now=NOW + timedelta(minutes=i),
        )
        state = OfflineMerger().merge(request).state
    assert state is not None
    return state


def transcript(**fields: object) -> ContextFacts:
    return ContextFacts(source="transcript", **fields)  # type: ignore[arg-type]


def test_continue_never_replaces_the_task(project_dir: Path) -> None:
    state = run(
        project_dir,
        transcript(requests=["Work on bead spotter-dov"], user_replied=True),
        transcript(user_replied=True, last_step="Compiles clean."),  # the user said "continue"
    )
    assert state.active_context.current_task == "Work on bead spotter-dov"
    assert state.project_context.recent_changes == []


def test_the_subtask_in_progress_is_the_claimed_issue_until_closed(project_dir: Path) -> None:
    claimed = run(
        project_dir,
        transcript(
            requests=["Work on bead spotter-dov"],
            tracker=[
                TrackerEvent(item="spotter-dov.1", action="viewed", title="Extract shared presentation"),
            ],
        ),
        transcript(tracker=[TrackerEvent(item="spotter-dov.1", action="claimed")]),
    )
    assert claimed.active_context.in_progress == "spotter-dov.1 — Extract shared presentation"
    closed = run(
        project_dir,
        transcript(
            requests=["Work on bead spotter-dov"],
            tracker=[
                TrackerEvent(item="spotter-dov.1", action="viewed", title="Extract shared presentation")
            ],
        ),
        transcript(tracker=[TrackerEvent(item="spotter-dov.1", action="claimed")]),
        transcript(
            tracker=[
                TrackerEvent(item="spotter-dov.1", action="closed", title="Both views share it"),
                TrackerEvent(item="spotter-dov.2", action="claimed", title="Upgrade the renderer"),
            ]
        ),
    )
    assert closed.active_context.in_progress == "spotter-dov.2 — Upgrade the renderer"
    summaries = [c.summary for c in closed.project_context.recent_changes]
    assert summaries == ["Closed spotter-dov.1 (Extract shared presentation): Both views share it"]
    # The epic is not finished while a subtask is open, whatever the user asks next.
    assert closed.active_context.current_task == "Work on bead spotter-dov"


def test_task_list_completions_are_recorded_once(project_dir: Path) -> None:
    first = [
        TaskItem(content="Port string_utils", status="completed"),
        TaskItem(content="Port math_utils", status="in_progress"),
        TaskItem(content="Run tests", status="pending"),
    ]
    second = [
        TaskItem(content="Port string_utils", status="completed"),
        TaskItem(content="Port math_utils", status="completed"),
        TaskItem(content="Run tests", status="in_progress"),
    ]
    state = run(
        project_dir,
        transcript(requests=["Port the library to Rust"], tasks=first),
        transcript(tasks=second),
        transcript(tasks=second),
    )
    ac = state.active_context
    assert ac.in_progress == "Run tests" and ac.next_steps == []
    assert [c.summary for c in state.project_context.recent_changes] == [
        "Done: Port string_utils",
        "Done: Port math_utils",
    ]


def test_a_request_finishes_only_on_a_completion_signal(project_dir: Path) -> None:
    unsignalled = run(
        project_dir,
        transcript(requests=["Add the login form"]),
        transcript(requests=["Now style the dashboard"]),
    )
    assert unsignalled.project_context.recent_changes == []
    assert unsignalled.active_context.earlier_request == "Add the login form"  # kept in view
    signalled = run(
        project_dir,
        transcript(requests=["Add the login form"]),
        transcript(commits=[Commit(sha="abc1234", subject="feat: login form", files=["src/app.py"])]),
        transcript(requests=["Now style the dashboard"]),
    )
    assert [c.summary for c in signalled.project_context.recent_changes] == [
        "Committed abc1234: feat: login form",
        "Finished: Add the login form",
    ]
    assert signalled.project_context.recent_changes[0].files == ["src/app.py"]
    assert signalled.active_context.earlier_request == ""


def test_assistant_questions_close_when_the_user_answers(project_dir: Path) -> None:
    asked = run(
        project_dir,
        transcript(
            requests=["Fix the flaky test"],
            questions=[QuestionFact(text="Want me to commit this?", from_assistant=True)],
        ),
    )
    (pending,) = asked.active_context.active_decisions
    assert pending.status == "pending" and pending.from_assistant
    answered = run(
        project_dir,
        transcript(
            requests=["Fix the flaky test"],
            questions=[QuestionFact(text="Want me to commit this?", from_assistant=True)],
        ),
        transcript(user_replied=True),
    )
    assert answered.active_context.active_decisions == []
    same_stretch = run(
        project_dir,
        transcript(questions=[QuestionFact(text="Want me to push?", from_assistant=True, answer="yes")]),
    )
    assert same_stretch.active_context.active_decisions == []


def test_a_decision_settles_the_question_it_answers(project_dir: Path) -> None:
    state = run(
        project_dir,
        "Question: which email provider should we use?",
        "Decided: Postmark for transactional email",
    )
    (decision,) = state.active_context.active_decisions
    assert decision.status == "decided" and "Postmark" in (decision.decision or "")


def test_identical_completions_are_not_repeated(project_dir: Path) -> None:
    state = run(project_dir, "Done: fixed the login redirect", "Done: fixed the login redirect")
    assert [c.summary for c in state.project_context.recent_changes] == ["fixed the login redirect"]


def test_a_failing_check_stays_until_a_run_passes(project_dir: Path) -> None:
    failing = transcript(failures=[Failure(check="mix test test/a_test.exs", lines=["1) test mount failed"])])
    still = run(project_dir, failing, transcript(last_step="Looking at the error"))
    (blocker,) = still.active_context.blockers
    assert blocker.check == "mix test test/a_test.exs" and "mount" in blocker.detail
    assert blocker.since == NOW
    fixed = run(project_dir, failing, transcript(passed_checks=["mix test"]))
    assert fixed.active_context.blockers == []
    assert (
        fixed.project_context.recent_changes[-1].summary == "Fixed: `mix test test/a_test.exs` passes again"
    )


def test_a_commit_settles_what_was_uncommitted(project_dir: Path) -> None:
    edited = transcript(files_edited=["lib/a.ex", "lib/b.ex"], uncommitted=["lib/a.ex", "lib/b.ex"])
    state = run(project_dir, edited)
    assert state.active_context.uncommitted_files == ["lib/b.ex", "lib/a.ex"]  # newest first
    assert state.active_context.active_files[:2] == ["lib/b.ex", "lib/a.ex"]  # kept though not on disk
    after = run(project_dir, edited, transcript(commits=[Commit(subject="feat: a and b")], uncommitted=[]))
    assert after.active_context.uncommitted_files == []


def test_resume_within_budget_keeps_the_current_work_first(project_dir: Path) -> None:
    state = run(
        project_dir,
        transcript(
            requests=["Implement the annotations epic " + "with many words " * 10],
            tracker=[TrackerEvent(item="spotter-gqc.6", action="claimed", title="Close review session")],
            files_edited=[f"lib/file_{i}.ex" for i in range(25)],
            uncommitted=["lib/file_24.ex"],
            failures=[Failure(check="mix test", lines=["3 failures"])],
        ),
        "Overview: " + "a long overview sentence " * 60,
    )
    full = render_within(state, None)
    small = render_within(state, 300)
    assert count_tokens(small) <= 300 < count_tokens(full)
    assert "spotter-gqc.6" in small and "`mix test` failed" in small
    assert small.index("## Current work") < small.index("## Blockers") < small.index("## Active files")
    # the lowest priority comes last, and gets only the room the others leave (here: shortened)
    assert "## Overview" not in small or small.index("## Active files") < small.index("## Overview")

    words = set(full.split())
    assert all(w in words or w == "…" for w in small.split())  # never cut inside a word


def test_resume_strips_markup_an_older_state_holds(project_dir: Path) -> None:
    def task(text: str) -> str:
        state = ProjectState.model_validate(
            {"meta": {"session_id": "sid", "version": 3}, "active_context": {"current_task": text}}
        )
        return render_within(state, None)

    assert "**Task:** real task" in task("<system-reminder>x</system-reminder> real task")
    assert "**Task:** _none recorded_" in task("<task-notification> <task-id>b0be39e…")  # all markup


def test_a_seed_state_loads_with_the_new_fields_defaulted() -> None:
    seed = {
        "meta": {"version": 4, "session_id": "sid", "token_budget_used": 10, "merged_by": "gemini"},
        "project_context": {"overview": "o", "architecture": "a", "recent_changes": []},
        "active_context": {"current_task": "t", "active_files": ["a.py"], "active_decisions": []},
    }
    state = ProjectState.model_validate_json(json.dumps(seed))
    assert state.active_context.blockers == [] and state.active_context.in_progress == ""
    assert "**Task:** t" in render_within(state, 2000)


def test_llm_tiers_get_the_facts(project_dir: Path) -> None:
    facts = transcript(
        requests=["Implement spotter-gqc"],
        tracker=[TrackerEvent(item="spotter-gqc.6", action="claimed")],
        failures=[Failure(check="mix test", lines=["1 failure"])],
    )
    request = MergeRequest(
        old=None, facts=facts, session_id="sid", project_root=project_dir, token_cap=4000, now=NOW
    )
    prompt = build_prompt(request)
    assert '"spotter-gqc.6"' in prompt and '"check": "mix test"' in prompt


def test_brain_keeps_files_that_are_not_on_disk_and_says_so(project_dir: Path, store_url: str) -> None:
    settings = load_settings(store_url=store_url, project_root=project_dir, merge="offline")
    with ProjectBrain.open(settings=settings) as brain:
        brain.checkpoint(facts=transcript(requests=["Refactor"], files_edited=["lib/gone.ex", "src/app.py"]))
        resume = brain.resume()
        status = brain.status()
    assert "`lib/gone.ex` (not on disk here)" in resume.markdown
    assert "`src/app.py`\n" in resume.markdown
    assert resume.warnings and "lib/gone.ex" in resume.warnings[0]
    assert status.active_files == 2 and status.warnings


def test_a_clean_working_tree_settles_what_was_uncommitted(project_dir: Path) -> None:
    edited = transcript(files_edited=["lib/a.ex"], uncommitted=["lib/a.ex"])
    clean = run(project_dir, edited, transcript(clean_tree=True, last_step="Nothing to commit."))
    assert clean.active_context.uncommitted_files == []


def test_branch_and_the_last_few_steps_carry_over(project_dir: Path) -> None:
    state = run(
        project_dir,
        transcript(requests=["Fix login"], branch="fix/AUTH-12-login", last_step="Reading auth.py"),
        transcript(earlier_steps=["Ran the tests"], last_step="Editing the session check", branch=""),
    )
    ac = state.active_context
    assert ac.branch == "fix/AUTH-12-login"
    assert ac.last_step == "Editing the session check"
    assert ac.earlier_steps == ["Reading auth.py", "Ran the tests"]
    text = render_within(state, None)
    assert "**Branch:** `fix/AUTH-12-login`" in text and "- Ran the tests\n- Reading auth.py" in text


def test_integrity_lets_an_answered_assistant_question_go(project_dir: Path) -> None:
    from infinite_context_brain.core.merge.integrity import problems

    asked = run(project_dir, transcript(questions=[QuestionFact(text="Push now?", from_assistant=True)]))
    closed = asked.model_copy(deep=True)
    closed.active_context.active_decisions = []
    assert problems(asked, closed, session_id="sid", root=project_dir, cap=4000, replied=True) == []
    assert problems(asked, closed, session_id="sid", root=project_dir, cap=4000, replied=False)


def test_next_is_a_next_step_unless_the_task_is_done(project_dir: Path) -> None:
    both = run(project_dir, "Current task: add login\nNext: write the tests")
    assert both.active_context.current_task == "add login"
    assert [s.text for s in both.active_context.next_steps] == ["write the tests"]

    done = run(project_dir, "Current task: add login", "Done: added login. Next: password reset")
    assert done.active_context.current_task == "password reset" and done.active_context.next_steps == []
    unfinished = run(project_dir, "Current task: add login", "Next: password reset")
    assert unfinished.active_context.current_task == "add login"
    assert [s.text for s in unfinished.active_context.next_steps] == ["password reset"]


def test_a_stretch_with_only_an_answer_or_a_clean_tree_is_not_empty() -> None:
    assert ContextFacts(source="transcript", tool_uses=3).is_empty()
    assert not ContextFacts(user_replied=True).is_empty()  # closes the assistant's question
    assert not ContextFacts(clean_tree=True).is_empty()  # settles uncommitted files
    assert not ContextFacts(passed_checks=["pytest"]).is_empty()  # settles a blocker


def test_a_stated_blocker_reads_as_written(project_dir: Path) -> None:
    state = run(project_dir, "Blockers: pytest tests/test_login.py fails on the expiry")
    text = render_within(state, None)
    assert "- pytest tests/test_login.py fails on the expiry\n" in text and "failed" not in text


def test_the_summarys_next_step_is_said_once_and_whole() -> None:
    """Claude Code's next step is one of the next steps (shortened there when long): the resume
    lists it once, in full, among the next steps, not again under the summary."""
    said = "Fix the guard in `expand_control_for` " + "then rerun mix credo --strict " * 15 + "END"
    state = ProjectState.model_validate(
        {
            "meta": {"session_id": "sid", "version": 2},
            "active_context": {
                "current_task": "t",
                "next_steps": [{"text": said[:300] + "…", "origin": "summary"}, {"text": "add tests"}],
            },
            "compact_summary": {"current_work": "fixing the compile error", "next_step": said},
        }
    )
    text = render_within(state, 2000)
    assert text.count("Fix the guard in `expand_control_for`") == 1
    assert "END (Claude Code's summary)" in text and "Its next step" not in text
    assert "**Current work then:** fixing the compile error" in text


def test_a_summary_the_commits_since_have_settled_is_shown_in_brief() -> None:
    """Commits after Claude Code's summary: its current work and next step are history (the
    work moved on), shown shortened; without commits since, whole."""
    work = "Working on gqc.6: " + "still needed: tests, compile, credo, close the bead; " * 12 + "END"

    def shown(settled: bool) -> str:
        state = ProjectState.model_validate(
            {
                "meta": {"session_id": "sid", "version": 2},
                "active_context": {"current_task": "t"},
                "compact_summary": {"current_work": work, "next_step": "Add the tests", "settled": settled},
            }
        )
        return render_within(state, None)

    assert "END" in shown(False) and "before the commits since" not in shown(False)
    brief = shown(True)
    assert "Working on gqc.6" in brief and "END" not in brief and "before the commits since" in brief


def test_a_long_tracker_listing_is_shown_by_its_ids_past_the_first_items() -> None:
    """Nine open tracker items: the first six with their titles, the rest by their ids, so a
    listing cannot take the room of what else the brain knows."""
    steps = [{"text": f"web-{n}: Build page {n} with filters", "origin": "tracker"} for n in range(1, 10)]
    state = ProjectState.model_validate(
        {
            "meta": {"session_id": "sid", "version": 2},
            "active_context": {"current_task": "t", "next_steps": [{"text": "ship it"}, *steps]},
        }
    )
    text = render_within(state, None)
    assert "- web-6: Build page 6 with filters (tracker)" in text and "page 7" not in text
    assert "- 3 more open tracker items: web-7, web-8, web-9" in text and "- ship it" in text
