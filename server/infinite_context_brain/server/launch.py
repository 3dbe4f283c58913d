"""The ``infinite-context`` console script (and ``python -m infinite_context_brain.server``).

A deferred hook (``hook post-tool-use``, ``hook stop``, ``hook session-end``; Claude Code runs the
first after every tool call) is handled here with the standard library only: the payload is
queued (``spool``) and the process exits, without loading argparse, pydantic or the core. The
other hooks (SessionStart, PreCompact) go straight to their handler, without argparse and the
CLI. Everything else goes to ``cli.main``, which gives hooks the same treatment.
"""

from __future__ import annotations

import os
import sys

from .claude_code.spool import DEFERRED, EVENTS


def _hook(argv: list[str]) -> tuple[str, str | None] | None:
    """(sub-command, --project) when ``argv`` is exactly a hook call Claude Code makes."""
    project = None
    if len(argv) == 4 and argv[0] == "--project":
        project, argv = argv[1], argv[2:]
    if len(argv) != 2 or argv[0] != "hook":
        return None
    name = EVENTS.get(argv[1], argv[1])
    return (name, project) if name in EVENTS.values() else None


def _log_error(name: str, message: str) -> None:
    import json
    from datetime import UTC, datetime

    now = datetime.now(UTC).isoformat(timespec="milliseconds")
    line = {
        "ts": now,
        "level": "error",
        "logger": "infinite_context_brain.hooks",
        "msg": f"hook {name}: {message}",
    }
    sys.stderr.write(json.dumps(line) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    fast = _hook(args)
    if fast is not None and fast[0] not in DEFERRED:  # SessionStart, PreCompact: no argparse
        from pathlib import Path

        from infinite_context_brain.core.logs import level_from_env, setup_logging

        from .claude_code.hooks import run_hook

        setup_logging(level_from_env())
        return run_hook(fast[0], sys.stdin.buffer.read(), None if fast[1] is None else Path(fast[1]))
    if fast is not None:
        from .claude_code.spool import defer

        name, project = fast
        if project is not None:
            project = os.path.abspath(project)
        raw = sys.stdin.buffer.read()
        try:
            problem = defer(name, raw, project)
        except OSError:  # no queue (data folder not writable, disk full): run the hook here
            from pathlib import Path

            from infinite_context_brain.core.logs import level_from_env, setup_logging

            from .claude_code.hooks import run_hook

            setup_logging(level_from_env())
            return run_hook(name, raw, None if project is None else Path(project), queue=False)
        if problem is not None:
            _log_error(name, problem)
        return 0
    from .cli.main import main as cli_main

    return cli_main(args)
