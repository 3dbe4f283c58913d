"""What is left: the next steps, each with where it was read, kept until done.

Origins and how a newer reading replaces an older one:
* ``tasks``: the pending items of the assistant's task list (TodoWrite, TaskCreate/TaskUpdate);
  the list as it stands now replaces the earlier one;
* ``plan``: the assistant's latest stated plan ("Next steps:", "Remaining:", a numbered plan);
  a newer plan replaces the older;
* ``tracker``: open items a tracker listing showed (``bd ready``, ``gh issue list``); a newer
  listing replaces the older, and a closed item goes at once;
* ``summary``: Claude Code's pending tasks and next step at its latest compaction; replaced by the
  next compaction's;
* ``stated``: next steps a checkpoint's text names; added. Structured ``next_steps`` (the MCP
  ``checkpoint`` tool) replace the whole list instead (``stated.py``).
Any step a completion of this merge settles (same work in other words) goes, whatever its origin
but ``tasks`` (the task list says itself what is done).
"""

from __future__ import annotations

import re

from ..facts import ContextFacts
from ..models import NextStep, NextStepOrigin
from .extract import clean_sentence
from .wording import overlap, same, settles_text, stems

#: display and de-duplication order: the first of two same steps is kept
ORDER: tuple[NextStepOrigin, ...] = ("stated", "tasks", "summary", "plan", "tracker", "request")
STEP_CHARS = 300


def _restates(step: NextStep, kept: NextStep) -> bool:
    """A step read from another source that names the same work ("Task #2 [pending]: Filter stale
    sessions in `findSessionsForWorktree` — ..." and the task list's "Filter stale sessions in
    findSessionsForWorktree"): most of the shorter one's words, and several of them."""
    if step.origin == kept.origin:
        return False
    shared = stems(step.text) & stems(kept.text)
    return len(shared) >= 3 and overlap(step.text, kept.text) >= 0.75


def _new(texts: list[str], origin: NextStepOrigin) -> list[NextStep]:
    return [NextStep(text=clean_sentence(t, STEP_CHARS), origin=origin) for t in texts if t.strip()]


def next_steps(
    old: list[NextStep], facts: ContextFacts, finished: list[str], closed: set[str], in_progress: str
) -> list[NextStep]:
    """The steps left after this merge. ``finished``: completions of this merge (texts);
    ``closed``: tracker items closed; ``in_progress``: the subtask now in progress (not a step)."""
    steps = [s.model_copy() for s in old if s.origin not in facts.settled]

    def replace(origin: NextStepOrigin, texts: list[str]) -> None:
        nonlocal steps
        steps = [s for s in steps if s.origin != origin] + _new(texts, origin)

    if facts.tasks is not None:
        replace("tasks", [t.content for t in facts.tasks if t.status == "pending"])
    if facts.compact_summary is not None:
        # Claude Code's pending tasks are the newer, whole account of what an earlier plan left
        steps = [s for s in steps if s.origin != "plan"]
    if facts.plan is not None:
        replace("plan", facts.plan)
    if facts.open_items is not None:
        replace("tracker", facts.open_items)

    summary = facts.compact_summary
    if summary is not None:
        replace("summary", [*summary.pending, *([summary.next_step] if summary.next_step else [])])
    steps += _new(facts.next_steps, "stated")

    def open_(step: NextStep) -> bool:
        if step.origin == "tasks":
            return True
        if any(re.search(rf"(?<![\w.-]){re.escape(item)}(?![\w-]|\.\w)", step.text[:60]) for item in closed):
            return False
        return not any(settles_text(done, step.text) for done in finished)

    kept: list[NextStep] = []
    for origin in ORDER:
        for step in steps:
            if step.origin != origin or not open_(step):
                continue
            if in_progress and same(step.text, in_progress):
                continue
            if not any(same(step.text, k.text) or _restates(step, k) for k in kept):
                kept.append(step)
    return kept
