"""The hidden MCP tool Claude Code's ``mcp_tool`` hooks call: its name and arguments.

Shared by the installer (which writes the hook entries) and the MCP server (which answers them);
no MCP SDK here, so ``install`` and ``doctor`` do not import it. The events it takes, and the
fields each passes, are ``events.EVENTS``' ``mcp_fields``.
"""

from __future__ import annotations

import json
from contextlib import suppress
from typing import Any

from infinite_context_brain.core.errors import InvalidInput

from . import payloads
from .events import BY_NAME, EVENTS, Event

HOOK_TOOL = "claude_code_hook"
#: the events an ``mcp_tool`` hook of ours may carry
MCP_EVENTS = tuple(event.name for event in EVENTS if event.mcp_fields)
#: fields that arrive as the JSON text of an object (or as a plain string)
_JSON_FIELDS = ("tool_input", "tool_response")
#: the first Claude Code release with ``mcp_tool`` hooks
MIN_CLAUDE_CODE = (2, 1, 118)


def hook_input(event: str) -> dict[str, str]:
    """The ``input`` map of our ``mcp_tool`` hook entry for ``event`` (Claude Code fills in
    each ``${field}`` from the hook's input JSON; an object becomes its JSON text)."""
    return {"event": event, **{name: "${" + name + "}" for name in BY_NAME[event].mcp_fields}}


def payload_of(arguments: dict[str, Any]) -> tuple[Event, dict[str, Any]]:
    """(event, the hook payload as a command hook would have read it from stdin), cleaned for
    every serializer after it (``payloads.clean``)."""
    name = arguments.get("event")
    event = BY_NAME.get(name) if isinstance(name, str) else None
    if event is None or not event.mcp_fields:
        raise InvalidInput(
            "event", f"{name!r} is not a hook this tool takes", fix=f"use one of {', '.join(MCP_EVENTS)}"
        )
    payload: dict[str, Any] = {"hook_event_name": event.name}
    for field in event.mcp_fields:
        value = arguments.get(field)
        if field in _JSON_FIELDS and isinstance(value, str) and value[:1] in ("{", "["):
            with suppress(ValueError, RecursionError):  # a plain text output that only starts like JSON
                value = json.loads(value)
        payload[field] = value
    payload = payloads.clean(payload)
    missing = event.missing(payload)
    if missing is not None:
        raise InvalidInput(
            missing, "missing", fix=f"pass the hook's {missing} (input: {missing}: ${{{missing}}})"
        )
    return event, payload
