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


def _share(value: float | None) -> str:
    return "" if value is None else f" (-{round(100 * value)}%)"


def proxy_tooltip(p: dict[str, Any]) -> str:
    """Markdown for the live-proxy item's hover, from the ``infiniteContext/proxyStatus`` payload:
    the figures, how terminals are routed, then the problem and its fix (or that it was stopped)."""
    lines = ["**Infinite Context · live endless mode**", ""]
    if p["running"]:
        lines.append(
            f"- Proxy {escape_markdown(p['url'] or '?')} → {escape_markdown(p['upstream'] or '?')} "
            f"(pid {p['pid'] or '?'})"
        )
        if p["transformed"] == 0:
            lines.append("- No request through it yet: start `claude` in a new integrated terminal")
        else:
            lines.append(
                f"- Last request: tool results {p['lastBefore']:,} → {p['lastAfter']:,} tokens"
                f"{_share(p['lastSavedShare'])}"
            )
            lines.append(
                f"- In total: {p['savedTokens']:,} tokens saved, {p['tokensBefore']:,} → "
                f"{p['tokensAfter']:,}{_share(p['savedShare'])}"
            )
            lines.append(
                f"- {p['transformed']} of {p['requests']} requests transformed, {p['epochs']} sweep(s), "
                f"last overhead {p['lastOverheadMs']} ms"
            )
        setting = "terminals" if p["enabled"] else "enabled"
        lines.append(
            "- New integrated terminals: Claude Code goes through it (ANTHROPIC\\_BASE\\_URL)"
            if p["terminalEnv"]
            else f"- Integrated terminals: not routed (infiniteContext.endless.{setting} is off)"
        )
    elif p.get("starting"):
        lines.append("- Starting the live proxy…")
    elif p.get("stopped"):
        lines.append("- Stopped (Start Live Proxy in this item's menu starts it again)")
    elif not p.get("problem"):
        lines.append("- The live proxy is not running")
    if p.get("problem"):
        if p["running"]:
            lines.append("")
        lines.append(f"$(warning) {escape_markdown(p['problem'])}")
        if p.get("fix"):
            lines += ["", f"Fix: {escape_markdown(p['fix'])}"]
    action = "stop the proxy" if p["running"] else "start the proxy"
    lines += ["", f"_Click to {action}, open its log or settings._"]
    return "\n".join(lines)
