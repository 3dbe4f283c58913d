"""What the magics display: mime bundles with a rendered form and a plain-text form, never a
Python repr.

``%resume`` shows the brain and returns it: ``x = %resume`` gives a real ``ProjectState``
(a subclass, ``ResumedState``). Its ``_ipython_display_`` shows the resume Markdown, except in
the cell that already showed it: so a bare ``%resume`` does not show it twice (the magic's
display, then IPython's ``Out[]``), and ``x`` on its own in a later cell shows it again.

Outputs are saved in the notebook and travel with it (nbconvert, GitHub): ``LocalPaths`` writes
the machine's folders (the project, the home folder, the store's folder) as names, so an
exported notebook holds no absolute local path.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import PrivateAttr

from infinite_context_brain.core.clock import shown_time
from infinite_context_brain.core.markdown import display_markdown, table_cell
from infinite_context_brain.core.models import ProjectState

if TYPE_CHECKING:
    from infinite_context_brain.core.brain import ProjectBrain
    from infinite_context_brain.core.models import HistorySummary


@dataclass(frozen=True)
class LocalPaths:
    """Absolute folders of this machine and what a saved output says instead, longest first."""

    replacements: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, brain: ProjectBrain) -> LocalPaths:
        root = brain.project.root
        pairs = [(str(root), root.name or str(root))]
        home = Path.home()
        store = brain.store.display_url
        if store.startswith("sqlite://"):  # a folder outside home: "sqlite://…/brain.db"
            folder = Path(store[len("sqlite://") :]).parent
            if not folder.is_relative_to(home):
                pairs.append((str(folder), "…"))
        pairs.append((str(home), "~"))
        pairs = [(path, name) for path, name in pairs if len(path) > 1]
        return cls(tuple(sorted(pairs, key=lambda pair: -len(pair[0]))))

    def hide(self, text: str) -> str:
        for path, name in self.replacements:
            text = text.replace(path, name)
        return text


def markdown_bundle(markdown: str, plain: str | None = None) -> dict[str, str]:
    """A Markdown display whose user text stays literal and whose lines stay lines, with the plain
    text for terminals."""
    return {"text/markdown": display_markdown(markdown), "text/plain": markdown if plain is None else plain}


def in_kernel() -> bool:
    """A Jupyter kernel (a front end renders widgets and Markdown), not terminal IPython."""
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _execution_count() -> int | None:
    from IPython import get_ipython

    shell = get_ipython()
    return getattr(shell, "execution_count", None) if shell is not None else None


class ResumedState(ProjectState):
    """The ``ProjectState`` that ``%resume`` returns (see the module docstring)."""

    _resume_markdown: str = PrivateAttr("")
    _shown_in: int | None = PrivateAttr(None)

    @classmethod
    def of(cls, state: ProjectState, markdown: str) -> ResumedState:
        fields = {name: getattr(state, name) for name in type(state).model_fields}
        resumed = cls.model_construct(_fields_set=set(state.model_fields_set), **fields)
        resumed._resume_markdown = markdown
        return resumed

    def show(self) -> None:
        from IPython.display import display

        display(markdown_bundle(self._resume_markdown), raw=True)
        self._shown_in = _execution_count()

    @property
    def was_shown(self) -> bool:
        return self._shown_in is not None

    def _ipython_display_(self) -> None:
        if self._shown_in is None or self._shown_in != _execution_count():
            self.show()  # (else the magic showed it in this very cell)


def history_bundle(items: list[HistorySummary]) -> dict[str, str]:
    rows = ["| version | time | merged by | current task |", "|---:|---|---|---|"]
    plain = []
    for h in items:
        when = shown_time(h.timestamp)
        rows.append(f"| {h.version} | {when} | {table_cell(h.merged_by)} | {table_cell(h.first_line)} |")
        plain.append(f"v{h.version}  {when}  {h.merged_by:<14} {h.first_line}")
    return {"text/markdown": "\n".join(rows), "text/plain": "\n".join(plain)}


def display_bundle(data: dict[str, Any]) -> None:
    from IPython.display import display

    display(data, raw=True)
