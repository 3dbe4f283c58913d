"""The hooks' request to the model for a checkpoint (``core.transcript.nudge`` decides when):
after a tool call (``PostToolUse``), context the model reads before its next step; when it means
to stop (``Stop``), Claude Code's "block" decision, whose reason the model reads as the hook's
feedback and answers before it stops again. Whichever comes first after the context passes the
share asks; the request's words in the transcript keep the other from asking again.

Standard library only (the command hooks' fast path imports it)."""

from __future__ import annotations

from infinite_context_brain.core.transcript.nudge import MARK, due, record_path

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (this module is on the hooks' path)
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

#: the events that ask (the others never do)
ASKING = ("PostToolUse", "Stop")
_FIELDS = (
    "call the infinite-context `checkpoint` tool once with its fields: task, in_progress, next_steps "
    "(all that is left), done, decisions with their reason, blockers with what you tried, gotchas."
)
_WITHOUT_TOOL = '(Without the tool: run `infinite-context checkpoint -m "<the same, as text>"`.)'


def _why(tokens: int, window: int) -> str:
    return (
        f"{MARK}: this conversation's context is {100 * tokens // window}% full "
        f"({tokens // 1000}k of {window // 1000}k tokens), so a /clear or a compaction may come soon."
    )


def output(event: str, tokens: int, window: int) -> dict[str, Any]:
    """The hook output that asks: a Stop keeps the model going for one more step (the
    checkpoint); after a tool call it is context for the model's next step."""
    if event == "Stop":
        then = "Then stop; do not go on with the work."
        reason = f"{_why(tokens, window)} Before you stop, {_FIELDS} {then} {_WITHOUT_TOOL}"
        return {"decision": "block", "reason": reason}
    then = "Then go on with the work."
    text = f"{_why(tokens, window)} Now, before your next step, {_FIELDS} {then} {_WITHOUT_TOOL}"
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def for_event(
    event: str, payload: dict[str, Any], share: float, window: int | None, data_dir: str | None
) -> dict[str, Any] | None:
    """The output of hook ``event`` asking for a checkpoint, when one is due (``nudge.due``; the
    ask recorded in ``data_dir``)."""
    path = payload.get("transcript_path")
    if event not in ASKING or not isinstance(path, str) or not path:
        return None
    active = payload.get("stop_hook_active") in (True, "true")  # an mcp_tool hook passes it as text
    record = record_path(data_dir, path) if data_dir else None
    found = due(path, share, active=active, window=window, record=record)
    return output(event, *found) if found is not None else None
