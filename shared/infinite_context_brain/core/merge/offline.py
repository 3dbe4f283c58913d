"""The deterministic offline merger: no key, no network, always available.

It merges facts (``core/facts.py``) into the state, with the semantics an engineer's hand-off
note has:
* the current task is the latest real request ("continue" never replaces it); the subtask in
  progress is a claimed tracker issue or the task list's in-progress item;
* work moves to ``recent_changes`` only on a completion signal: a commit, a closed issue, a task
  list item completed, a failing check that passes again, a stated completion; never twice;
* a failing check stays a blocker until a later run of it (or a broader one) passes;
* a question the assistant asked closes when the user answers; a decision settles the pending
  question it answers;
* files edited since the last commit are remembered as uncommitted.
Same input, same output (the clock is part of the request).
"""

from __future__ import annotations

import re
import time

from ..facts import ContextFacts
from ..models import (
    ActiveContext,
    Blocker,
    Decision,
    Meta,
    ProjectContext,
    ProjectState,
    RecentChange,
)
from ..text import similarity
from ..tokens import count_tokens
from ..transcript.commands import settles
from .base import MergeRequest, MergeResult
from .extract import clean_sentence, find_files
from .integrity import MAX_ACTIVE_FILES, MAX_BLOCKERS, MAX_NEXT_STEPS, fit_to_cap

ANSWERS_QUESTION = 0.2  # word overlap above which a decision settles a pending question
SAME_TASK = 0.25  # overlap above which a completion is taken to finish the current task
DUPLICATE = 0.7
READ_FILES_KEPT = 5


_MARKS = re.compile(r"[\w./\-#]*\d[\w./\-#]*")


def same(a: str, b: str) -> bool:
    """The same piece of work in other words: mostly the same words and the same numbers, ids
    and versions ("Closed spotter-dov.1" and "Closed spotter-dov.2" are two things)."""
    if a == b:
        return True
    return similarity(a, b) >= DUPLICATE and set(_MARKS.findall(a.lower())) == set(_MARKS.findall(b.lower()))


