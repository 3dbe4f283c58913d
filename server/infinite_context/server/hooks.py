"""Claude Code hook handlers: ``infinite-context hook <event>`` with Claude Code's JSON on stdin.

A hook must never break the user's session: every handler exits 0, logs its own failures to
stderr as JSON lines, and writes nothing to stdout but the JSON Claude Code documents for that
event. Each handler parses the payload and makes one core call.

The project is the one Claude Code works in: ``--project`` / ``PROJECT_ROOT`` if set, else
``CLAUDE_PROJECT_DIR``, else the payload's ``cwd``.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger("infinite_context.hooks")

Handler = Callable[[dict[str, Any], Path | None], dict[str, Any] | None]


def _project_dir(payload: dict[str, Any], explicit: Path | None) -> Path | None:
    if explicit is not None or os.environ.get("PROJECT_ROOT"):
        return explicit  # Settings reads PROJECT_ROOT itself
    for candidate in (os.environ.get("CLAUDE_PROJECT_DIR"), payload.get("cwd")):
        if isinstance(candidate, str) and candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


def _settings(payload: dict[str, Any], explicit: Path | None) -> Any:
    from infinite_context.core.config import load_settings

    return load_settings(project_root=_project_dir(payload, explicit))


def post_tool_use(payload: dict[str, Any], project: Path | None) -> dict[str, Any] | None:
    from infinite_context.core.transcript.record import record_observation

    obs = record_observation(_settings(payload, project), payload)
    log.debug("observation stored", extra={"tool_use_id": obs.tool_use_id, "tokens": obs.tokens})
    return None


HANDLERS: dict[str, Handler] = {
    "post-tool-use": post_tool_use,
}
#: Claude Code's event names, accepted as well as ours
ALIASES = {"PostToolUse": "post-tool-use"}


def run_hook(event: str, raw: bytes, project: Path | None = None) -> int:
    """Run one hook on the raw stdin bytes; always returns 0."""
    name = ALIASES.get(event, event)
    handler = HANDLERS.get(name)
    if handler is None:
        log.error("unknown hook event %r; known: %s", event, ", ".join(sorted(HANDLERS)))
        return 0
    import orjson

    try:
        payload = orjson.loads(raw) if raw.strip() else None
    except orjson.JSONDecodeError as exc:
        log.error("hook %s: stdin is not JSON (%s); nothing done", name, exc)
        return 0
    if not isinstance(payload, dict):
        log.error("hook %s: expected a JSON object on stdin from Claude Code; nothing done", name)
        return 0
    try:
        output = handler(payload, project)
    except Exception as exc:  # a hook never breaks the session; the log says what went wrong
        from infinite_context.core.errors import InfiniteContextError

        if isinstance(exc, InfiniteContextError):
            log.error("hook %s: %s", name, exc.message, extra={"fix": exc.fix, "code": exc.code})
        else:
            log.exception("hook %s failed", name)
        return 0
    if output is not None:
        sys.stdout.write(orjson.dumps(output).decode() + "\n")
    return 0
