"""The resume text: the state as Markdown within a token budget, most important first.

Sections in priority order: current work (the task, the subtask in progress, what is not
committed yet, the last step, what is left), blockers, files, decisions, recent changes, notebook
variables, overview, architecture. Within the budget each section keeps as many whole items as
fit, highest priority first; an item is never cut mid-word, and a section that does not fit at
all is left out rather than the higher ones shortened. Claude Code markup that an older state may
hold is removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from .models import ProjectState
from .tokens import count_tokens
from .transcript.markup import strip_markup

MIN_ITEM_TOKENS = 12  # a shortened item below this says nothing


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else "never"


def _clean(text: str) -> str:
    return " ".join(strip_markup(text).split()) if "<" in text else " ".join(text.split())


@dataclass
class _Section:
    title: str
    items: list[str] = field(default_factory=list)


def _sections(state: ProjectState, missing: set[str]) -> list[_Section]:
    pc, ac = state.project_context, state.active_context
    work = _Section("## Current work")
    work.items.append(f"**Task:** {_clean(ac.current_task) or '_none recorded_'}")
    if ac.branch:
        work.items.append(f"**Branch:** `{ac.branch}`")
    if ac.in_progress:
        work.items.append(f"**In progress:** {_clean(ac.in_progress)}")
    if ac.uncommitted_files:
        work.items.append(f"**Not committed yet:** {', '.join(f'`{p}`' for p in ac.uncommitted_files)}")
    if ac.last_step:
        work.items.append(f"**Last step:** {_clean(ac.last_step)}")
    if ac.earlier_steps:
        work.items.append(f"**Before that:** {' / '.join(_clean(s) for s in reversed(ac.earlier_steps))}")
    if ac.earlier_request:
        work.items.append(f"**Earlier request (not finished):** {_clean(ac.earlier_request)}")
    sections = [work]
    if ac.next_steps:
        sections.append(_Section("## Next steps", [f"- {_clean(s)}" for s in ac.next_steps]))
    if ac.blockers:
        sections.append(
            _Section(
                "## Blockers (failing, not fixed yet)",
                [
                    f"- {_clean(b.check)}"
                    if b.stated
                    else f"- `{b.check}` failed" + (f": {_clean(b.detail)}" if b.detail else "")
                    for b in reversed(ac.blockers)
                ],
            )
        )
    if ac.active_files:
        if all(p in missing for p in ac.active_files):  # another checkout, or a replay: say it once
            files = _Section(
                "## Active files (none of them on disk here)", [f"- `{p}`" for p in ac.active_files]
            )
        else:
            files = _Section(
                "## Active files",
                [f"- `{p}`" + (" (not on disk here)" if p in missing else "") for p in ac.active_files],
            )
        sections.append(files)
    pending = [d for d in ac.active_decisions if d.status == "pending"]
    decided = [d for d in ac.active_decisions if d.status == "decided"]
    if pending or decided:
        items = [
            f"- [open] {_clean(d.question)}" + (" (you asked the user)" if d.from_assistant else "")
            for d in pending
        ]
        for d in reversed(decided):
            asked = d.question.endswith("?") and d.decision
            items.append(
                f"- [decided] {_clean(d.question)} → {_clean(d.decision or '')}"
                if asked
                else f"- [decided] {_clean(d.decision or d.question)}"
            )
        sections.append(_Section("## Decisions", items))
    if pc.recent_changes:
        sections.append(
            _Section(
                "## Recent changes (newest first)",
                [
                    f"- {_when(c.timestamp)}: {_clean(c.summary)}"
                    + (f" ({', '.join(c.files[:6])})" if c.files else "")
                    for c in reversed(pc.recent_changes)
                ],
            )
        )
    if ac.variables:
        sections.append(_Section("## Notebook variables", [f"- {v}" for v in ac.variables]))
    if pc.overview:
        sections.append(_Section("## Overview", [_clean(pc.overview)]))
    if pc.architecture:
        sections.append(_Section("## Architecture", [_clean(pc.architecture)]))
    return sections


def _shorten(item: str, tokens: int) -> str | None:
    """``item`` cut at a word boundary to at most ``tokens`` (None when too little is left)."""
    if tokens < MIN_ITEM_TOKENS:
        return None
    words = item.split(" ")
    low, high = 1, len(words)
    best: str | None = None
    while low <= high:  # the longest prefix of whole words that fits
        mid = (low + high) // 2
        candidate = " ".join(words[:mid]) + " …"
        if count_tokens(candidate) <= tokens:
            best, low = candidate, mid + 1
        else:
            high = mid - 1
    return best


def render_within(state: ProjectState, max_tokens: int | None, missing: set[str] | None = None) -> str:
    """Markdown of ``state`` in at most ``max_tokens`` tokens (all of it when None)."""
    meta = state.meta
    header = (
        f"# Project context (v{meta.version} · {_when(meta.last_checkpoint)} · merged by {meta.merged_by})"
    )
    budget = max_tokens if max_tokens is not None else 10**9
    used = count_tokens(header)
    out: list[str] = [header]
    for section in _sections(state, missing or set()):
        title_cost = count_tokens(section.title)
        kept: list[str] = []
        for item in section.items:
            cost = count_tokens(item)
            room = budget - used - title_cost * (not kept)
            if cost <= room:
                kept.append(item)
                used += cost
                continue
            short = _shorten(item, room) if not kept else None
            if short is not None:
                kept.append(short)
                used += count_tokens(short)
            break
        if kept:
            used += title_cost
            out += ["", section.title, *kept]
    return "\n".join(out).rstrip() + "\n"


def render_markdown(state: ProjectState) -> str:
    """The whole state as Markdown (no budget)."""
    return render_within(state, None)
