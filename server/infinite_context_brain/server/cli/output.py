"""How the CLI writes: the output format, Markdown renderings, and error messages that name the
flag the user typed.

Format: ``--format`` wins, then ``--json``; otherwise ``text`` (rich) on a terminal and ``md``
(plain Markdown, no padding, no wrapping, no cropping) when stdout is a pipe or a file, so
``infinite-context resume > brain.md`` or ``| pbcopy`` gives Markdown an assistant can read.

Errors: the core names its arguments as the Python API spells them (``token_count``); the
CLI user typed ``--tokens``. ``flag_message`` swaps the name for the flag as typed on the
command line (``-m`` or ``--message``, whichever was used); a text argument (``context``,
``content``) is named by the source it came from (``cli/source.py``): ``TEXT``, ``-m``,
``--file`` or stdin, never a flag that was not used.
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
#: none of them was typed).
FLAGS: dict[str, tuple[str, ...]] = {
    "text": ("TEXT",),
    "message": ("-m", "--message"),
    "file": ("--file",),
    "stdin": ("stdin",),
    "transcript": ("FILE", "--file"),
    "source": ("FILE",),
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


#: the core's names for a command's text, whichever source (``args.text_source``) carried it
TEXT_FIELDS = ("context", "content")


def typed_flag(field: str, argv: Sequence[str], text_source: str | None = None) -> str | None:
    """The flag the user typed for the core argument ``field`` (None: not a CLI argument)."""
    name = field.split(".")[0]
    if name in TEXT_FIELDS and text_source is not None:
        name = text_source
    spellings = FLAGS.get(name)
    if spellings is None:
        return None
    typed = {a.split("=", 1)[0] for a in argv}
    return next((s for s in spellings if s in typed), spellings[0])


def flag_message(exc: InfiniteContextError, argv: Sequence[str], text_source: str | None = None) -> str:
    field = getattr(exc, "field", None)
    message = exc.message
    if isinstance(field, str) and message.startswith(f"{field}:"):
        flag = typed_flag(field, argv, text_source)
        rest = message[len(field) + 1 :]
        if flag == "stdin":
            return f"the text piped in (stdin):{rest}"
        if flag is not None:
            return f"argument {flag}:{rest}"
    return message


def _cell(text: str) -> str:
    return table_cell(text)


def md_escape(text: str) -> str:
    """User text kept literal in Markdown that people also read raw (a pipe, a file): the one
    escaping every surface uses (``core.markdown``): ``<T>`` is not taken for an HTML tag
    (``\\<T>``); names like ``API_KEY`` are left as written."""
    return escape_markdown(text)


def history_md(items: list[HistorySummary]) -> str:
    from ..text import history_change

    if not items:
        return "No history yet.\n"
    rows = ["| version | time (UTC) | merged by | what changed |", "|---:|---|---|---|"]
    rows += [
        f"| {h.version} | {h.timestamp:%Y-%m-%d %H:%M} | {_cell(h.merged_by)} | {_cell(history_change(h))} |"
        for h in items
    ]
    return "\n".join(rows) + "\n"


def status_md(report: StatusReport) -> str:
    from ..text import status_text

    head, *rest = status_text(report).splitlines()
    return "\n".join([md_escape(head), "", *(f"- {md_escape(line)}" for line in rest)]) + "\n"


def diff_md(result: DiffResult) -> str:
    """The diff as a list: a field a bullet (its name in bold), a changed item a bullet under it."""
    from ..text import ITEM_MARKS, diff_head, field_items

    if not result.fields:
        return diff_head(result) + "\n"
    lines = [f"**{diff_head(result)}**", ""]
    for d in result.fields:
        label = f"**{md_escape(d.label)}**"
        if d.before is not None or d.after is not None:
            lines.append(
                f"- {label}: {md_escape(d.before or '(empty)')} -> {md_escape(d.after or '(empty)')}"
            )
            continue
        lines.append(f"- {label}")
        lines += [
            f"  - {ITEM_MARKS[mark]}: {md_escape(text)}" if mark else f"  - {text}"
            for mark, text in field_items(d)
        ]
    return "\n".join(lines) + "\n"
