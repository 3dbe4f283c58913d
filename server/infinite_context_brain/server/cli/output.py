"""How the CLI writes: the output format, Markdown renderings, and error messages that name the
flag the user typed.

Format: ``--format`` wins, then ``--json``; otherwise ``text`` (rich) on a terminal and ``md``
(plain Markdown, no padding, no wrapping, no cropping) when stdout is a pipe or a file, so
``infinite-context resume > brain.md`` or ``| pbcopy`` gives Markdown an assistant can read.

Errors: the core names its arguments as the Python API spells them (``token_count``); the
CLI user typed ``--tokens``. ``flag_message`` swaps the name for the flag as typed on the
command line (``-m`` or ``--message``, whichever was used).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from infinite_context_brain.core.markdown import escape_markdown, table_cell

if TYPE_CHECKING:
    from infinite_context_brain.core.errors import InfiniteContextError
    from infinite_context_brain.core.models import DiffResult, HistorySummary, StatusReport

#: core argument name -> the command-line spellings that carry it (first: the one to name when
#: none of them was typed, e.g. an empty stdin).
FLAGS: dict[str, tuple[str, ...]] = {
    "context": ("-m", "--message", "--file", "-"),
    "content": ("-m", "--message", "-"),
    "token_count": ("--tokens",),
    "max_tokens": ("--max-tokens",),
    "steps": ("--steps",),
    "version": ("--version",),
    "limit": ("--limit",),
    "offset": ("--offset",),
    "from_version": ("FROM",),
    "to_version": ("TO",),
    "summary": ("--summary",),
    "tags": ("--tag",),
    "importance": ("--importance",),
    "target": ("--target",),
    "budget": ("--budget",),
    "tool_use_id": ("TOOL_USE_ID",),
}


def output_format(args: argparse.Namespace) -> str:
    chosen = getattr(args, "format", None)
    if chosen:
        return str(chosen)
    if getattr(args, "json", False):
        return "json"
    return "text" if sys.stdout.isatty() else "md"


def typed_flag(field: str, argv: Sequence[str]) -> str | None:
    """The flag the user typed for the core argument ``field`` (None: not a CLI argument)."""
    spellings = FLAGS.get(field.split(".")[0])
    if spellings is None:
        return None
    typed = {a.split("=", 1)[0] for a in argv}
    return next((s for s in spellings if s in typed), spellings[0])


def flag_message(exc: InfiniteContextError, argv: Sequence[str]) -> str:
    field = getattr(exc, "field", None)
    message = exc.message
    if isinstance(field, str) and message.startswith(f"{field}:"):
        flag = typed_flag(field, argv)
        if flag is not None:
            return f"argument {flag}:{message[len(field) + 1 :]}"
    return message


def _cell(text: str) -> str:
    return table_cell(text)


def md_escape(text: str) -> str:
    """User text kept literal in Markdown that people also read raw (a pipe, a file): the one
    escaping every surface uses (``core.markdown``): ``<T>`` is not taken for an HTML tag
    (``\\<T>``); names like ``API_KEY`` are left as written."""
    return escape_markdown(text)


def history_md(items: list[HistorySummary]) -> str:
    if not items:
        return "No history yet.\n"
    rows = ["| version | time (UTC) | merged by | current task / change |", "|---:|---|---|---|"]
    rows += [
        f"| {h.version} | {h.timestamp:%Y-%m-%d %H:%M:%S} | {_cell(h.merged_by)} | {_cell(h.first_line)} |"
        for h in items
    ]
    return "\n".join(rows) + "\n"


def status_md(report: StatusReport) -> str:
    from ..text import status_text

    head, *rest = status_text(report).splitlines()
    return "\n".join([md_escape(head), "", *(f"- {md_escape(line)}" for line in rest)]) + "\n"


def diff_md(result: DiffResult) -> str:
    from ..text import diff_text

    if not result.changes:
        return diff_text(result) + "\n"
    fence = "````" if "```" in result.unified else "```"
    return f"{fence}diff\n{result.unified.rstrip()}\n{fence}\n"
