"""A command hook: ``infinite-context hook <event>`` with Claude Code's JSON on stdin.

The one entry for command hooks, from the console script's fast path (``launch``) and from the
CLI alike. A deferred event (``events``: PostToolUse, Stop, SessionEnd) is checked and queued
(``spool``) with the standard library only, then the process exits; the others, and a deferred
one whose queue cannot be written, run here (``hooks``, imported only then).

A hook never breaks the user's session: it always exits 0, logs its failures to stderr as JSON
lines, and writes nothing to stdout but the JSON Claude Code documents (``systemMessage`` for a
failure the user should hear about: ``failures``).
"""

from __future__ import annotations

import json
import os
import sys
import time

from infinite_context_brain.core.files import NotOwned

from . import events, failures, payloads, spool

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (this module is on every hook's path)
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any


def log_error(event: str, message: str, level: str = "error", **fields: Any) -> None:
    """One JSON log line on stderr, as ``logs.JsonLineFormatter`` writes them (without loading
    ``logging``)."""
    now = time.time()
    line = {
        "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}+00:00",
        "level": level,
        "logger": "infinite_context_brain.hooks",
        "msg": f"hook {event}: {message}",
        **fields,
    }
    sys.stderr.write(json.dumps(line, separators=(",", ":")) + "\n")


def say(message: str | None) -> None:
    """The hook's output: a message for the user, or nothing."""
    if message:
        sys.stdout.write(json.dumps({"systemMessage": message}) + "\n")


def _session(payload: dict[str, Any]) -> str | None:
    value = payload.get("session_id")
    return value if isinstance(value, str) and value else None


def _ask(event: events.Event, payload: dict[str, Any]) -> dict[str, Any] | None:
    """PostToolUse, Stop: the request for a checkpoint when the context nears its end
    (``checkpoint_ask``), the settings read from the environment as ``spool.data_dir`` reads its
    own."""
    # imported here: the other hooks' start-up goes without them
    from . import checkpoint_ask

    if event.name not in checkpoint_ask.ASKING:
        return None
    from infinite_context_brain.core.transcript import nudge

    try:
        share = nudge.share_from_environment()
    except nudge.NudgeSettingError as exc:
        log_error(event.command, str(exc))
        return None
    return checkpoint_ask.for_event(
        event.name, payload, share, nudge.window_from_environment(), spool.data_dir()
    )


def run(word: str, raw: bytes, project: str | None = None) -> int:
    """Run the hook ``word`` (our sub-command or Claude Code's event name) on stdin's ``raw``
    bytes; always returns 0."""
    event = events.find(word)
    if event is None:
        known = ", ".join(e.command for e in events.EVENTS)
        log_error(word, f"unknown hook event; known: {known}")
        return 0
    try:
        payload = payloads.parse(raw, cleaned=not event.deferred)
    except payloads.PayloadError as exc:
        log_error(event.command, str(exc))
        return 0
    missing = event.missing(payload)
    if missing is not None:
        log_error(
            event.command, f"{missing}: missing from the hook payload (configure this as a {event.name} hook)"
        )
        return 0
    project = os.path.abspath(project) if project else None
    if event.deferred:
        try:
            # The payload as it came (checked, not rewritten): cleaned when it is run.
            spool.defer(event.command, raw.decode("utf-8", "replace").encode(), project)
        except NotOwned as exc:
            log_error(event.command, str(exc), fix="remove that folder (or set INFINITE_CONTEXT_DATA_DIR)")
            say(failures.text(event.name, str(exc), "remove that folder, or set INFINITE_CONTEXT_DATA_DIR"))
            return 0
        except OSError as exc:  # no queue (data folder not writable, disk full): run the hook here
            log_error(event.command, f"queue unavailable ({exc}); running it now", "warning")
        else:
            output = failures.with_message(
                _ask(event, payload), failures.notice(spool.data_dir(), _session(payload))
            )
            if output:
                sys.stdout.write(json.dumps(output) + "\n")
            return 0
    from .hooks import run_command  # the core: only for hooks that run here

    return run_command(event, payloads.clean(payload) if event.deferred else payload, project)
