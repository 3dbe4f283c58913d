"""The deterministic offline merger: no key, no network, always available.

It is a merge, not an append. From the new context it takes the files that exist in the
project, decisions (deciding pending questions they answer), open questions, the current task
and completions; a finished task moves into ``recent_changes`` (a ring of 10); overview and
architecture persist unless the context states new ones; the result is fitted under the token
cap. Same input, same output (the clock is part of the request).
"""

from __future__ import annotations

import time

from ..models import ActiveContext, Decision, Meta, ProjectContext, ProjectState, RecentChange
from ..tokens import count_tokens
from .base import MergeRequest, MergeResult
from .extract import Extracted, clean_sentence, extract, find_files, similarity
from .integrity import MAX_ACTIVE_FILES, existing_files, fit_to_cap

ANSWERS_QUESTION = 0.2  # word overlap above which a decision settles a pending question
SAME_TASK = 0.25  # overlap above which a completion is taken to finish the current task
DUPLICATE = 0.7


def _dedupe(items: list[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        if item and not any(similarity(item, kept) >= DUPLICATE or item == kept for kept in out):
            out.append(item)
    return out


def _merge_text(old: str, new: list[str], *, replace: bool) -> str:
    if not new:
        return old
    text = " ".join(_dedupe(new))
    if replace or not old:
        return text
    if similarity(old, text) >= DUPLICATE or text in old:
        return old
    return f"{old} {text}"


def _decisions(old: list[Decision], found: Extracted) -> list[Decision]:
    decisions = [d.model_copy() for d in old]
    for text in _dedupe(found.decisions):
        pending = [d for d in decisions if d.status == "pending"]
        best = max(pending, key=lambda d: similarity(d.question, text), default=None)
        if best is not None and similarity(best.question, text) >= ANSWERS_QUESTION:
            best.status = "decided"
            best.decision = text
            continue
        if any(
            d.decision == text or similarity(d.decision or d.question, text) >= DUPLICATE for d in decisions
        ):
            continue
        decisions.append(Decision(question=_topic(text), status="decided", decision=text))
    for question in _dedupe(found.questions):
        if not any(similarity(d.question, question) >= DUPLICATE for d in decisions):
            decisions.append(Decision(question=question, status="pending"))
    return decisions


def _topic(decision: str) -> str:
    """A short question-like title for a decision stated without a question."""
    words = decision.rstrip(".").split()
    return clean_sentence(" ".join(words[:12]), 120)


def _task_and_change(old: ActiveContext, found: Extracted) -> tuple[str, str | None]:
    """(new current task, summary for recent_changes or None)."""
    new_task = found.tasks[-1] if found.tasks else None
    completions = _dedupe(found.completions)
    old_task = old.current_task
    finished = bool(old_task) and (
        any(similarity(old_task, c) >= SAME_TASK for c in completions)
        or (bool(completions) and new_task is not None and similarity(new_task, old_task) < DUPLICATE)
    )
    parts: list[str] = []
    if finished and not any(similarity(old_task, c) >= SAME_TASK for c in completions):
        parts.append(f"Finished: {old_task}")
    parts.extend(completions)
    summary = clean_sentence(" ".join(parts), 600) if parts else None
    if new_task is None:
        new_task = "" if finished else old_task
        if not new_task and not completions and found.prose:
            # A context with no cues at all (a pasted request): its first sentence is the task.
            new_task = found.prose[0]
    return new_task, summary


class OfflineMerger:
    name = "offline"

    def merge(self, request: MergeRequest) -> MergeResult:
        started = time.perf_counter()
        old = request.old or ProjectState.empty(request.session_id)
        found = extract(request.context, request.project_root)
        warnings: list[str] = []

        explicit, _ = existing_files(
            [p.strip() for chunk in found.explicit_files for p in chunk.replace(";", ",").split(",")],
            request.project_root,
        )
        mentioned = list(dict.fromkeys([*explicit, *found.files]))
        kept_old, dropped = existing_files(old.active_context.active_files, request.project_root)
        if dropped:
            warnings.append(f"dropped active files that no longer exist: {', '.join(dropped[:10])}")
        active_files = list(dict.fromkeys([*mentioned, *kept_old]))[:MAX_ACTIVE_FILES]

        task, change_summary = _task_and_change(old.active_context, found)
        recent = [c.model_copy() for c in old.project_context.recent_changes]
        if change_summary:
            # The files this change talks about; an explicit "Files:" list when it names none.
            change_files = find_files(change_summary, request.project_root) or explicit
            recent.append(
                RecentChange(timestamp=request.now, summary=change_summary, files=change_files[:10])
            )

        overview_new = found.overview
        if not old.project_context.overview and not overview_new and request.old is None and found.prose:
            overview_new = found.prose[:1]

        state = ProjectState(
            meta=Meta(
                version=old.meta.version,
                last_checkpoint=request.now,
                last_access=request.now,
                session_id=request.session_id,
                token_budget_used=request.token_count
                if request.token_count is not None
                else count_tokens(request.context),
                merged_by=self.name,
            ),
            project_context=ProjectContext(
                overview=_merge_text(
                    old.project_context.overview, overview_new, replace=bool(found.overview)
                ),
                architecture=_merge_text(old.project_context.architecture, found.architecture, replace=False),
                recent_changes=recent[-10:],
            ),
            active_context=ActiveContext(
                current_task=task,
                active_files=active_files,
                active_decisions=_decisions(old.active_context.active_decisions, found),
            ),
        )
        state = fit_to_cap(state, request.token_cap)
        return MergeResult(
            state=state,
            merged_by=self.name,
            duration_ms=(time.perf_counter() - started) * 1000,
            warnings=tuple(warnings),
        )
