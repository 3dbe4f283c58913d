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
    "call the infinite-context `checkpoint` tool once with its fields (task, in_progress, next_steps: "
    "all that is left, done, decisions with their reason, blockers with what you tried, gotchas)"
)
#: what the person sees beside the request (Claude Code shows a blocking Stop hook as an error)
STOP_NOTICE = (
    "infinite-context: the context is {share}% full; Claude saves a checkpoint first (not an error)."
)


def output(event: str, tokens: int, window: int) -> dict[str, Any]:
    """The hook output that asks: a Stop keeps the model going for one more step (the
    checkpoint); after a tool call it is context for the model's next step."""
    share = 100 * tokens // window
    why = f"{MARK}: the context is {share}% full ({tokens // 1000}k of {window // 1000}k tokens)."
    if event == "Stop":
        reason = f"{why} Before you stop, {_FIELDS}; then stop."
        return {"decision": "block", "reason": reason, "systemMessage": STOP_NOTICE.format(share=share)}
    text = f"{why} Before your next step, {_FIELDS}; then go on with the work."
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
