"""The deterministic offline merger: no key, no network, always available.

It merges facts (``core/facts.py``) into the state, with the semantics an engineer's hand-off
note has:
* the current task is the latest real request ("continue" never replaces it); the subtask in
  progress is a claimed tracker issue or the task list's in-progress item;
* work moves to ``recent_changes`` only on a completion signal: a commit, a closed issue, a task
  list item completed, a failing check that passes again, a stated completion; never twice;
* a failing check stays a blocker until a later run of it (or a broader one) passes, a stated
  blocker until a completion settles it; a task is never finished by a note that also reports a
  failure;
* what is left (``steps.py``) keeps its origin: the task list, the assistant's plan, a tracker
  listing, Claude Code's summary, a stated next step; "Next: X" never replaces the task;
* a question the assistant asked closes when the user answers; a decision settles the pending
  question it answers, and keeps its reason;
* files edited since the last commit are remembered as uncommitted, since the last passing test
  or build as unverified; moved and removed files leave every file list;
* structured fields a model stated are merged by the rules in ``stated.py``.
The journal, Claude Code's summary and the token cap are applied after any tier (``record.py``).
Same input, same output (the clock is part of the request).
"""

from __future__ import annotations

import re
import time

from ..facts import ContextFacts, TaskItem
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
from ..transcript.commands import JOIN, concluded_by_commit, parts, settles, unsettled
from . import stated as stated_fields
from .base import MergeRequest, MergeResult
from .clauses import content_free
from .extract import clean_sentence, find_files
from .integrity import MAX_ACTIVE_FILES, MAX_BLOCKERS, MAX_GOTCHAS, MAX_NOTES
from .steps import next_steps as steps_left
from .wording import dedupe as _dedupe
from .wording import distinctive_overlap, fixes_blocker, same, stems

ANSWERS_QUESTION = 0.2  # word overlap above which a decision settles a pending question
SAME_TASK = 0.25  # overlap above which a completion is taken to finish the current task
READ_FILES_KEPT = 5


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
        reason = clean_sentence(fact.reason, 300)
        if best is not None and similarity(best.question, probe) >= ANSWERS_QUESTION:
            best.status, best.decision, best.from_assistant = "decided", text, False
            best.reason = reason or best.reason
            continue
        if any(same(d.decision or d.question, text) for d in decisions):
            continue
        decisions.append(
            Decision(question=fact.question or _topic(text), status="decided", decision=text, reason=reason)
        )
    for question in facts.questions:
        if question.answer is not None:
            # asked and answered within this stretch: a real answer is a decision ("option 1")
            answer = clean_sentence(question.answer, 300)
            if question.from_assistant and len(answer.split()) >= 2 and not content_free(answer):
                topic = clean_sentence(question.text, 200)
                if not any(same(d.decision or "", answer) for d in decisions):
                    decisions.append(Decision(question=topic, status="decided", decision=answer))
            continue

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
    old: list[Blocker], facts: ContextFacts, changes: _Changes, request: MergeRequest, gotchas: list[str]
) -> list[Blocker]:
    """The blockers left, and (into ``gotchas``) what fixed each failing check that passes now."""
    kept: list[Blocker] = []

    for blocker in old:
        left = parts(blocker.check)
        for check in facts.passed_checks:
            left = [part for part in left if unsettled(check, part)]
        passed = not left or (bool(facts.commits) and concluded_by_commit(blocker.check))

        if left and not blocker.stated and len(left) < len(parts(blocker.check)):
            blocker = blocker.model_copy(update={"check": JOIN.join(left)})  # a compound: parts pass

        stated_fix = any(
            fixes_blocker(c, blocker.check) or similarity(blocker.check, c) >= 0.5 for c in facts.completions
        )
        if passed and not blocker.stated:
            changes.add(f"Fixed: `{blocker.check}` passes again", [])
            how = next((note for check, note in facts.fix_notes.items() if settles(check, blocker.check)), "")
            if how:
                why = f": {blocker.detail}" if blocker.detail else ""
                gotchas.append(clean_sentence(f"`{blocker.check}` failed{why}; fixed: {how}", 500))

        elif stated_fix or passed:
            continue  # the completion that settles it is recorded as it was written
        else:
            kept.append(blocker.model_copy())
    if facts.unnamed_fix:
        for fixed in _blockers_fixed(kept, facts.text):
            kept.remove(fixed)
    for failure in facts.failures:
        earlier = next((b for b in kept if b.check == failure.check), None)
        detail = clean_sentence("; ".join(failure.lines), 400)
        tried = list(earlier.tried) if earlier else []
        if earlier is not None:
            kept.remove(earlier)
        tried = list(dict.fromkeys([*tried, *(clean_sentence(t, 200) for t in failure.tried)]))[-5:]
        kept.append(
            Blocker(
                check=failure.check,
                detail=detail,
                since=earlier.since if earlier else request.now,
                stated=failure.stated,
                tried=tried,
            )
        )
    return kept[-MAX_BLOCKERS:]


