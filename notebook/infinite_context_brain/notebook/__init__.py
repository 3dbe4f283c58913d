"""IPython extension: ``%load_ext infinite_context_brain.notebook``.

Magics: ``%checkpoint`` / ``%%checkpoint``, ``%resume``, ``%ctx_status``, ``%ctx_history``,
``%rollback``. They share the project brain of the notebook's folder with Claude Code, the CLI
and the editor.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from .magics import ContextMagics

_MAGICS: ContextMagics | None = None


def load_ipython_extension(ip: InteractiveShell) -> None:
    global _MAGICS
    from .magics import ContextMagics

    if _MAGICS is not None:  # %reload_ext: unhook the old instance first
        unload_ipython_extension(ip)
    _MAGICS = ContextMagics(ip)
    ip.register_magics(_MAGICS)
    ip.events.register("pre_run_cell", _MAGICS.recorder.pre_run_cell)
    ip.events.register("post_run_cell", _MAGICS.post_run_cell)


def unload_ipython_extension(ip: InteractiveShell) -> None:
    global _MAGICS
    if _MAGICS is None:
        return
    for event, callback in (
        ("pre_run_cell", _MAGICS.recorder.pre_run_cell),
        ("post_run_cell", _MAGICS.post_run_cell),
    ):
        with contextlib.suppress(ValueError):
            ip.events.unregister(event, callback)
    _MAGICS.close()
    _MAGICS = None
