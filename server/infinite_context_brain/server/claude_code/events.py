"""Claude Code's hook events as infinite-context handles them: the one table the launcher, the CLI,
the installer, the spool and the MCP hook tool read.

Each event does one of three things: ``resume`` (SessionStart: the brain into the new context),
``hand-off`` (Stop, SessionEnd, PreCompact: what the transcript added since the last hand-off
becomes a checkpoint) or ``observe`` (PostToolUse: the tool result's observation). As a command
hook, a ``deferred`` event only queues its payload (``spool``) and returns in milliseconds; a
detached worker runs it. PostToolUse and Stop can also arrive as ``mcp_tool`` calls to the running
MCP server (``hook_tool``), which fills in ``mcp_fields`` from the hook's input.

Nothing beyond the interpreter's own start-up modules (not even ``typing`` or ``dataclasses``):
the launcher reads this on every tool call.
"""

from __future__ import annotations

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (this module is on every hook's path)
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any, Literal

    Action = Literal["resume", "hand-off", "observe"]


class Event:
    """One hook event (read-only by convention: the table below is the only maker)."""

    __slots__ = ("action", "command", "deferred", "mcp_fields", "name", "required", "timeout", "why")

    def __init__(
        self,
        name: str,
        command: str,
        action: Action,
        *,
        timeout: int,
        deferred: bool = False,
        why: tuple[str, str] | None = None,
        mcp_fields: tuple[str, ...] = (),
        required: tuple[str, ...] = (),
    ) -> None:
        #: Claude Code's name (``SessionStart``)
        self.name = name
        #: our ``hook`` sub-command (``session-start``)
        self.command = command
        self.action: Action = action
        #: seconds Claude Code gives the hook (written by ``install``)
        self.timeout = timeout
        #: as a command hook: queued and run by the spool's worker
        self.deferred = deferred
        #: a hand-off's payload field saying why, and its default (``reason``: clear, exit, ...)
        self.why = why
        #: the hook input fields an ``mcp_tool`` entry passes (empty: a command hook only)
        self.mcp_fields = mcp_fields
        #: payload fields that must be non-empty strings (checked before anything is queued)
        self.required = required

    def __repr__(self) -> str:
        return f"Event({self.name!r})"

    def missing(self, payload: dict[str, Any]) -> str | None:
        """The first required field the payload lacks (None: all there)."""
        return next((f for f in self.required if not isinstance(payload.get(f), str) or not payload[f]), None)

    def reason(self, payload: dict[str, Any]) -> str:
        """A hand-off's reason as the hand-off log and cursor record it (``session-end:clear``)."""
        if self.why is None:
            return self.command
        field, default = self.why
        value = payload.get(field)
        return f"{self.command}:{value if isinstance(value, str) and value else default}"


#: PostToolUse, Stop and SessionEnd only queue their payload and return in milliseconds, so
#: they run synchronously: Claude Code cancels async hooks still running when a ``-p`` run ends,
#: and then skips SessionEnd. SessionStart waits for the hand-offs still running (``settle``)
#: within its own timeout.
EVENTS: tuple[Event, ...] = (
    Event("SessionStart", "session-start", "resume", timeout=15),
    Event(
        "SessionEnd",
        "session-end",
        "hand-off",
        timeout=10,
        deferred=True,
        why=("reason", "other"),
        required=("transcript_path",),
    ),
    Event(
        "PreCompact",
        "pre-compact",
        "hand-off",
        timeout=30,
        why=("trigger", "auto"),
        required=("transcript_path",),
    ),
    Event(
        "PostToolUse",
        "post-tool-use",
        "observe",
        timeout=10,
        deferred=True,
        mcp_fields=(
            "session_id",
            "transcript_path",
            "cwd",
            "tool_name",
            "tool_use_id",
            "tool_input",
            "tool_response",
        ),
        required=("tool_use_id", "tool_name"),
    ),
    Event(
        "Stop",
        "stop",
        "hand-off",
        timeout=10,
        deferred=True,
        mcp_fields=("session_id", "transcript_path", "cwd", "stop_hook_active"),
        required=("transcript_path",),
    ),
)
BY_NAME = {event.name: event for event in EVENTS}
BY_COMMAND = {event.command: event for event in EVENTS}
#: seconds of SessionStart's timeout kept for start-up and the resume itself (the rest waits
#: for hand-offs still running)
RESUME_MARGIN_SECONDS = 3.0


def find(word: str) -> Event | None:
    """The event named ``word``: our sub-command or Claude Code's name."""
    return BY_COMMAND.get(word) or BY_NAME.get(word)


def settle_seconds() -> float:
    """How long SessionStart waits for hand-offs still running, within its hook timeout."""
    return BY_NAME["SessionStart"].timeout - RESUME_MARGIN_SECONDS
