"""Plain-text renderings of core results, shared by the MCP tools and the CLI."""

from __future__ import annotations

from infinite_context.core.models import (
    CheckpointResult,
    DiffResult,
    HistorySummary,
    RollbackResult,
    StatusReport,
)


def checkpoint_text(r: CheckpointResult) -> str:
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
            f"state {r.state_tokens}/{r.token_cap} tokens; {r.active_files} active files, "
            f"{r.pending_decisions} pending decisions, {r.recent_changes} recent changes."
        )
    lines = [head, f"Project: {r.project_root} (session {r.session_id})", f"Store: {r.store}"]
    if r.refining:
        lines.append(f"Refining with {r.refining} (a new version appears when it is done)")
    if r.current_task:
        lines.append(f"Current task: {r.current_task}")
    if r.history_versions:
        lines.append(f"History keeps versions: {', '.join(map(str, r.history_versions))}")
    if r.lock_holder:
        lines.append(f"Session held by: {r.lock_holder}")
    lines += [f"Warning: {w}" for w in r.warnings]
    return "\n".join(lines)


def history_text(items: list[HistorySummary]) -> str:
    if not items:
        return "No history yet."
    return "\n".join(
        f"v{h.version}  {h.timestamp:%Y-%m-%d %H:%M:%S}  {h.merged_by:<14} {h.first_line}" for h in items
    )


def rollback_text(r: RollbackResult) -> str:
    return f"Rolled back: version {r.version} now holds the content of version {r.restored_from}."


def diff_text(r: DiffResult) -> str:
    if not r.changes:
        return f"Versions {r.from_version} and {r.to_version} hold the same content."
    return r.unified
