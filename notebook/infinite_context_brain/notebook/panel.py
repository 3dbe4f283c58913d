"""``%ctx_status``: an ipywidgets panel (state-size bar with its numbers, version, last checkpoint,
merger, and the history with a rollback button per row).

Rollback asks first (a Restore / Cancel row), then writes, then redraws the panel from the
store: the new version is marked current, its button and the button of the version it copies
are disabled (restoring either again would only push older versions out of the bounded
history). A failure shows its reason and fix in the panel itself, in the cell, not in a log.

Every display is one mime bundle with static fallbacks: the widget view for a live front end,
``text/html`` for an exported notebook (nbconvert, GitHub), ``text/plain`` for terminal IPython.
All user text is escaped (a task about ``List<T>`` shows ``List<T>``); times are written as
every surface writes them (the header's last checkpoint is the top row's time, a rollback's too),
and local folders by name (``views.LocalPaths``: saved outputs hold no absolute path).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from infinite_context_brain.core.clock import shown_time
from infinite_context_brain.core.errors import InfiniteContextError
from infinite_context_brain.core.flags import HISTORY_LIMIT_DEFAULT

from .views import LocalPaths, in_kernel

if TYPE_CHECKING:
    from infinite_context_brain.core.brain import ProjectBrain
    from infinite_context_brain.core.models import HistorySummary, StatusReport


def status_lines(status: StatusReport, paths: LocalPaths) -> list[str]:
    if not status.has_state:
        return [paths.hide(f"No checkpoint yet for {status.project_root} (store {status.store}).")]
    refining = f" (refining with {status.refining})" if status.refining else ""
    return [
        paths.hide(f"Project {status.project_root} · store {status.store}"),
        f"Version {status.version} · merged by {status.merged_by}{refining} · "
        f"last checkpoint {shown_time(status.last_checkpoint)}",
        f"State {status.state_tokens:,} of {status.token_cap:,} tokens "
        f"({_percent(status)}%) · current task: {status.current_task or '-'}",
    ]


def _percent(status: StatusReport) -> int:
    return round(100 * status.state_tokens / status.token_cap) if status.token_cap else 0


def history_line(h: HistorySummary) -> str:
    return f"v{h.version} · {shown_time(h.timestamp)} · {h.merged_by} · {h.first_line or '(no task)'}"


def same_as_current(h: HistorySummary, current: HistorySummary | None) -> bool:
    """``h`` is the current version, or the version the current one restored."""
    if current is None:
        return False
    return h.version == current.version or current.merged_by == f"rollback:v{h.version}"


def static_bundle(status: StatusReport, history: list[HistorySummary], paths: LocalPaths) -> dict[str, str]:
    """``text/plain`` and ``text/html`` forms of the panel (no widgets needed)."""
    lines = status_lines(status, paths)
    current = history[0] if history else None
    plain = [*lines, *(f"  {history_line(h)}" + (" (current)" if h is current else "") for h in history)]
    rows = "".join(
        f"<li>{html.escape(history_line(h))}{' <b>(current)</b>' if h is current else ''}</li>"
        for h in history
    )
    body = "<br>".join(html.escape(line) for line in lines)
    return {
        "text/plain": "\n".join(plain),
        "text/html": f"<div><b>infinite-context</b><br>{body}"
        + (f"<ul>{rows}</ul>" if rows else "")
        + "</div>",
    }


class StatusPanel:
    """The live panel. Buttons call ``ask`` / ``confirm`` / ``cancel``; tests drive the same
    methods through ``Button.click()`` and read the widgets' state."""

    def __init__(self, brain: ProjectBrain) -> None:
        import ipywidgets as w

        self.brain = brain
        self.paths = LocalPaths.of(brain)
        self.pending: int | None = None
        self.message = w.HTML()
        self.bar = w.FloatProgress(min=0, description="state", layout=w.Layout(width="300px"))
        self.numbers = w.Label()
        self.facts = w.HTML()
        self.rows = w.VBox()
        self.restore = w.Button(description="Restore", button_style="warning", icon="undo")
        self.cancel_button = w.Button(description="Cancel")
        self.question = w.HTML()
        self.confirm_box = w.HBox(
            [self.question, self.restore, self.cancel_button], layout=w.Layout(display="none")
        )
        self.restore.on_click(lambda _b: self.confirm())
        self.cancel_button.on_click(lambda _b: self.cancel())
        self.buttons: dict[int, Any] = {}
        self.widget = w.VBox(
            [
                w.HTML("<b>infinite-context</b>"),
                w.HBox([self.bar, self.numbers]),
                self.facts,
                self.rows,
                self.confirm_box,
                self.message,
            ]
        )
        self.status: StatusReport | None = None
        self.handle: Any = None  # the display, updated after a rollback (static fallbacks too)
        self.history: list[HistorySummary] = []
        self.refresh()

    # ---- drawing --------------------------------------------------------------------------
    def refresh(self) -> None:
        import ipywidgets as w

        status = self.brain.status()
        history = self.brain.history(HISTORY_LIMIT_DEFAULT) if status.has_state else []
        self.status, self.history = status, history
        self.bar.max = max(status.token_cap, 1)
        self.bar.value = min(status.state_tokens, status.token_cap)
        self.bar.bar_style = "danger" if status.state_tokens > 0.9 * status.token_cap else "info"
        self.numbers.value = f"{status.state_tokens:,} / {status.token_cap:,} tokens ({_percent(status)}%)"
        self.facts.value = "<br>".join(html.escape(line) for line in status_lines(status, self.paths))
        current = history[0] if history else None
        rows, self.buttons = [], {}
        for h in history:
            same = same_as_current(h, current)
            label = (
                "current" if h is current else ("same as current" if same else f"roll back to v{h.version}")
            )
            button = w.Button(description=label, disabled=same, layout=w.Layout(width="170px"))
            button.on_click(lambda _b, version=h.version: self.ask(version))
            self.buttons[h.version] = button
            rows.append(w.HBox([button, w.HTML(html.escape(history_line(h)))]))
        self.rows.children = rows

    def bundle(self) -> dict[str, Any]:
        assert self.status is not None
        data = dict(self.widget._repr_mimebundle_() or {})
        data.update(static_bundle(self.status, self.history, self.paths))
        return data

    # ---- the rollback flow ----------------------------------------------------------------
    def ask(self, version: int) -> None:
        self.pending = version
        self.question.value = html.escape(
            f"Restore v{version}? It is written as a new version; history is kept."
        )
        self.confirm_box.layout.display = "flex"
        self.message.value = ""

    def cancel(self) -> None:
        self.pending = None
        self.confirm_box.layout.display = "none"

    def confirm(self) -> None:
        version, self.pending = self.pending, None
        self.confirm_box.layout.display = "none"
        if version is None:
            return
        try:
            result = self.brain.rollback(version=version)
        except InfiniteContextError as exc:
            fix = f"<br>fix: {html.escape(exc.fix)}" if exc.fix else ""
            self.message.value = (
                f"<span style='color:#c00'>✘ rollback failed: {html.escape(exc.message)}{fix}</span>"
            )
            return
        self.refresh()
        self.message.value = html.escape(f"✔ restored v{result.restored_from} as v{result.version}")
        if self.handle is not None:
            self.handle.update(self.bundle(), raw=True)


def show_status(brain: ProjectBrain) -> StatusPanel | None:
    """Display the panel (or its text in terminal IPython); the live panel is returned."""
    from IPython.display import display

    if not in_kernel():
        status = brain.status()
        history = brain.history(HISTORY_LIMIT_DEFAULT) if status.has_state else []
        display(static_bundle(status, history, LocalPaths.of(brain)), raw=True)
        return None
    panel = StatusPanel(brain)
    panel.handle = display(panel.bundle(), raw=True, display_id=True)
    return panel
