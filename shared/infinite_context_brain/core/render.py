"""The resume text: the state as Markdown within a token budget, most important first.

Sections in priority order: current work (the task, the subtask in progress, the state of the
work as checks and commits show it, then the assistant's own last words), what is left, blockers,
Claude Code's summary at its latest compaction, the journal (checkpoint texts as written, newest
first), decisions and gotchas, files, recent changes, notebook variables, overview, architecture.

The budget is shared in two passes: first every section gets up to its share (so a long task list
cannot push the journal or the blockers out), then what is left goes to the sections in priority
order. Items are never cut mid-word; an item that does not fit whole is shortened only when it is
its section's first. Claude Code markup an older state may hold is removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from itertools import zip_longest

from .models import JournalEntry, NextStep, ProjectState
from .tokens import count_tokens
from .transcript.markup import strip_markup

MIN_ITEM_TOKENS = 12  # a shortened item below this says nothing
#: active files the resume lists (the state keeps more; the most relevant come first)
MAX_FILES_SHOWN = 12
#: open tracker items the resume lists with their titles; the rest by their ids
MAX_TRACKER_SHOWN = 6


#: where each next step was read, as the reader is told
STEP_ORIGIN = {
    "stated": "",
    "tasks": " (task list)",
    "plan": " (the assistant's plan)",
    "tracker": " (tracker)",
    "summary": " (Claude Code's summary)",
    "request": " (earlier request)",
}


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else "never"


def _clean(text: str) -> str:
    return " ".join(strip_markup(text).split()) if "<" in text else " ".join(text.split())


def _cut(text: str, limit: int) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters."""
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + " …"


def _lines(text: str) -> str:
    """``text`` with its line breaks kept (indented under a list item), markup removed."""
    text = strip_markup(text) if "<" in text else text
    rows = [" ".join(row.split()) for row in text.strip().splitlines()]
    return "\n  ".join(row for row in rows if row)


@dataclass
class _Section:
    title: str
    share: float
    items: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def _files(paths: list[str]) -> str:
    return ", ".join(f"`{p}`" for p in paths)


def _current_work(state: ProjectState) -> _Section:
    ac = state.active_context
    work = _Section("## Current work", 0.22)
    work.items.append(f"**Task:** {_clean(ac.current_task) or '_none recorded_'}")
    if ac.in_progress:
        work.items.append(f"**In progress:** {_clean(ac.in_progress)}")
    if ac.branch:
        work.items.append(f"**Branch:** `{ac.branch}`")
    if ac.uncommitted_files:
        work.items.append(f"**Not committed yet:** {_files(ac.uncommitted_files)}")
    if ac.unverified_files:
        work.items.append(f"**Edited since the last passing test or build:** {_files(ac.unverified_files)}")
    if ac.earlier_request:
        work.items.append(f"**Earlier request (not finished):** {_clean(ac.earlier_request)}")
    if ac.removed_files:
        work.items.append(f"**Removed or moved lately:** {_files(ac.removed_files)}")
    if ac.checks:
        work.items.append(f"**Checks used here:** {_files([_cut(c, 70) for c in ac.checks])}")
    if ac.last_step:
        work.items.append(f"**The assistant's last words:** {_clean(ac.last_step)}")
    return work


def _step(step: NextStep) -> str:
    return f"- {_clean(step.text)}{STEP_ORIGIN.get(step.origin, '')}"


def _same_start(one: str, other: str, chars: int = 80) -> bool:
    """Whether two texts open alike (a step may hold a shortened copy of the summary's part)."""
    return " ".join(one.split())[:chars] == " ".join(other.split())[:chars]


def _journal_item(entry: JournalEntry) -> str:
    origin = f" ({entry.origin})" if entry.origin else ""
    return f"- {_when(entry.at)}{origin}: {_lines(entry.text)}"