def _blockers_fixed(blockers: list[Blocker], text: str) -> list[Blocker]:
    """The stated blockers a fix that names nothing ("fixed.", "fix shipped in 5.12.1")
    settles: those the rest of the text speaks of (a distinctive word in common), else the only
    one."""
    stated = [b for b in blockers if b.stated]
    spoken = [b for b in stated if distinctive_overlap(text, f"{b.check} {b.detail}")]
    return spoken or (stated if len(stated) == 1 else [])


def _ongoing_work(old: ActiveContext, facts: ContextFacts) -> tuple[ContextFacts, bool]:
    """Places work going on named in prose: the step in progress of a task named in the same
    text or before (a label, a request, a stated field), else the task itself. A step in
    progress stated when no task is known is the task. Returns the facts with it placed, and
    whether a new task in them is named."""
    named = any(r.strip() for r in facts.requests)
    work = next((w for w in facts.ongoing if w.strip()), "")
    if work:
        if named or (old.current_task and old.task_named and not facts.task_finished):
            return (facts if facts.in_progress else facts.model_copy(update={"in_progress": work})), named
        return facts.model_copy(update={"requests": [*facts.requests, work]}), False
    if not named and not old.current_task and facts.source == "text" and facts.in_progress:
        return facts.model_copy(update={"requests": [facts.in_progress], "in_progress": ""}), False
    return facts, named


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


MAX_TASKS_KEPT = 40
MAX_CHECKS = 6
MAX_REMOVED = 10


def _task_list(old: ActiveContext, facts: ContextFacts) -> dict[str, TaskItem]:
    """The incremental task list (TaskCreate / TaskUpdate) after this stretch: updates by id, an
    update without a subject keeps the stored one; deleted tasks go."""
    tasks = {key: item.model_copy() for key, item in old.task_list.items()}
    for key, update in facts.task_updates.items():
        known = tasks.get(key)
        content = update.content or (known.content if known is not None else f"task {key}")
        tasks.pop(key, None)
        tasks[key] = TaskItem(id=key, content=content, status=update.status)
    for key in facts.tasks_deleted:
        tasks.pop(key, None)
    return dict(list(tasks.items())[-MAX_TASKS_KEPT:])


_THING_FINISHED = re.compile(
    r"^(?P<thing>(?:\S+\s+){0,3}\S+?)\s+(?:is|are)\s+(?:now\s+|all\s+)?(?:sorted|done|finished|complete|"
    r"completed|fixed|working|shipped|merged)\b",
    re.I,
)


