"""The resume text: the state as Markdown, in the seed's section order, within a token budget."""

from __future__ import annotations

from datetime import datetime

from .merge.integrity import fit_to_cap
from .models import ProjectState
from .tokens import count_tokens


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else "never"


def render_markdown(state: ProjectState) -> str:
    pc, ac, meta = state.project_context, state.active_context, state.meta
    lines = [
        f"# Project context (v{meta.version} · {_when(meta.last_checkpoint)} · merged by {meta.merged_by})",
        "",
    ]
    if pc.overview:
        lines += ["## Overview", pc.overview, ""]
    if pc.architecture:
        lines += ["## Architecture", pc.architecture, ""]
    lines += ["## Current task", ac.current_task or "_none recorded_", ""]
    if ac.active_files:
        lines += ["## Active files", *[f"- `{path}`" for path in ac.active_files], ""]
    if pc.recent_changes:
        lines.append("## Recent changes (newest first)")
        for change in reversed(pc.recent_changes):
            files = f" ({', '.join(change.files[:6])})" if change.files else ""
            lines.append(f"- {_when(change.timestamp)}: {change.summary}{files}")
        lines.append("")
    pending = [d for d in ac.active_decisions if d.status == "pending"]
    decided = [d for d in ac.active_decisions if d.status == "decided"]
    if pending or decided:
        lines.append("## Decisions")
        lines += [f"- [pending] {d.question}" for d in pending]
        for d in decided:
            asked = d.question.endswith("?") and d.decision
            lines.append(
                f"- [decided] {d.question} → {d.decision}"
                if asked
                else f"- [decided] {d.decision or d.question}"
            )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def render_within(state: ProjectState, max_tokens: int | None) -> str:
    """Markdown of ``state`` trimmed (oldest, least important first) to ``max_tokens``."""
    text = render_markdown(state)
    if max_tokens is None or count_tokens(text) <= max_tokens:
        return text
    cap = max(200, int(max_tokens * 1.2))
    while cap >= 100:
        text = render_markdown(fit_to_cap(state, cap))
        if count_tokens(text) <= max_tokens:
            return text
        cap = int(cap * 0.8)
    # Tiny budgets: keep the heading and the current task, cut the rest.
    words = render_markdown(fit_to_cap(state, 100)).split(" ")
    while words and count_tokens(" ".join(words)) > max_tokens:
        words = words[: max(1, len(words) * 4 // 5)] if len(words) > 1 else []
    return " ".join(words) + " …\n" if words else ""
