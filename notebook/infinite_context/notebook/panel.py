"""``%ctx_status``: an ipywidgets panel (token budget bar, version, last checkpoint, merger, and
the history with a rollback button per row). Where no widget front end exists (terminal
IPython), the same facts print as text."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infinite_context.core.brain import ProjectBrain
    from infinite_context.core.models import StatusReport


def _has_widget_frontend() -> bool:
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def status_lines(status: StatusReport) -> list[str]:
    if not status.has_state:
        return [f"No checkpoint yet for {status.project_root} (store {status.store})."]
    refining = f" (refining with {status.refining})" if status.refining else ""
    return [
        f"Project {status.project_root} · store {status.store}",
        f"Version {status.version} · merged by {status.merged_by}{refining} · last checkpoint "
        f"{status.last_checkpoint:%Y-%m-%d %H:%M:%S} UTC",
        f"State {status.state_tokens:,} of {status.token_cap:,} tokens · "
        f"current task: {status.current_task or '-'}",
    ]


def show_status(brain: ProjectBrain, call: Callable[[Callable[[], Any]], Any]) -> None:
    status = brain.status()
    history = brain.history(10) if status.has_state else []
    if not _has_widget_frontend():
        print("\n".join(status_lines(status)))
        for h in history:
            print(f"  v{h.version}  {h.timestamp:%Y-%m-%d %H:%M}  {h.merged_by:<12} {h.first_line}")
        return
    import ipywidgets as w
    from IPython.display import display

    message = w.HTML()
    budget = w.FloatProgress(
        value=min(status.state_tokens, status.token_cap),
        min=0,
        max=max(status.token_cap, 1),
        description="budget",
        bar_style="danger" if status.state_tokens > 0.9 * status.token_cap else "info",
    )
    facts = w.HTML("<br>".join(status_lines(status)))

    def rollback_to(version: int) -> Callable[[Any], None]:
        def clicked(_button: Any) -> None:
            result = call(lambda: brain.rollback(version=version))
            message.value = f"✔ restored v{version} as v{result.version}" if result else "✘ rollback failed"

        return clicked

    rows = []
    for h in history:
        button = w.Button(description=f"roll back to v{h.version}", layout=w.Layout(width="170px"))
        button.on_click(rollback_to(h.version))
        label = w.HTML(f"v{h.version} · {h.timestamp:%Y-%m-%d %H:%M} · {h.merged_by} · {h.first_line}")
        rows.append(w.HBox([button, label]))
    panel = w.VBox([w.HTML("<b>infinite-context</b>"), budget, facts, *rows, message])
    display(panel)
