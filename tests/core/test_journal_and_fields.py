"""Nothing said is lost: every checkpoint's text kept as written in a bounded journal, a checkpoint
that changes nothing says so, trimming says what it dropped, and structured fields merge by their
documented replace/add rules."""

from __future__ import annotations

from pathlib import Path

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.facts import Stated, StatedBlocker, StatedDecision
from infinite_context_brain.core.merge.record import JOURNAL_ENTRIES, JOURNAL_ENTRY_CHARS


def _brain(project_dir: Path, store_url: str, **settings: object) -> ProjectBrain:
    return ProjectBrain.open(project_dir, load_settings(store_url=store_url, merge="offline", **settings))


def test_every_text_is_kept_as_written_newest_first(project_dir: Path, store_url: str) -> None:
    texts = [
        "exploring data",
        "Refactoring the parser to stream tokens; next: wire it into the CLI",
        "Note: the lexer keeps a 4 KB window\nGotcha: mmap breaks on pipes",
    ]
    with _brain(project_dir, store_url) as brain:
        for text in texts:
            brain.checkpoint(text, origin="cli")
        state = brain.resume().state
        markdown = brain.resume(max_tokens=2000).markdown
    assert state is not None
    assert [e.text for e in state.journal] == texts and {e.origin for e in state.journal} == {"cli"}
    journal = markdown.split("## Journal", 1)[1]
    assert (
        journal.index("Note: the lexer")
        < journal.index("Refactoring the parser")
        < journal.index("exploring data")
    )
    assert "Note: the lexer keeps a 4 KB window\n  Gotcha: mmap breaks on pipes" in journal  # lines kept
    assert state.active_context.current_task == "Refactoring the parser to stream tokens"
    assert [s.text for s in state.active_context.next_steps] == ["wire it into the CLI"]


def test_a_checkpoint_that_changes_nothing_says_so_and_writes_no_version(
    project_dir: Path, store_url: str
) -> None:
    with _brain(project_dir, store_url) as brain:
        first = brain.checkpoint("Current task: add CSV export")
        again = brain.checkpoint("Current task: add CSV export")
        assert first.changed and not again.changed
        assert again.version == first.version == brain.store.states.current_version(brain.session_id)
        assert again.warnings and "nothing new" in again.warnings[0]


def test_the_journal_is_bounded_and_says_what_it_dropped(project_dir: Path, store_url: str) -> None:
    with _brain(project_dir, store_url) as brain:
        results = [brain.checkpoint(f"note number {i} about step {i}") for i in range(JOURNAL_ENTRIES + 2)]
        state = brain.resume().state
        long = brain.checkpoint("x" * (JOURNAL_ENTRY_CHARS + 500) + " end")
    assert state is not None and len(state.journal) == JOURNAL_ENTRIES
    assert state.journal[0].text == "note number 2 about step 2"  # the oldest went first
    dropped = [w for r in results for w in r.warnings if "journal full" in w]
    assert dropped and "note number 0" in dropped[0]
    assert any("journal keeps its first" in w for w in long.warnings)


def test_the_size_limit_names_what_it_trimmed(project_dir: Path, store_url: str) -> None:
    steps = "\n".join(f"- step {i}: {'a long description of the work ' * 6}" for i in range(40))
    with _brain(project_dir, store_url, state_token_cap=2000) as brain:
        result = brain.checkpoint(f"Current task: the release\nNext steps:\n{steps}")
    assert result.state_tokens <= 2000
    assert any("size limit" in w and "next steps" in w for w in result.warnings), result.warnings


def test_structured_fields_replace_or_add_by_their_rules(project_dir: Path, store_url: str) -> None:
    with _brain(project_dir, store_url) as brain:
        brain.checkpoint(
            stated=Stated(
                task="Add OAuth login",
                in_progress="the callback route",
                next_steps=["store the token", "logout button", "docs"],
                decisions=[StatedDecision(decision="use authlib", reason="it handles PKCE")],
                blockers=[StatedBlocker(blocker="staging DB down", tried=["restart the tunnel"])],
                files=["src/auth.py", "../outside.py"],
                gotchas=["the callback URL must match exactly"],
            ),
            origin="mcp",
        )
        brain.checkpoint(
            stated=Stated(
                done=["store the token"],
                next_steps=["logout button", "docs"],
                blockers=[],
                decisions=[StatedDecision(decision="sessions expire after 8 h")],
                notes=["tokens are encrypted at rest"],
            ),
            origin="mcp",
        )
        state = brain.resume().state
    assert state is not None
    ac = state.active_context
    assert ac.current_task == "Add OAuth login" and ac.in_progress == "the callback route"
    assert [s.text for s in ac.next_steps] == ["logout button", "docs"]  # replaced whole
    assert ac.blockers == []  # replaced by an empty list
    decided = {d.decision: d.reason for d in ac.active_decisions}
    assert decided == {"use authlib": "it handles PKCE", "sessions expire after 8 h": ""}  # added
    assert ac.active_files[0] == "src/auth.py" and "../outside.py" not in ac.active_files
    assert ac.gotchas == ["the callback URL must match exactly"] and ac.notes == [
        "tokens are encrypted at rest"
    ]
    assert any("store the token" in c.summary for c in state.project_context.recent_changes)
    assert state.journal == []  # fields only: no text to journal


def test_text_and_fields_together_and_a_blocker_the_text_says_is_fixed(
    project_dir: Path, store_url: str
) -> None:
    with _brain(project_dir, store_url) as brain:
        brain.checkpoint(
            "Task: speed up the nightly import\nBlocker: the import crashes on rows with an empty SKU"
        )
        brain.checkpoint("Fixed the crash on empty SKU rows. Next: profile the batch insert.")
        state = brain.resume().state
    assert state is not None and state.active_context.blockers == []
    assert [s.text for s in state.active_context.next_steps] == ["profile the batch insert"]
    assert state.active_context.current_task == "speed up the nightly import"
