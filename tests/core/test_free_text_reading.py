"""Reading free-text checkpoints the way a person means them: what is going on now, what starts,
what is finished, what got fixed (even when the fix does not name the problem), in the many ways
people write: run-on prose, typo'd labels, lead-ins, org-mode, commit subjects, checklists.

The wordings here are written for these tests; the benchmark's held-out sets are not reused."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from infinite_context_brain.core.merge import MergeRequest, OfflineMerger
from infinite_context_brain.core.merge.extract import facts_from_text
from infinite_context_brain.core.merge.record import finish
from infinite_context_brain.core.models import ProjectState

from .test_offline_merger import NOW, SID


def run(root: Path, *texts: str) -> ProjectState:
    """The state after checkpointing ``texts`` one after another, a minute apart."""
    state: ProjectState | None = None
    for i, text in enumerate(texts):
        now = NOW + timedelta(minutes=i)
        facts = facts_from_text(text, root)
        request = MergeRequest(
            old=state, facts=facts, session_id=SID, project_root=root, token_cap=4000, now=now
        )
        state = finish(OfflineMerger().merge(request).state, state, facts, now, 4000)[0]
    assert state is not None
    return state


def blockers(state: ProjectState) -> list[str]:
    return [b.check for b in state.active_context.blockers]


def test_a_sentence_is_cut_where_what_it_says_changes(project_dir: Path) -> None:
    facts = facts_from_text(
        "parser rewrite merged, lexer fix done + tests. benchmark job still times out on arm64, "
        "need to bump the runner size",
        project_dir,
    )
    assert facts.completions == ["parser rewrite merged, lexer fix done + tests"]
    assert [f.check for f in facts.failures] == ["benchmark job still times out on arm64"]
    assert facts.next_steps == ["need to bump the runner size"]


def test_work_going_on_is_the_step_of_a_named_task_and_replaces_one_read_from_prose(
    project_dir: Path,
) -> None:
    named = run(
        project_dir,
        "Task: make the importer resumable after a crash",
        "Writing the checkpoint table migration now.",
    )
    assert named.active_context.current_task == "make the importer resumable after a crash"
    assert named.active_context.in_progress == "Writing the checkpoint table migration now"
    prose = run(project_dir, "poking at the flaky importer", "Rewriting the importer's retry loop.")
    assert prose.active_context.current_task == "Rewriting the importer's retry loop"


def test_work_that_starts_now_replaces_the_task_and_closing_out_finishes_it(project_dir: Path) -> None:
    state = run(
        project_dir,
        "Task: rotate the signing keys on the staging cluster\nBlocker: vault agent refuses the new role",
        "Role policy updated, vault agent happy. Closing this out. Moving on to the audit log export.",
    )
    ac = state.active_context
    assert ac.current_task == "The audit log export"
    assert ac.blockers == []
    assert ac.earlier_request == ""
    assert any(
        c.summary == "Finished: rotate the signing keys on the staging cluster"
        for c in state.project_context.recent_changes
    )


def test_a_fix_that_names_nothing_settles_the_blocker_the_text_speaks_of(project_dir: Path) -> None:
    state = run(
        project_dir,
        "Blocker: thumbnails come out rotated on Pixel phones\nBlocker: upload stalls at 99% on slow links",
        "Root cause: we ignored the EXIF orientation of the thumbnails. Fixed, rotated previews look right.",
    )
    assert blockers(state) == ["upload stalls at 99% on slow links"]


def test_a_short_fix_naming_a_telling_word_settles_only_that_blocker(project_dir: Path) -> None:
    state = run(
        project_dir,
        "Blocker: the ETL job dies with SIGBUS on the big partition\nBlocker: login test fails on CI",
        "Fixed the SIGBUS thing. Also fixed a typo in the docs test.",
    )
    assert blockers(state) == ["login test fails on CI"]  # "test" says too little to settle it


def test_a_problem_said_to_be_gone_is_no_blocker(project_dir: Path) -> None:
    state = run(
        project_dir,
        "Working on the sync service. Problem: the websocket drops every 60s behind the proxy.",
        "Raised the proxy idle timeout; websocket drops no longer happen, soaked for an hour.",
    )
    assert blockers(state) == []


def test_labels_typed_with_a_slip_are_still_labels(project_dir: Path) -> None:
    facts = facts_from_text(
        "taks: nightly export to the partner SFTP\n"
        "progres: wiring the CSV writer\n"
        "blokcer: host key rejected",
        project_dir,
    )
    assert facts.requests == ["nightly export to the partner SFTP"]
    assert facts.in_progress == "wiring the CSV writer"
    assert [f.check for f in facts.failures] == ["host key rejected"]


def test_a_few_words_before_a_colon_say_what_follows(project_dir: Path) -> None:
    facts = facts_from_text(
        "New request from the PM: add CSV export to the billing page. "
        "Answer to yesterday's open question: keep the old endpoint until v3.",
        project_dir,
    )
    assert facts.requests == ["add CSV export to the billing page"]
    assert [d.decision for d in facts.decisions] == ["keep the old endpoint until v3"]


def test_org_mode_notes_read_as_their_keywords_say(project_dir: Path) -> None:
    first = (
        "* Offline maps for the hiking app\n** DONE tile cache\n** TODO purge old tiles\n"
        "** BLOCKED no disk quota API"
    )

    state = run(project_dir, first)
    ac = state.active_context
    assert ac.current_task == "Offline maps for the hiking app"
    assert [s.text for s in ac.next_steps] == ["purge old tiles"]
    assert blockers(state) == ["no disk quota API"]
    parked = run(
        project_dir,
        first,
        "* Offline maps for the hiking app [PARKED]\n* Crash reporter\n** TODO symbol upload",
    )
    assert parked.active_context.current_task == "Crash reporter"


def test_a_title_over_a_checklist_is_the_task(project_dir: Path) -> None:
    state = run(project_dir, "Keyboard shortcuts for the editor\n- [x] save\n- [ ] undo\n- [ ] find")
    assert state.active_context.current_task == "Keyboard shortcuts for the editor"
    assert [s.text for s in state.active_context.next_steps] == ["undo", "find"]
    again = run(
        project_dir, "Keyboard shortcuts for the editor\n- [x] save", "editor shortcuts cont.\n- [x] undo"
    )
    assert again.active_context.current_task == "Keyboard shortcuts for the editor"


def test_a_commit_subject_is_a_change_not_the_task(project_dir: Path) -> None:
    facts = facts_from_text(
        "feat(search): fuzzy matching on titles\n\n- trigram index\n- ranking tweak", project_dir
    )
    assert facts.requests == []
    assert facts.completions[0] == "feat(search): fuzzy matching on titles"


def test_a_request_opens_the_text_and_an_imperative_later_is_no_task(project_dir: Path) -> None:
    assert facts_from_text("Add a dark theme to the settings page.", project_dir).requests == [
        "Add a dark theme to the settings page"
    ]
    later = facts_from_text("Toggle persisted. Review comments from Ana still to address.", project_dir)
    assert later.requests == []
    design = facts_from_text("Design says keep the blue header.", project_dir)
    assert design.requests == []


def test_work_someone_asked_for_is_the_task(project_dir: Path) -> None:
    facts = facts_from_text("I've been asked to move the cron jobs to Cloud Scheduler.", project_dir)
    assert facts.requests == ["Move the cron jobs to Cloud Scheduler"]
    boss = facts_from_text("tracing work is on hold -> the lead wants the GDPR export first", project_dir)
    assert facts_from_text(
        "tracing work is on hold -> the lead wants the GDPR export first", project_dir
    ).requests
    assert "GDPR export" in boss.requests[0]
