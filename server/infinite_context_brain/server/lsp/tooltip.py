"""The status item's tooltip, rendered here once so the editor only shows it: the same figures
``status`` reports (the brain's size, its time as every surface writes it) and user text escaped
by the one Markdown escaping (``core.markdown``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from infinite_context_brain.core.clock import shown_time
from infinite_context_brain.core.markdown import escape_markdown

if TYPE_CHECKING:
    from infinite_context_brain.core.models import BudgetReport


def budget_tooltip(report: BudgetReport, meter: dict[str, Any], folder: str) -> str:
    """Markdown for the status item's hover (VS Code renders ``$(icon)``; user text cannot)."""
    lines = [f"**Infinite Context** · {escape_markdown(folder)}", ""]
    tokens, window = meter.get("contextTokens"), meter.get("contextWindow")
    if tokens is not None and window:
        lines.append(f"- Context: {tokens:,} / {window:,} tokens ({round(100 * tokens / window)}%)")
    else:
        lines.append("- Context: no live Claude Code session in this folder")
    memory = report.memory
    items = f", {memory.items} item{'s' if memory.items != 1 else ''}" if memory.items else ""
    lines.append(f"- Working memory: {memory.used:,} / {memory.budget:,} tokens{items}")
    if report.version > 0:
        lines.append(
            f"- Brain v{report.version} · saved {shown_time(report.last_checkpoint)} · "
            f"{report.state_tokens:,} / {report.token_cap:,} tokens · "
            f"merged by {escape_markdown(report.merged_by or '?')}"
        )
    else:
        lines.append("- No checkpoint yet: Checkpoint (in the menu) saves what you are working on")
    if report.refining:
        lines.append(f"- $(sync~spin) Refining with {escape_markdown(report.refining)}")
    if report.current_task:
        lines.append(f"- Current task: {escape_markdown(report.current_task)}")
    lines.append(f"- Store: {escape_markdown(report.store)}")
    lines += ["", "_Click for the menu: checkpoint, resume, history, rollback, settings, logs._"]
    return "\n".join(lines)