def _sections(state: ProjectState, missing: set[str]) -> list[_Section]:
    pc, ac = state.project_context, state.active_context
    sections = [_current_work(state)]
    summary = state.compact_summary
    said = summary.next_step if summary is not None else ""
    if ac.next_steps:
        items: list[str] = []
        folded: list[NextStep] = []  # a long tracker listing past its first items: by ids, below
        trackers = 0
        for s in ac.next_steps:
            trackers += s.origin == "tracker"
            if s.origin == "tracker" and trackers > MAX_TRACKER_SHOWN:
                folded.append(s)
            elif s.origin == "summary" and said and _same_start(s.text, said):
                # the summary's next step whole (up to its part's length), here rather than twice
                items.append(f"- {_lines(_cut(said, 700))}{STEP_ORIGIN['summary']}")
            else:
                items.append(_step(s))
        if folded:  # the room goes to what else is known
            ids = (s.text.split(":", 1)[0] if ":" in s.text[:40] else _cut(s.text, 40) for s in folded)
            items.append(f"- {len(folded)} more open tracker items: {', '.join(ids)}")
        sections.append(_Section("## Next steps", 0.16, items))
    if ac.blockers:
        items = []
        for b in reversed(ac.blockers):
            head = f"- {_clean(b.check)}" if b.stated else f"- `{b.check}` failed"
            if b.detail:
                head += f": {_clean(b.detail)}"
            if b.tried:
                head += " — tried: " + "; ".join(_clean(t) for t in b.tried)
            items.append(head)
        sections.append(_Section("## Blockers (failing, not fixed yet)", 0.08, items))
    if summary is not None and (summary.current_work or summary.next_step):
        items = []
        # commits since it: its current work and next step are history, shown in brief
        work, step = (300, 250) if summary.settled else (900, 700)
        if summary.current_work:
            items.append(f"**Current work then:** {_lines(_cut(summary.current_work, work))}")
        listed = any(s.origin == "summary" and _same_start(s.text, summary.next_step) for s in ac.next_steps)
        if summary.next_step and not listed:  # said once: the next steps come first
            items.append(f"**Its next step:** {_lines(_cut(summary.next_step, step))}")
        items += [f"- Worked out: {_cut(_clean(s), 220)}" for s in summary.solved]
        items += [f"- Error and fix: {_cut(_clean(e), 220)}" for e in summary.errors_and_fixes]
        when = f" ({summary.written_at[:16].replace('T', ' ')} UTC)" if summary.written_at else ""
        later = ", before the commits since" if summary.settled else ""
        sections.append(
            _Section(f"## Claude Code's summary at its last compaction{when}{later}", 0.14, items)
        )
    if state.journal:
        sections.append(
            _Section(
                "## Journal: checkpoint notes as written (newest first)",
                0.16,
                [_journal_item(e) for e in reversed(state.journal)],
            )
        )
    pending = [d for d in ac.active_decisions if d.status == "pending"]
    decided = [d for d in ac.active_decisions if d.status == "decided"]
    if pending or decided or ac.gotchas or ac.notes:
        items = [
            f"- [open] {_clean(d.question)}" + (" (you asked the user)" if d.from_assistant else "")
            for d in pending
        ]
        gotchas = [f"- [gotcha] {_clean(g)}" for g in reversed(ac.gotchas)]
        decisions = []
        for d in reversed(decided):
            asked = d.question.endswith("?") and d.decision
            text = (
                f"{_clean(d.question)} → {_clean(d.decision or '')}"
                if asked
                else _clean(d.decision or d.question)
            )
            decisions.append(f"- [decided] {text}" + (f" — because {_clean(d.reason)}" if d.reason else ""))
        # newest first from both lists in turn: a run of long gotchas never crowds out every decision
        items += [item for pair in zip_longest(decisions, gotchas) for item in pair if item is not None]
        items += [f"- [note] {_clean(n)}" for n in reversed(ac.notes)]
        sections.append(_Section("## Decisions, gotchas and notes", 0.16, items))
    if ac.active_files:
        if all(p in missing for p in ac.active_files):  # another checkout, or a replay: say it once
            title = "## Active files (none of them on disk here)"
            items = [f"- `{p}`" for p in ac.active_files]
        else:
            title = "## Active files"
            items = [f"- `{p}`" + (" (not on disk here)" if p in missing else "") for p in ac.active_files]
        items = items[:MAX_FILES_SHOWN]
        for index, path in enumerate(ac.active_files[:MAX_FILES_SHOWN]):
            names = ac.file_symbols.get(path)
            if names:
                items[index] += " — " + ", ".join(f"`{n}`" for n in reversed(names))
        sections.append(_Section(title, 0.08, items))
    if pc.recent_changes:
        sections.append(
            _Section(
                "## Recent changes (newest first)",
                0.06,
                [
                    f"- {_when(c.timestamp)}: {_clean(c.summary)}"
                    + (f" ({', '.join(c.files[:6])})" if c.files else "")
                    for c in reversed(pc.recent_changes)
                ],
            )
        )
    if ac.earlier_steps:
        before = [_clean(step) for step in reversed(ac.earlier_steps)]
        sections.append(
            _Section(
                "## The assistant's steps before its last words",
                0.04,
                [f"- {step if len(step) <= 240 else step[:239] + '…'}" for step in before],
            )
        )
    if ac.variables:
        sections.append(_Section("## Notebook variables", 0.03, [f"- {v}" for v in ac.variables]))
    if pc.overview:
        sections.append(_Section("## Overview", 0.03, [_clean(pc.overview)]))
    if pc.architecture:
        sections.append(_Section("## Architecture", 0.03, [_clean(pc.architecture)]))
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