def _dedupe(items: list[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        if item and not any(same(item, kept) for kept in out):
            out.append(item)
    return out


def _newest_first(*groups: list[str]) -> list[str]:
    return list(dict.fromkeys(p for group in groups for p in group if p))


def _merge_text(old: str, new: list[str], *, replace: bool) -> str:
    if not new:
        return old
    text = " ".join(_dedupe(new))
    if replace or not old:
        return text
    if same(old, text) or text in old:
        return old
    return f"{old} {text}"


def _topic(decision: str) -> str:
    """A short question-like title for a decision stated without a question."""
    return clean_sentence(" ".join(decision.rstrip(".").split()[:12]), 120)


def _decisions(old: list[Decision], facts: ContextFacts) -> list[Decision]:
    decisions = [d.model_copy() for d in old]
    if facts.user_replied:  # the user spoke after the assistant asked: those questions are closed
        decisions = [d for d in decisions if not (d.from_assistant and d.status == "pending")]
    for fact in facts.decisions:
        text = clean_sentence(fact.decision, 400)
        pending = [d for d in decisions if d.status == "pending"]
        probe = f"{fact.question} {text}" if fact.question else text
        best = max(pending, key=lambda d: similarity(d.question, probe), default=None)
        if best is not None and similarity(best.question, probe) >= ANSWERS_QUESTION:
            best.status, best.decision, best.from_assistant = "decided", text, False
            continue
        if any(same(d.decision or d.question, text) for d in decisions):
            continue
        decisions.append(Decision(question=fact.question or _topic(text), status="decided", decision=text))
    for question in facts.questions:
        if question.answer is not None:
            continue  # asked and answered within this stretch
        text = clean_sentence(question.text, 300)
        if not any(same(d.question, text) for d in decisions):
            decisions.append(
                Decision(question=text, status="pending", from_assistant=question.from_assistant)
            )
    return decisions


class _Changes:
    """The new recent changes of one merge, de-duplicated against the old ones."""

    def __init__(self, old: list[RecentChange], request: MergeRequest) -> None:
        self.old = old
        self.items = [c.model_copy() for c in old]
        self.request = request
        self.added: list[str] = []

    def seen(self, summary: str) -> bool:
        return any(same(c.summary, summary) for c in self.items)

    def add(self, summary: str, files: list[str] | None = None) -> None:
        summary = clean_sentence(summary, 600)
        if not summary:
            return
        # The newer wording replaces an older near-duplicate (one line per piece of work).
        self.items = [c for c in self.items if not same(c.summary, summary)]
        if files is None:
            files = find_files(summary, self.request.project_root)
        self.items.append(RecentChange(timestamp=self.request.now, summary=summary, files=files[:10]))
        self.added.append(summary)


MAX_ITEM_TITLES = 12


def _item_titles(old: ActiveContext, facts: ContextFacts) -> dict[str, str]:
    titles = dict(old.item_titles)
    for event in facts.tracker:
        if event.title and event.action in {"viewed", "claimed", "created"}:
            titles.pop(event.item, None)
            titles[event.item] = clean_sentence(event.title, 160)
    return dict(list(titles.items())[-MAX_ITEM_TITLES:])


def _in_progress(
    old: ActiveContext, facts: ContextFacts, closed: set[str], completed: set[str], titles: dict[str, str]
) -> str:
    claimed = ""
    for event in facts.tracker:
        if event.action == "claimed":
            claimed = event.item
        elif event.action == "closed" and event.item == claimed:
            claimed = ""
    if facts.in_progress:
        return clean_sentence(facts.in_progress, 300)
    step = next((t.content for t in facts.tasks or [] if t.status == "in_progress"), "")
    if claimed:
        title = titles.get(claimed, "")
        text = f"{claimed} — {title}" if title else claimed
        return clean_sentence(f"{text} (step: {step})" if step else text, 300)
    if step:
        return clean_sentence(step, 300)
    previous = old.in_progress
    if not previous or facts.tasks is not None:
        return ""  # a task list that no longer has an in-progress item: nothing is
    head = previous.split(" ", 1)[0]
    if head in closed or previous in completed or any(same(previous, c) for c in completed):
        return ""
    return previous


def _blockers(
    old: list[Blocker], facts: ContextFacts, changes: _Changes, request: MergeRequest
) -> list[Blocker]:
    kept: list[Blocker] = []
    for blocker in old:
        fixed = any(settles(p, blocker.check) for p in facts.passed_checks) or any(
            similarity(blocker.check, c) >= 0.5 for c in facts.completions
        )
        if fixed:
            changes.add(f"Fixed: `{blocker.check}` passes again", [])
        else:
            kept.append(blocker.model_copy())
    for failure in facts.failures:
        earlier = next((b for b in kept if b.check == failure.check), None)
        detail = clean_sentence("; ".join(failure.lines), 400)
        if earlier is not None:
            kept.remove(earlier)
        kept.append(
            Blocker(
                check=failure.check,
                detail=detail,
                since=earlier.since if earlier else request.now,
                stated=failure.stated,
            )
        )
    return kept[-MAX_BLOCKERS:]


def _completions(facts: ContextFacts, changes: _Changes, titles: dict[str, str]) -> tuple[set[str], set[str]]:
    """Record every completion signal; returns (closed tracker items, completed task texts)."""
    closed: set[str] = set()
    for commit in facts.commits:
        sha = f" {commit.sha[:7]}" if commit.sha else ""
        changes.add(f"Committed{sha}: {commit.subject}", commit.files)
    for event in facts.tracker:
        if event.action == "closed":
            closed.add(event.item)
            name = f"{event.item} ({titles[event.item]})" if event.item in titles else event.item
            reason = clean_sentence(event.title, 200) if event.title else ""
            changes.add(f"Closed {name}: {reason}" if reason else f"Closed {name}", [])
    completed = {t.content for t in facts.tasks or [] if t.status == "completed"}
    for task in facts.tasks or []:
        if task.status == "completed" and not changes.seen(f"Done: {task.content}"):
            changes.add(f"Done: {task.content}", [])
    for text in _dedupe(facts.completions):
        explicit = facts.files_mentioned if facts.source == "text" else []
        changes.add(text, find_files(text, changes.request.project_root) or explicit)
    return closed, completed


def _task(old: ActiveContext, facts: ContextFacts, changes: _Changes, open_work: bool) -> tuple[str, str]:
    """(current task, earlier request not finished)."""
    requests = [r for r in facts.requests if r.strip()]
    old_task = old.current_task
    new_task = clean_sentence(requests[-1], 400) if requests else ""
    if old_task and any(similarity(old_task, c) >= SAME_TASK for c in facts.completions):
        # "Implemented the login form" closes "implement the login form": recorded already.
        return new_task, old.earlier_request
    if new_task and old_task and not same(new_task, old_task):
        # Finished: something completed since the task was set (a commit, a closed issue, a
        # completed item, a fixed check, in this stretch or an earlier one) and no subtask of it
        # is still open.
        since = old.task_since
        signalled = bool(changes.added) or any(
            since is not None and c.timestamp >= since for c in changes.old
        )
        if signalled and not open_work:
            changes.add(f"Finished: {old_task}", [])
            return new_task, ""
        return new_task, old_task  # replaced before any sign it was done: keep it in view
    if new_task:
        return new_task, old.earlier_request
    if not old_task and not facts.completions and facts.notes and facts.source == "text":
        return clean_sentence(facts.notes[0], 400), ""  # a pasted request with no cue words
    return old_task, old.earlier_request


def _promoted_next_step(old: ActiveContext, facts: ContextFacts) -> str:
    """A stated next step that becomes the current task: only when this checkpoint names no task
    of its own, and there is none or it reports something done ("Done: A. Next: B" moves on)."""
    if facts.requests or not facts.next_steps:
        return ""
    moves_on = not old.current_task or bool(facts.completions)
    return clean_sentence(facts.next_steps[0], 300) if moves_on else ""


def _steps(old: ActiveContext, facts: ContextFacts) -> tuple[str, list[str]]:
    """(last step, the steps before it): the newest narrations across checkpoints."""
    if not facts.last_step:
        return old.last_step, list(old.earlier_steps)
    steps: list[str] = []
    for step in [*old.earlier_steps, old.last_step, *facts.earlier_steps, facts.last_step]:
        if step and step not in steps[-1:]:
            steps.append(step)
    return steps[-1], steps[-3:-1]


class OfflineMerger:
    name = "offline"
    label = "offline"
    uses_network = False

    def merge(self, request: MergeRequest) -> MergeResult:
        started = time.perf_counter()
        old = request.old or ProjectState.empty(request.session_id)
        facts = request.facts
        oc, pc = old.active_context, old.project_context
        changes = _Changes(pc.recent_changes, request)

        titles = _item_titles(oc, facts)
        closed, completed = _completions(facts, changes, titles)
        blockers = _blockers(oc.blockers, facts, changes, request)
        in_progress = _in_progress(oc, facts, closed, completed, titles)
        if facts.tasks is not None:
            next_steps = [t.content for t in facts.tasks if t.status == "pending"]
        else:
            next_steps = [
                s for s in oc.next_steps if s not in completed and not any(
                    same(s, c) for c in [*completed, *facts.completions]
                )
            ]  # fmt: skip
        next_steps = _dedupe([*next_steps, *(clean_sentence(s, 300) for s in facts.next_steps)])
        promoted = _promoted_next_step(oc, facts)
        if promoted:  # "Done: login. Next: password reset": the next step becomes the task
            next_steps = [s for s in next_steps if s != promoted]
            facts = facts.model_copy(update={"requests": [promoted]})
        task, earlier_request = _task(oc, facts, changes, open_work=bool(in_progress or next_steps))
        last_step, earlier_steps = _steps(oc, facts)
        task_since = oc.task_since if task == oc.current_task and oc.current_task else request.now

        edited = list(reversed(facts.files_edited))
        read = list(reversed(facts.files_read))[:READ_FILES_KEPT]
        active_files = _newest_first(edited, facts.files_mentioned, read, oc.active_files)[:MAX_ACTIVE_FILES]
        if facts.commits or facts.clean_tree:
            uncommitted = list(reversed(facts.uncommitted))
        else:
            uncommitted = _newest_first(list(reversed(facts.uncommitted)), oc.uncommitted_files)

        overview_new = facts.overview
        if not pc.overview and not overview_new and request.old is None and facts.notes:
            overview_new = facts.notes[:1] if facts.source == "text" else []

        state = ProjectState(
            meta=Meta(
                version=old.meta.version,
                last_checkpoint=request.now,
                last_access=request.now,
                session_id=request.session_id,
                token_budget_used=request.token_count
                if request.token_count is not None
                else count_tokens(facts.model_dump_json(exclude_defaults=True)),
                merged_by=self.name,
            ),
            project_context=ProjectContext(
                overview=_merge_text(pc.overview, overview_new, replace=bool(facts.overview)),
                architecture=_merge_text(pc.architecture, facts.architecture, replace=False),
                recent_changes=changes.items[-10:],
            ),
            active_context=ActiveContext(
                current_task=task,
                active_files=active_files,
                active_decisions=_decisions(oc.active_decisions, facts),
                in_progress=in_progress,
                next_steps=next_steps[:MAX_NEXT_STEPS],
                blockers=blockers,
                uncommitted_files=uncommitted[:MAX_ACTIVE_FILES],
                last_step=last_step,
                earlier_steps=earlier_steps,
                branch=facts.branch or oc.branch,
                earlier_request=earlier_request if earlier_request != task else "",
                variables=facts.variables or oc.variables,
                item_titles=titles,
                task_since=task_since if task else None,
            ),
        )
        state = fit_to_cap(state, request.token_cap)
        return MergeResult(
            state=state,
            merged_by=self.name,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
