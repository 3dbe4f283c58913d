"""Plain-text renderings of core results, shared by the MCP tools and the CLI."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from infinite_context_brain.core.models import (
    CheckpointResult,
    DiffResult,
    FieldDiff,
    HistorySummary,
    RollbackResult,
    StatusReport,
)
from infinite_context_brain.core.text import squeeze as squeeze  # re-exported: replies use it

#: an item of a list in a diff line (a journal entry: its first words); a changed item says
#: what changed in it, so it gets more room
DIFF_ITEM_CHARS = 100
DIFF_CHANGE_CHARS = 200

if TYPE_CHECKING:
    from infinite_context_brain.core.memory.model import CompactionReport, MemoryItem
    from infinite_context_brain.core.transcript.meter import ContextMeter
    from infinite_context_brain.core.transcript.service import CompressReport, TranscriptStats


def _count(n: int, noun: str) -> str:
    """``1 active file``, ``2 active files``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def checkpoint_text(r: CheckpointResult) -> str:
    if not r.changed:  # the warnings say why: nothing new
        return "\n".join(f"Not saved: {w}" for w in r.warnings) or f"Not saved: version {r.version} holds it"
    text = (
        f"Checkpoint saved as version {r.version} (merged by {r.merged_by}, {r.duration_ms:.1f} ms, "
        f"state {r.state_tokens}/{r.token_cap} tokens)."
    )
    if r.refining:
        text += f" Refining with {r.refining} in the background."
    return "\n".join([text, *[f"Warning: {w}" for w in r.warnings]])


def status_text(r: StatusReport) -> str:
    if not r.has_state:
        head = "No checkpoint yet for this project."
    else:
        when = r.last_checkpoint.strftime("%Y-%m-%d %H:%M UTC") if r.last_checkpoint else "never"
        head = (
            f"Version {r.version}, last checkpoint {when}, merged by {r.merged_by}; "
            f"state {r.state_tokens}/{r.token_cap} tokens; {_count(r.active_files, 'active file')}, "
            f"{_count(r.pending_decisions, 'pending decision')}, {_count(r.recent_changes, 'recent change')}."
        )
    session = f"session {r.session_id}" if r.session_id else "no session id yet: made at the first checkpoint"
    lines = [head, f"Project: {r.project_root} ({session})", f"Store: {r.store}"]
    if r.merge_plan is not None:
        lines.append(f"Merge plan: {r.merge_plan.describe()}")
    if r.refining:
        lines.append(f"Refining with {r.refining} (a new version appears when it is done)")
    if r.current_task:
        lines.append(f"Current task: {r.current_task}")
    if r.history_versions:
        lines.append(f"History keeps versions: {', '.join(map(str, r.history_versions))}")
    if r.lock_holder:
        lines.append(f"Session held by: {r.lock_holder}")
    if r.memory is not None:
        m = r.memory
        lines.append(
            f"Working memory: {m.used:,}/{m.budget:,} tokens ({m.percent}%), {m.items} items, "
            f"{m.pinned} pinned, {m.archived} archived; auto-compact "
            f"{'at ' + format(m.threshold, '.0%') if m.auto_compact else 'off'} (budget from {m.source})"
        )
    lines += [f"Warning: {w}" for w in r.warnings]
    return "\n".join(lines)


def history_change(h: HistorySummary) -> str:
    """What a version changed, for a history row."""
    if h.changes is None:
        return f"{h.first_line or 'no task'} (the version before is no longer kept)"
    return h.changes or "no change"


def history_text(items: list[HistorySummary]) -> str:
    """``v7 · 2026-01-02 12:02 · offline · task: X; next steps +2; journal +1``, newest first."""
    if not items:
        return "No history yet."
    return "\n".join(
        f"v{h.version} · {h.timestamp:%Y-%m-%d %H:%M} · {h.merged_by} · {history_change(h)}" for h in items
    )


def rollback_text(r: RollbackResult) -> str:
    return f"Rolled back: version {r.version} now holds the content of version {r.restored_from}."


def diff_head(r: DiffResult) -> str:
    """The first line of a diff: which versions, or that they hold the same content."""
    if not r.fields:
        return f"Versions {r.from_version} and {r.to_version} hold the same content."
    return f"Version {r.from_version} -> {r.to_version}:"


#: how a list item changed: its mark in text, its word in Markdown
ITEM_MARKS = {"+": "added", "-": "removed", "~": "changed"}


def field_items(d: FieldDiff) -> list[tuple[str, str]]:
    """A list or mapping field's changes as ``(mark, text)``: ``("+", "write the docs")``, each
    cut to its limit; ``("", "reordered")`` for a new order."""
    items = [("+", squeeze(item, DIFF_ITEM_CHARS)) for item in d.added]
    items += [("-", squeeze(item, DIFF_ITEM_CHARS)) for item in d.removed]
    items += [("~", squeeze(item, DIFF_CHANGE_CHARS)) for item in d.changed]
    return [*items, ("", "reordered")] if d.reordered else items


