"""Claude Code hooks delivered to the MCP server as ``mcp_tool`` calls (Claude Code 2.1.118+).

A command hook costs a process per tool call, plus a worker that imports the core while Claude
Code works; an ``mcp_tool`` hook is one JSON-RPC round trip to this server, which is already
running for the session with the brain warm. ``install claude-code`` wires PostToolUse and Stop
this way when the Claude Code it finds supports it; SessionStart (it runs before MCP servers
connect), SessionEnd and PreCompact stay command hooks.

The tool is not listed (the model never sees or calls it): Claude Code calls it by name. Its
arguments are the hook's input fields (``hook_tool``). The answer comes at once: an empty hook
output, or a ``systemMessage`` when a hook failure has not been told to this session yet
(``failures``). The work follows on the brain holder's background thread, through the same
dispatch as every other hook (``hooks.dispatch``).

A Stop's hand-off waits a moment: when the session is ending (a ``-p`` run right after its last
answer), it is not started at all (SessionEnd writes it), so Claude Code's exit never waits for
it or shares the CPU with it. Meanwhile it is a record in the spool held by this server
(``spool.enqueue(hold=True)``), so SessionStart after ``/clear`` waits for it like any queued
hand-off, and if this server stops first the record stays for the worker.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from infinite_context_brain.core.errors import InfiniteContextError
from infinite_context_brain.core.files import NotOwned
from infinite_context_brain.core.transcript import nudge

from . import checkpoint_ask, failures, spool
from .events import Event
from .hook_tool import payload_of

if TYPE_CHECKING:
    from infinite_context_brain.core.brain import ProjectBrain

    from ..mcp.holder import BrainHolder

log = logging.getLogger("infinite_context_brain.hooks")
#: seconds between the Stop hook and its hand-off
STOP_DELAY_SECONDS = 1.0


def _hold(event: Event, payload: dict[str, Any]) -> spool.Claim | None:
    """The hand-off as a spool record this server holds (None: no queue; it runs all the same)."""
    try:
        return spool.enqueue(event.command, json.dumps(payload).encode(), hold=True)
    except (OSError, NotOwned) as exc:
        log.warning("hook %s not queued (%s); SessionStart will not wait for it", event.name, exc)
        return None


def _job(event: Event, payload: dict[str, Any], held: spool.Claim | None) -> Callable[[ProjectBrain], None]:
    session = payload.get("session_id") if isinstance(payload.get("session_id"), str) else None

    def job(brain: ProjectBrain) -> None:
        # The handlers and the transcript digest load with the first hook, on the holder's
        # thread after the answer, not with the server.
        from . import replay
        from .hooks import HookCall, dispatch

        try:
            dispatch(HookCall(event, payload, brain.settings), brain)
        except Exception as exc:
            if held is not None:  # logged, kept for the user, the record settled
                replay.finish(held, event, session, exc)
                return
            message = exc.message if isinstance(exc, InfiniteContextError) else f"{type(exc).__name__}: {exc}"
            fix = exc.fix if isinstance(exc, InfiniteContextError) else None
            failures.record(spool.data_dir(), event.name, message, fix, session)
            raise  # the holder logs it
        if held is not None:
            replay.finish(held, event, session, None)
        else:
            failures.resolved(spool.data_dir(), event.name)

    return job


def call(holder: BrainHolder, arguments: dict[str, Any]) -> CallToolResult:
    """Answer the hook at once; the work follows in the background."""
    try:
        event, payload = payload_of(arguments)
    except InfiniteContextError as exc:
        raise ToolError(str(exc)) from None
    held = _hold(event, payload) if event.action == "hand-off" else None
    delay = STOP_DELAY_SECONDS if event.action == "hand-off" else 0.0
    holder.later(_job(event, payload, held), f"hook {event.name}", delay)
    session = payload.get("session_id") if isinstance(payload.get("session_id"), str) else None
    notice = failures.notice(spool.data_dir(), session)
    answer = failures.with_message(_ask(holder, event.name, payload), notice) or {}
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(answer))])


def _ask(holder: BrainHolder, event: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    """The request for a checkpoint when the context nears its end, by the open brain's settings
    (before it opens, by the environment's, as a command hook reads them)."""
    if event not in checkpoint_ask.ASKING:
        return None
    if holder.ready:
        settings = holder.get().settings
        share, window = settings.checkpoint_nudge, settings.context_window
    else:
        try:
            share = nudge.share_from_environment()
        except nudge.NudgeSettingError as exc:
            log.error("%s hook: %s", event, exc)
            return None
        window = nudge.window_from_environment()
    return checkpoint_ask.for_event(event, payload, share, window, spool.data_dir())