class _Budget:
    def __init__(self, total: int, used: int) -> None:
        self.total, self.used = total, used

    def take(self, line: str) -> bool:
        cost = count_tokens(line)
        if self.used + cost > self.total:
            return False
        self.used += cost
        return True

    def fill(self, section: _Section, limit: int) -> None:
        """Add ``section``'s next items while they fit in ``limit`` tokens of the section and
        in the total; stop at the first that does not."""
        title_cost = count_tokens(section.title)
        spent = sum(count_tokens(i) for i in section.kept) + (title_cost if section.kept else 0)
        for item in section.items[len(section.kept) :]:
            cost = count_tokens(item) + (0 if section.kept else title_cost)
            room = min(self.total - self.used, limit - spent)
            if cost <= room:
                section.kept.append(item)
                self.used += cost
                spent += cost
                continue
            short = _shorten(item, room - title_cost) if not section.kept else None
            if short is not None:
                section.kept.append(short)
                cost = count_tokens(short) + title_cost
                self.used += cost
                spent += cost
            break


def render_within(state: ProjectState, max_tokens: int | None, missing: set[str] | None = None) -> str:
    """Markdown of ``state`` in at most ``max_tokens`` tokens (all of it when None)."""
    meta = state.meta
    header = (
        f"# Project context (v{meta.version} · {_when(meta.last_checkpoint)} · merged by {meta.merged_by})"
    )
    total = max_tokens if max_tokens is not None else 10**9
    budget = _Budget(total, count_tokens(header))
    sections = _sections(state, missing or set())
    for section in sections:  # first pass: each section up to its share
        budget.fill(section, int(section.share * total))
    for section in sections:  # second pass: what is left, in priority order
        budget.fill(section, total)
    out: list[str] = [header]
    for section in sections:
        if section.kept:
            out += ["", section.title, *section.kept]
            left = len(section.items) - len(section.kept)
            more = f"- … {left} older entr{'y' if left == 1 else 'ies'} (resume with a larger budget)"
            if left and section.title.startswith("## Journal") and budget.take(more):
                out.append(more)
    return "\n".join(out).rstrip() + "\n"


def render_markdown(state: ProjectState) -> str:
    """The whole state as Markdown (no budget)."""
    return render_within(state, None)