def field_text(d: FieldDiff) -> str:
    """``task: A -> B`` (values whole); ``journal: + Done: fixed the bug``; a field with more
    than one changed item gets a line per item."""
    if d.before is not None or d.after is not None:
        return f"{d.label}: {d.before or '(empty)'} -> {d.after or '(empty)'}"
    lines = [f"{mark} {text}".strip() for mark, text in field_items(d)]
    if len(lines) == 1:
        return f"{d.label}: {lines[0]}"
    return "\n".join([f"{d.label}:", *(f"  {line}" for line in lines)])


def diff_text(r: DiffResult) -> str:
    return "\n".join([diff_head(r), *(field_text(d) for d in r.fields)])


def meter_text(m: ContextMeter) -> str:
    if m.context_tokens is None:
        return f"No usage yet in {m.transcript} (window {m.context_window:,} tokens)."
    lines = [
        f"Context: {m.context_tokens:,} of {m.context_window:,} tokens ({m.percent:.1f}%), "
        f"model {m.model or '?'}",
        f"Compactions so far: {len(m.compactions)}",
    ]
    if m.by_category:
        lines.append(
            "Since the last compaction (estimated): "
            + ", ".join(f"{k} {v:,}" for k, v in list(m.by_category.items())[:8])
        )
    return "\n".join(lines)


def compress_text(r: CompressReport) -> str:
    saved = r.tool_tokens_before - r.tool_tokens_after
    return (
        f"Wrote {r.output}: {r.lines_changed} of {r.lines} lines changed (tool results only); "
        f"tool output {r.tool_tokens_before:,} -> {r.tool_tokens_after:,} tokens ({saved:,} saved). "
        f"{r.source} is untouched."
    )


def stats_tables(s: TranscriptStats) -> list[Any]:
    """rich renderables: the meter, then what endless mode would save per tool."""
    from rich.table import Table

    head = Table(title=f"Context of {s.transcript}", show_header=False)
    current = f"{s.context_tokens:,}" if s.context_tokens is not None else "no usage yet"
    head.add_row("context now", f"{current} of {s.context_window:,} tokens ({s.model or '?'})")
    for c in s.compactions:
        measured = f"{c.measured:,}" if c.measured else "?"
        pre = f"{c.pre_tokens:,}" if c.pre_tokens else "?"
        head.add_row(
            f"compaction at line {c.line}",
            f"{c.trigger or '?'}: Claude Code {pre}, meter {measured}",
        )
    for category, tokens in list(s.by_category.items())[:10]:
        head.add_row(f"  {category}", f"{tokens:,} (estimated)")
    if s.malformed_lines:
        head.add_row("malformed lines skipped", str(s.malformed_lines))

    tools = Table(title="Endless mode: tool outputs replaced by observations")
    for column in ("tool", "results", "replaced", "tokens before", "tokens after", "saved"):
        tools.add_column(column, justify="left" if column == "tool" else "right")
    for t in s.per_tool:
        saved = 1 - t.tokens_after / t.tokens_before if t.tokens_before else 0.0
        tools.add_row(
            t.tool,
            str(t.results),
            str(t.replaced),
            f"{t.tokens_before:,}",
            f"{t.tokens_after:,}",
            f"{saved:.0%}",
        )
    tools.add_row(
        "all",
        str(sum(t.results for t in s.per_tool)),
        str(s.replaced),
        f"{s.tool_tokens_before:,}",
        f"{s.tool_tokens_after:,}",
        f"{s.reduction:.0%}",
        style="bold",
    )
    tools.caption = f"transform {s.transform_ms:.0f} ms; fallbacks {s.fallbacks}"
    return [head, tools]


def memory_line(item: MemoryItem) -> str:
    flags = "".join(f for f, on in (("📌", item.pinned), ("🗄", item.archived), ("∑", item.promoted)) if on)
    text = squeeze(item.live_text, 160)
    tags = f" [{', '.join(item.tags)}]" if item.tags else ""
    return f"- {item.id} {flags}(imp {item.importance}, {item.tokens} tok){tags}: {text}"


def compaction_text(r: CompactionReport | None) -> str:
    """What a compaction did and how to get things back; empty when none ran."""
    if r is None:
        return ""
    text = (
        f"\n\nCompacted {r.before_tokens:,} -> {r.after_tokens:,} tokens (target {r.target_tokens:,}): "
        f"{len(r.promoted)} summarised, {len(r.deduplicated)} duplicates and {len(r.evicted)} evicted to the "
        "archive (query with archived=true; update with restore=true brings one back)."
    )
    if r.missing_summary:
        text += f" Items without a summary (add one with `update`): {', '.join(r.missing_summary[:20])}"
    return text