def _finishes(done: str, task: str) -> bool:
    """A completion that names the task: the same words ("Implemented the login form" /
    "implement the login form"), or the task's own opening ("Done: A" for "A in src/app.py")."""
    opening = done.strip().rstrip(".").lower()
    if similarity(task, done) >= SAME_TASK or (bool(opening) and task.lower().startswith(opening + " ")):
        return True
    # "Pathfinding is sorted" for "fighting with the enemy pathfinding": the thing the task is
    # about, said to be finished
    said = _THING_FINISHED.match(done.strip())
    if said is None:
        return False
    thing = said.group("thing")
    return distinctive_overlap(thing, task) and stems(thing) <= stems(task)


def _names(item: str, text: str) -> bool:
    """``text`` names tracker item ``item`` as a whole word ("spotter-dov", not "spotter-dov.3")."""
    return re.search(rf"(?<![\w.-]){re.escape(item)}(?![\w-]|\.\w)", text) is not None


def _task(
    old: ActiveContext, facts: ContextFacts, changes: _Changes, open_work: bool, closed: set[str], named: bool
) -> tuple[str, str, bool]:
    """(current task, earlier request not finished, the task was named as work to do: a request
    or a label (``named``: the new request in ``facts`` is), or the step stated as next)."""
    requests = [r for r in facts.requests if r.strip()]
    old_task = old.current_task
    new_task = clean_sentence(requests[-1], 400) if requests else ""
    failing = bool(facts.failures)
    if old_task and not new_task and any(_names(item, old_task) for item in closed):
        changes.add(f"Finished: {old_task}", [])  # the tracker item the task names was closed
        return "", old.earlier_request, False

    if (
        old_task
        and not failing
        and (facts.task_finished or any(_finishes(c, old_task) for c in facts.completions))
    ):
        # "Implemented the login form" closes "implement the login form": recorded already;
        # "closing this out" names no task: the task it finishes is recorded. A next step
        # stated beside it is what comes now ("Done: login. Next: password reset").
        if not any(_finishes(c, old_task) for c in facts.completions):
            changes.add(f"Finished: {old_task}", [])
        stated_next = [s for s in facts.next_steps if s.strip()]

        if not new_task and stated_next:
            return clean_sentence(stated_next[0], 400), old.earlier_request, True
        return new_task, old.earlier_request, named
    if new_task and old_task and not same(new_task, old_task):
        # Finished: something completed since the task was set (a commit, a closed issue, a
        # completed item, a fixed check, in this stretch or an earlier one) and no subtask of it
        # is still open.
        since = old.task_since
        signalled = bool(changes.added) or any(
            since is not None and c.timestamp >= since for c in changes.old
        )
        if signalled and not open_work and not failing:
            changes.add(f"Finished: {old_task}", [])
            return new_task, "", named
        return new_task, old_task, named  # replaced before any sign it was done: keep it in view
    if new_task:
        return new_task, old.earlier_request, named
    if not old_task and facts.source == "text" and facts.next_steps:
        # nothing else says what the work is; prose about work going on later replaces it
        return clean_sentence(facts.next_steps[0], 400), "", False
    return old_task, old.earlier_request, old.task_named


def _files_after(paths: list[str], facts: ContextFacts) -> list[str]:
    """``paths`` without removed files, moved ones under their new name."""
    removed = set(facts.files_removed)
    out: list[str] = []
    for path in paths:
        path = facts.files_moved.get(path, path)
        if path not in removed and path not in out:
            out.append(path)
    return out


