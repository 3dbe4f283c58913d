"""Command-line flags checked by the shared argument rules (``core.params``), for argparse.

``Flag("MaxTokens")`` is an argparse ``type=``: the flag's text is checked against the rule of
that name, so ``--max-tokens 3`` is refused with ``argument --max-tokens: must be >= 50; pass an
integer >= 50, e.g. 2000`` (argparse names the flag as typed). The rule, and pydantic with it,
loads only when a flag is actually given: the CLI builds its parser on every start (the hooks
run through it) and the notebook extension registers its magics on ``load_ext``.
"""

from __future__ import annotations

from typing import Any

#: How many versions every surface lists when not told (MCP, language server, CLI, notebook, core):
#: twice the default kept history (``history_size`` 5), so a default listing shows all of it.
#: Here rather than in ``params`` so the CLI and the magics can show it without loading pydantic.
HISTORY_LIMIT_DEFAULT = 10


class Flag:
    """argparse ``type=`` following the rule ``core.params.<rule>``."""

    def __init__(self, rule: str) -> None:
        self.rule = rule
        self.__name__ = rule  # argparse's fallback message names it

    def __call__(self, text: str) -> Any:
        from . import params

        return params.parse_flag(getattr(params, self.rule), text)

    def __repr__(self) -> str:
        return f"Flag({self.rule!r})"
