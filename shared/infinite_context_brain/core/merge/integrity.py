"""Checks and repairs every merged state passes before it is stored, whichever tier made it.

``fit_to_cap`` keeps a state under its token cap by trimming the oldest and least important text
first (old change summaries, then old changes, decided decisions, long prose, extra files, then
the oldest journal entries), so the current task, what is left and pending decisions survive
longest; it says what it trimmed, so a checkpoint never loses text without a word. ``problems``
lists what makes a merged state unacceptable (the LLM tiers use it to reject a provider's answer
and fall through).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..models import MAX_RECENT_CHANGES, ProjectState
from ..tokens import count_tokens
from .base import MergeRequest
from .extract import clean_sentence, relative_file

MAX_ACTIVE_FILES = 25
MAX_DECIDED = 30
MAX_NEXT_STEPS = 30
MAX_BLOCKERS = 8
MAX_GOTCHAS = 12
MAX_NOTES = 12

#: the fields kept by ``record.finish`` outside any merger's answer
RECORD_FIELDS = frozenset({"journal", "compact_summary"})


def state_tokens(state: ProjectState) -> int:
    return count_tokens(state.model_dump_json())


def merged_tokens(state: ProjectState) -> int:
    """The tokens of what a merger answers (the state without the journal and summary)."""
    return count_tokens(state.model_dump_json(exclude=set(RECORD_FIELDS)))


def known_files(request: MergeRequest) -> set[str]:
    """Paths a merge may keep without checking the disk: the facts' and the old state's."""
    facts = request.facts
    known = {*facts.files_edited, *facts.files_read, *facts.files_mentioned, *facts.uncommitted}
    for commit in facts.commits:
        known.update(commit.files)
    if request.old is not None:
        ac = request.old.active_context
        known.update(ac.active_files, ac.uncommitted_files)
        for change in request.old.project_context.recent_changes:
            known.update(change.files)
    return known


def keep_known_files(paths: list[str], root: Path, known: set[str]) -> tuple[list[str], list[str]]:
    """(kept, dropped): known paths as they are, other paths only if they exist inside ``root``."""
    kept: list[str] = []
    dropped: list[str] = []
    for path in paths:
        rel = path if path in known else relative_file(path, root)
        if rel is None:
            dropped.append(path)
        elif rel not in kept:
            kept.append(rel)
    return kept, dropped


def existing_files(paths: list[str], root: Path) -> tuple[list[str], list[str]]:
    """(kept, dropped): kept are relative paths of files that exist inside ``root``."""
    kept: list[str] = []
    dropped: list[str] = []
    for path in paths:
        rel = relative_file(path, root)
        if rel is None:
            dropped.append(path)
        elif rel not in kept:
            kept.append(rel)
    return kept, dropped


def _shorten(text: str, ratio: float) -> str:
    if not text:
        return text
    return clean_sentence(text, max(40, int(len(text) * ratio)))


def _trim_steps(state: ProjectState) -> list[Callable[[], bool]]:
    """Reductions in the order they are tried; each returns False when it has nothing left."""
    pc, ac = state.project_context, state.active_context

    def shorten_old_changes() -> bool:
        for change in pc.recent_changes[: max(0, len(pc.recent_changes) - 3)]:
            if len(change.summary) > 160:
                change.summary = clean_sentence(change.summary, 160)
                return True
        return False

    def drop_oldest_change() -> bool:
        if len(pc.recent_changes) > 3:
            pc.recent_changes.pop(0)
            return True
        return False

    def drop_oldest_decided() -> bool:
        for i, decision in enumerate(ac.active_decisions):
            if decision.status == "decided":
                ac.active_decisions.pop(i)
                return True
        return False

    def fewer_next_steps() -> bool:
        if len(ac.next_steps) > 12:
            ac.next_steps.pop()
            return True
        return False

    def drop_oldest_journal() -> bool:
        if len(state.journal) > 3:
            state.journal.pop(0)
            return True
        return False

    def journal_last_resort() -> bool:
        if len(state.journal) > 1:
            state.journal.pop(0)
            return True
        if state.journal and len(state.journal[0].text) > 41:
            entry = state.journal[0]
            entry.text = clean_sentence(entry.text, max(40, len(entry.text) // 2))
            return True
        if state.journal:  # the history still holds it, and the warning names it
            state.journal.pop(0)
            return True
        return False

    def task_last_resort() -> bool:
        # The cap holds whatever the text: characters JSON escapes (\u0007) cost several tokens
        # each, so even an 80-character task can pass a small cap. 21: "…" may end a cut word.
        changed = False
        for name in ("current_task", "in_progress"):
            text = getattr(ac, name)
            shorter = clean_sentence(text, max(20, len(text) // 2)) if len(text) > 21 else text
            if len(shorter) < len(text):
                setattr(ac, name, shorter)
                changed = True
        return changed

    def fewer_notes() -> bool:
        if len(ac.notes) > 4 or len(ac.gotchas) > 4:
            for items in (ac.notes, ac.gotchas):
                if len(items) > 4:
                    items.pop(0)
            return True
        return False

    def shorten_details() -> bool:
        changed = False
        if len(ac.last_step) > 160:
            ac.last_step = clean_sentence(ac.last_step, 160)
            changed = True
        if ac.earlier_steps:
            ac.earlier_steps = ac.earlier_steps[1:]
            changed = True
        if len(ac.earlier_request) > 160:
            ac.earlier_request = clean_sentence(ac.earlier_request, 160)
            changed = True
        for blocker in ac.blockers:
            if len(blocker.detail) > 160:
                blocker.detail = clean_sentence(blocker.detail, 160)
                changed = True
        if len(ac.variables) > 10:
            ac.variables = ac.variables[-10:]
            changed = True
        if len(ac.uncommitted_files) > 10:
            ac.uncommitted_files = ac.uncommitted_files[:10]
            changed = True
        return changed

    def shorten_architecture() -> bool:
        if len(pc.architecture) > 200:
            pc.architecture = _shorten(pc.architecture, 0.7)
            return True
        return False

    def shorten_overview() -> bool:
        if len(pc.overview) > 200:
            pc.overview = _shorten(pc.overview, 0.7)
            return True
        return False

    def fewer_files() -> bool:
        if len(ac.active_files) > 8:
            ac.active_files = ac.active_files[: max(8, len(ac.active_files) * 2 // 3)]
            return True
        return False

    def drop_any_change() -> bool:
        if pc.recent_changes:
            pc.recent_changes.pop(0)
            return True
        return False

    def shorten_rest() -> bool:
        changed = False
        if len(ac.current_task) > 300:
            ac.current_task = clean_sentence(ac.current_task, 300)
            changed = True
        for decision in ac.active_decisions:
            if len(decision.question) > 200 or len(decision.decision or "") > 200:
                decision.question = clean_sentence(decision.question, 200)
                decision.decision = clean_sentence(decision.decision, 200) if decision.decision else None
                changed = True
        return changed

    def drop_pending() -> bool:
        if ac.active_decisions:
            ac.active_decisions.pop(0)
            return True
        return False

    def last_resort() -> bool:
        if pc.architecture or pc.overview or ac.active_files:
            pc.architecture = _shorten(pc.architecture, 0.5) if len(pc.architecture) > 80 else ""
            pc.overview = _shorten(pc.overview, 0.5) if len(pc.overview) > 80 else ""
            ac.active_files = ac.active_files[: len(ac.active_files) // 2]
            return True
        # 81: clean_sentence may end a cut word with "…" (one character over), which must not loop.
        if (
            len(ac.current_task) > 81
            or len(ac.in_progress) > 81
            or ac.last_step
            or ac.next_steps
            or ac.earlier_request
        ):
            ac.current_task = clean_sentence(ac.current_task, 80)
            ac.in_progress = clean_sentence(ac.in_progress, 80)
            ac.last_step = ""
            ac.earlier_request = ""
            ac.next_steps = ac.next_steps[:1] if len(ac.next_steps) > 1 else []
            return True
        return False

    return [
        shorten_old_changes,
        drop_oldest_change,
        drop_oldest_decided,
        shorten_details,
        drop_oldest_journal,
        fewer_notes,
        fewer_next_steps,
        shorten_architecture,
        shorten_overview,
        fewer_files,
        drop_any_change,
        shorten_rest,
        drop_pending,
        last_resort,
        journal_last_resort,
        task_last_resort,
    ]


def _counts(state: ProjectState) -> dict[str, int]:
    ac, pc = state.active_context, state.project_context
    return {
        "next steps": len(ac.next_steps),
        "decisions": len(ac.active_decisions),
        "blockers": len(ac.blockers),
        "recent changes": len(pc.recent_changes),
        "active files": len(ac.active_files),
        "notes": len(ac.notes),
        "gotchas": len(ac.gotchas),
        "journal entries": len(state.journal),
    }


def _trimmed(before: dict[str, int], after: dict[str, int], journal_dropped: list[str]) -> list[str]:
    lost = [f"{after[k]} of {n} {k}" for k, n in before.items() if after[k] < n]
    if not lost:
        return []
    detail = f" (dropped: {'; '.join(journal_dropped[:3])})" if journal_dropped else ""
    return [
        "the brain is at its size limit: kept " + ", ".join(lost) + detail + "; older versions in "
        "history still hold the rest (raise INFINITE_CONTEXT_STATE_TOKEN_CAP to keep more)"
    ]


def fit_to_cap(state: ProjectState, cap: int) -> tuple[ProjectState, list[str]]:
    """A copy of ``state`` trimmed until it is at most ``cap`` tokens (as JSON), and a warning
    naming what was dropped (none when nothing was)."""
    state = state.model_copy(deep=True)
    before = _counts(state)
    journal_before = [e.text for e in state.journal]
    pc, ac = state.project_context, state.active_context
    # Structural limits first: they hold whatever the size.
    pc.recent_changes = pc.recent_changes[-MAX_RECENT_CHANGES:]
    ac.active_files = ac.active_files[:MAX_ACTIVE_FILES]
    ac.uncommitted_files = ac.uncommitted_files[:MAX_ACTIVE_FILES]
    ac.unverified_files = ac.unverified_files[:MAX_ACTIVE_FILES]
    ac.next_steps = ac.next_steps[:MAX_NEXT_STEPS]
    ac.blockers = ac.blockers[-MAX_BLOCKERS:]
    ac.gotchas = ac.gotchas[-MAX_GOTCHAS:]
    ac.notes = ac.notes[-MAX_NOTES:]
    decided = [d for d in ac.active_decisions if d.status == "decided"]
    if len(decided) > MAX_DECIDED:
        surplus = {id(d) for d in decided[: len(decided) - MAX_DECIDED]}
        ac.active_decisions = [d for d in ac.active_decisions if id(d) not in surplus]
    if state_tokens(state) > cap:
        for step in _trim_steps(state):
            while state_tokens(state) > cap and step():
                pass
            if state_tokens(state) <= cap:
                break
    kept = {e.text for e in state.journal}
    dropped = [" ".join(t.split()[:8]) + "…" for t in journal_before if t not in kept]
    return state, _trimmed(before, _counts(state), dropped)


def problems(
    old: ProjectState | None,
    new: ProjectState,
    *,
    session_id: str,
    root: Path,
    cap: int,
    known: set[str] | frozenset[str] = frozenset(),
    replied: bool = False,
) -> list[str]:
    """Reasons ``new`` must not be stored (empty when it is acceptable)."""
    found: list[str] = []
    if new.meta.session_id != session_id:
        found.append(f"session id changed from {session_id} to {new.meta.session_id}")
    if len(new.project_context.recent_changes) > MAX_RECENT_CHANGES:
        found.append(f"recent_changes holds {len(new.project_context.recent_changes)} entries (max 10)")
    outside = [
        p for p in new.active_context.active_files if p not in known and relative_file(p, root) is None
    ]
    if outside:
        found.append(f"active files outside the project or missing: {', '.join(outside[:5])}")
    if old is not None:
        still = {d.question for d in new.active_context.active_decisions}
        dropped = [
            d.question
            for d in old.active_context.active_decisions
            # The assistant's own question closes once the user has replied (``replied``).
            if d.status == "pending" and d.question not in still and not (replied and d.from_assistant)
        ]
        if dropped:
            found.append(f"pending decisions dropped without a decision: {'; '.join(dropped[:3])}")
    tokens = merged_tokens(new)
    if tokens > cap:
        found.append(f"state is {tokens} tokens, over the cap of {cap}")
    return found
