"""Claude Code hook handlers: ``infinite-context hook <event>`` with Claude Code's JSON on stdin.

A hook must never break the user's session: every handler exits 0, logs its own failures to
stderr as JSON lines, and writes nothing to stdout but the JSON Claude Code documents for that
event. Each handler parses the payload and makes one core call.

With ``install claude-code --hooks mcp`` (what ``auto`` picks for Claude Code 2.1.118+),
PostToolUse and Stop do not come here: they are ``mcp_tool`` calls to the running MCP server
(``hook_calls.py``). As commands, PostToolUse, Stop and SessionEnd are deferred (``spool``):
the hook queues the payload and returns in milliseconds, and one detached worker runs the handler
below, so Claude Code never waits on a merge and never cancels one when a ``-p`` run ends.
Stop writes the hand-off after every answer (it ran in every real run; SessionEnd does not
when Claude Code exits early); SessionEnd and PreCompact stay, and the transcript cursor makes
the repeats cost nothing.
SessionStart first lets queued hand-offs finish, so the session after ``/clear`` sees the one
before it. When the queue cannot be written, the deferred handler runs inline (the fallback).

The project is the one Claude Code works in, decided by ``project.locate_project``: ``--project``,
else ``PROJECT_ROOT``, else ``CLAUDE_PROJECT_DIR``, else the payload's ``cwd``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .spool import EVENTS

if TYPE_CHECKING:
    from infinite_context_brain.core.brain import ProjectBrain
    from infinite_context_brain.core.config import Settings

log = logging.getLogger("infinite_context_brain.hooks")

Handler = Callable[[dict[str, Any], Path | None], dict[str, Any] | None]


def _client_cwd(payload: dict[str, Any]) -> str | None:
    cwd = payload.get("cwd")
    return cwd if isinstance(cwd, str) and cwd else None


def _settings() -> Settings:
    from infinite_context_brain.core.config import load_settings
    from infinite_context_brain.core.logs import setup_logging

    settings = load_settings()
    setup_logging(settings.log_level)  # a level set only in .env takes effect from here on
    return settings


def _brain(payload: dict[str, Any], explicit: Path | None, settings: Settings | None = None) -> ProjectBrain:
    from infinite_context_brain.core.brain import ProjectBrain

    return ProjectBrain.open(explicit, settings or _settings(), client_cwd=_client_cwd(payload))


#: Claude Code moves additionalContext past 10,000 characters to a file; stay well below.
ADDITIONAL_CONTEXT_CHARS = 9_500
_SOURCES = {
    "clear": "The conversation was just cleared (/clear).",
    "compact": "The conversation was just compacted.",
    "resume": "This session was resumed.",
    "startup": "A new session started.",
}


def session_start(payload: dict[str, Any], project: Path | None) -> dict[str, Any] | None:
    """Reload the brain into the new context (only when there is one)."""
    source = str(payload.get("source") or "startup")
    from ..proxy.process import ensure_for_hook
    from .spool import settle

    settings = _settings()
    # live endless mode: up before the first request, and the listener on its port is ours
    advice = ensure_for_hook(settings.resolved_data_dir())
    if advice is not None and advice.stop:  # Claude Code 2.1 shows it; a later one may also stop
        return {"continue": False, "stopReason": advice.message, "systemMessage": advice.message}
    warning = {"systemMessage": advice.message} if advice is not None else {}
    try:
        settle()  # the hand-off of the session that just ended (/clear) comes first
    except OSError as exc:
        log.warning("queued hand-offs not settled: %s", exc)
    with _brain(payload, project, settings) as brain:
        result = brain.resume()  # within settings.resume_tokens
    if result.state is None:
        return warning or None
    head = (
        f"{_SOURCES.get(source, '')} infinite-context saved this project's context (version "
        f"{result.state.meta.version}); continue from it, and call the `checkpoint` tool after "
        "each finished step.\n\n"
    )
    text = head + result.markdown
    if len(text) > ADDITIONAL_CONTEXT_CHARS:
        text = text[: ADDITIONAL_CONTEXT_CHARS - 1] + "…"
    return {**warning, "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}


def _hand_off(payload: dict[str, Any], project: Path | None, reason: str) -> None:
    with _brain(payload, project) as brain:
        hand_off(brain, payload, reason)


def hand_off(brain: ProjectBrain, payload: dict[str, Any], reason: str) -> None:
    """The hand-off of the payload's transcript into ``brain``, logged (also the MCP server's,
    for an ``mcp_tool`` Stop hook)."""
    from infinite_context_brain.core.transcript.handoff import checkpoint_from_transcript

    done = checkpoint_from_transcript(brain, payload.get("transcript_path"), reason)
    version = done.checkpoint.version if done.checkpoint else None
    log.info(
        "hand-off %s: %s",
        reason,
        f"checkpoint v{version}" if version else "nothing new since the last one",
        extra={"transcript": done.transcript, "from": done.from_offset, "to": done.to_offset},
    )


def session_end(payload: dict[str, Any], project: Path | None) -> dict[str, Any] | None:
    """Checkpoint what the ending session added (reason clear, logout, exit, other)."""
    _hand_off(payload, project, f"session-end:{payload.get('reason') or 'other'}")
    return None


def stop(payload: dict[str, Any], project: Path | None) -> dict[str, Any] | None:
    """Checkpoint what the last turn added (after every answer; a no-op when nothing is new)."""
    _hand_off(payload, project, "stop")
    return None


def pre_compact(payload: dict[str, Any], project: Path | None) -> dict[str, Any] | None:
    """Checkpoint before Claude Code compacts the context (trigger manual or auto)."""
    _hand_off(payload, project, f"pre-compact:{payload.get('trigger') or 'auto'}")
    return None


def post_tool_use(payload: dict[str, Any], project: Path | None) -> dict[str, Any] | None:
    with _brain(payload, project) as brain:
        obs = brain.observe(payload)
    log.debug("observation stored", extra={"tool_use_id": obs.tool_use_id, "tokens": obs.tokens})
    return None


HANDLERS: dict[str, Handler] = {
    "session-start": session_start,
    "session-end": session_end,
    "pre-compact": pre_compact,
    "post-tool-use": post_tool_use,
    "stop": stop,
}


def run_hook(event: str, raw: bytes, project: Path | None = None, *, queue: bool = True) -> int:
    """Run one hook on the raw stdin bytes (a deferred one is queued unless ``queue`` is False);
    always returns 0."""
    name = EVENTS.get(event, event)
    handler = HANDLERS.get(name)
    if handler is None:
        log.error("unknown hook event %r; known: %s", event, ", ".join(sorted(HANDLERS)))
        return 0
    from .spool import DEFERRED, defer

    if queue and name in DEFERRED:
        try:
            problem = defer(name, raw, str(project) if project is not None else None)
        except OSError as exc:  # no queue (data folder not writable, disk full): run it here
            log.warning("hook %s: queue unavailable (%s); running inline", name, exc)
        else:
            if problem is not None:
                log.error("hook %s: %s", name, problem)
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
        from infinite_context_brain.core.errors import InfiniteContextError

        if isinstance(exc, InfiniteContextError):
            log.error("hook %s: %s", name, exc.message, extra={"fix": exc.fix, "code": exc.code})
        else:
            log.exception("hook %s failed", name)
        return 0
    if output is not None:
        sys.stdout.write(orjson.dumps(output).decode() + "\n")
    return 0
