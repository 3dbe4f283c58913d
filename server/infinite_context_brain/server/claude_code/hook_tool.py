"""The hidden MCP tool Claude Code's ``mcp_tool`` hooks call: its name and arguments.

Shared by the installer (which writes the hook entries) and the MCP server (which answers them);
standard library only, so ``install`` and ``doctor`` do not import the MCP SDK.
"""

from __future__ import annotations

import json
from contextlib import suppress
from typing import Any

from infinite_context_brain.core.errors import InvalidInput

HOOK_TOOL = "claude_code_hook"
#: Claude Code event -> the hook input fields the handler needs, as Claude Code documents them
FIELDS = {
    "PostToolUse": (
        "session_id",
        "transcript_path",
        "cwd",
        "tool_name",
        "tool_use_id",
        "tool_input",
        "tool_response",
    ),
    "Stop": ("session_id", "transcript_path", "cwd"),
}
#: fields that arrive as the JSON text of an object (or as a plain string)
_JSON_FIELDS = ("tool_input", "tool_response")
#: the first Claude Code release with ``mcp_tool`` hooks
MIN_CLAUDE_CODE = (2, 1, 118)


def hook_input(event: str) -> dict[str, str]:
    """The ``input`` map of our ``mcp_tool`` hook entry for ``event`` (Claude Code fills in
    each ``${field}`` from the hook's input JSON; an object becomes its JSON text)."""
    return {"event": event, **{name: "${" + name + "}" for name in FIELDS[event]}}


def payload_of(arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(event, the hook payload as a command hook would have read it from stdin)."""
    event = arguments.get("event")
    if not isinstance(event, str) or event not in FIELDS:
        raise InvalidInput(
            "event", f"{event!r} is not a hook this tool takes", fix=f"use one of {', '.join(FIELDS)}"
        )
    payload: dict[str, Any] = {"hook_event_name": event}
    for name in FIELDS[event]:
        value = arguments.get(name)
        if name in _JSON_FIELDS and isinstance(value, str) and value[:1] in ("{", "["):
            with suppress(ValueError):  # a plain text output that only starts like JSON
                value = json.loads(value)
        payload[name] = value
    if event == "PostToolUse":
        for name in ("tool_use_id", "tool_name"):
            if not isinstance(payload.get(name), str) or not payload[name]:
                raise InvalidInput(
                    name, "missing", fix=f"pass the hook's {name} (input: {name}: ${{{name}}})"
                )
    elif not isinstance(payload.get("transcript_path"), str) or not payload["transcript_path"]:
        raise InvalidInput("transcript_path", "missing", fix="pass the hook's transcript_path")
    return event, payload
