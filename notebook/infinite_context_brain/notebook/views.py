"""What the magics display: mime bundles with a rendered form and a plain-text form, never a
Python repr.

``%resume`` shows the brain and returns it: ``x = %resume`` gives a real ``ProjectState``
(a subclass, ``ResumedState``). Its ``_ipython_display_`` shows the resume Markdown, except in
the cell that just showed it: so a bare ``%resume`` does not show it twice (the magic's display,
then IPython's ``Out[]``), and ``x`` on its own in a later cell shows it again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import PrivateAttr

from infinite_context_brain.core.markdown import display_markdown, escape_markdown
from infinite_context_brain.core.models import ProjectState

if TYPE_CHECKING:
    from infinite_context_brain.core.models import HistorySummary


def markdown_bundle(markdown: str, plain: str | None = None) -> dict[str, str]:
    """A Markdown display whose user text stays literal, with the plain text for terminals."""
    return {"text/markdown": display_markdown(markdown), "text/plain": markdown if plain is None else plain}


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

    def _ipython_display_(self) -> None:
        if self._shown_in is not None and self._shown_in == _execution_count():
            return  # the magic showed it in this very cell
        self.show()


def history_bundle(items: list[HistorySummary]) -> dict[str, str]:
    rows = ["| version | time (UTC) | merged by | current task |", "|---:|---|---|---|"]
    plain = []
    for h in items:
        task = escape_markdown(h.first_line).replace("\n", " ")
        rows.append(
            f"| {h.version} | {h.timestamp:%Y-%m-%d %H:%M:%S} | {escape_markdown(h.merged_by)} | {task} |"
        )
        plain.append(f"v{h.version}  {h.timestamp:%Y-%m-%d %H:%M:%S}  {h.merged_by:<14} {h.first_line}")
    return {"text/markdown": "\n".join(rows), "text/plain": "\n".join(plain)}


def display_bundle(data: dict[str, Any]) -> None:
    from IPython.display import display

    display(data, raw=True)
