"""The ``infinite-context`` console script (and ``python -m infinite_context_brain.server``).

A hook call Claude Code makes (``hook <event>``, optionally after ``--project DIR``) goes straight
to ``claude_code.command``, without argparse: a deferred hook (PostToolUse after every tool call,
Stop, SessionEnd) queues its payload with the standard library only and exits. Everything else
goes to ``cli.main``, whose ``hook`` command takes the same path.
"""

from __future__ import annotations

import sys

from .claude_code import command


def _hook(argv: list[str]) -> tuple[str, str | None] | None:
    """(event, --project) when ``argv`` is exactly a hook call Claude Code makes."""
    project = None
    if len(argv) == 4 and argv[0] == "--project":
        project, argv = argv[1], argv[2:]
    if len(argv) != 2 or argv[0] != "hook":
        return None
    return argv[1], project


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    fast = _hook(args)
    if fast is not None:
        return command.run(fast[0], sys.stdin.buffer.read(), fast[1])
    from .cli.main import main as cli_main

    return cli_main(args)