def _kept_text(old: list[str], new: list[str], limit: int) -> list[str]:
    return _dedupe([*old, *(clean_sentence(t, 400) for t in new)])[-limit:]


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

        stated = facts.stated
        if stated is not None:
            facts = facts.combined(stated_fields.as_facts(stated))
        facts, named = _ongoing_work(oc, facts)
        task_list = _task_list(oc, facts)
        if facts.task_updates or facts.tasks_deleted:
            facts = facts.model_copy(update={"tasks": list(task_list.values())})
        titles = _item_titles(oc, facts)
        closed, completed = _completions(facts, changes, titles)
        fixes: list[str] = []
        blockers = _blockers(oc.blockers, facts, changes, request, fixes)
        if facts.task_finished and oc.current_task and not facts.failures:
            # the work is finished: what was stated as blocking it since it began is settled
            since = oc.task_since
            blockers = [
                b
                for b in blockers
                if not (b.stated and (since is None or b.since is None or b.since >= since))
            ]

        in_progress = _in_progress(oc, facts, closed, completed, titles)
        finished = [*facts.completions, *completed, *(c.subject for c in facts.commits)]
        next_steps = steps_left(oc.next_steps, facts, finished, closed, in_progress)
        task, earlier_request, task_named = _task(
            oc, facts, changes, bool(in_progress or next_steps), closed, named
        )

        next_steps = [s for s in next_steps if not (s.origin == "stated" and same(s.text, task))]
        last_step, earlier_steps = _steps(oc, facts)
        task_since = oc.task_since if task == oc.current_task and oc.current_task else request.now

        edited = list(reversed(facts.files_edited))
        read = list(reversed(facts.files_read))[:READ_FILES_KEPT]
        active_files = _files_after(
            _newest_first(edited, facts.files_mentioned, read, oc.active_files), facts
        )[:MAX_ACTIVE_FILES]
        if facts.commits or facts.clean_tree:
            uncommitted = list(reversed(facts.uncommitted))
        else:
            uncommitted = _newest_first(list(reversed(facts.uncommitted)), oc.uncommitted_files)
        if facts.verified:
            unverified = list(reversed(facts.unverified))
        else:
            unverified = _newest_first(list(reversed(facts.unverified)), oc.unverified_files)
        symbols = {path: list(names) for path, names in oc.file_symbols.items()}
        for path, names in facts.edited_symbols.items():
            symbols[path] = ([n for n in symbols.get(path, []) if n not in names] + names)[-8:]
        recent = [
            c.model_copy(update={"files": _files_after(c.files, facts)}) if c.files else c
            for c in changes.items[-10:]
        ]

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
                overview=_merge_text(pc.overview, facts.overview, replace=bool(facts.overview)),
                architecture=_merge_text(pc.architecture, facts.architecture, replace=False),
                recent_changes=recent,
            ),
            active_context=ActiveContext(
                current_task=task,
                active_files=active_files,
                active_decisions=_decisions(oc.active_decisions, facts),
                in_progress=in_progress,
                next_steps=next_steps,
                blockers=blockers,
                uncommitted_files=_files_after(uncommitted, facts)[:MAX_ACTIVE_FILES],
                unverified_files=_files_after(unverified, facts)[:MAX_ACTIVE_FILES],
                file_symbols={
                    facts.files_moved.get(p, p): symbols[p]
                    for p in symbols
                    if facts.files_moved.get(p, p) in active_files
                },
                gotchas=_kept_text(oc.gotchas, [*fixes, *(g.text for g in facts.gotchas)], MAX_GOTCHAS),
                notes=_kept_text(oc.notes, facts.notes, MAX_NOTES),
                last_step=last_step,
                earlier_steps=earlier_steps,
                branch=facts.branch or oc.branch,
                earlier_request=earlier_request if earlier_request != task else "",
                variables=facts.variables or oc.variables,
                item_titles=titles,
                task_list=task_list,
                removed_files=_newest_first(
                    [f"{old_path} -> {new}" for old_path, new in reversed(facts.files_moved.items())],
                    list(reversed(facts.files_removed)),
                    oc.removed_files,
                )[:MAX_REMOVED],
                checks=_newest_first(
                    [p for run in reversed(facts.commands) if run.kind != "vcs" for p in parts(run.check)],
                    oc.checks,
                )[:MAX_CHECKS],
                task_since=task_since if task else None,
                task_named=bool(task) and task_named,
            ),
        )
        if stated is not None:
            stated_fields.apply(state, stated, request.now)
        return MergeResult(
            state=state,
            merged_by=self.name,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
