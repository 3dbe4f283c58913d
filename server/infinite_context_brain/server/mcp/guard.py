"""Between the SDK's stdio transport and its session: every message the transport could not parse,
and every request carrying something no tool may take (``wire.check_value``), is answered here
with a JSON-RPC error naming the field and the fix; everything else passes through untouched.

Without this, the SDK hands the session the parse error and the session only logs it at debug
level: the client waits forever for a reply to a request containing a lone surrogate escape
(``\\ud83d``) or nested a few hundred levels deep.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
from mcp.shared.message import SessionMessage
from mcp.types import ErrorData, JSONRPCError, JSONRPCRequest
from pydantic import ValidationError

from ..wire import INVALID_REQUEST, Problem, check_message, check_value, parse_problem, request_id

log = logging.getLogger(__name__)


def _refused(item: Exception) -> tuple[int | str | None, Problem]:
    """The id (if it can be found) and the reason for an item the transport failed to parse."""
    raw: Any = None
    if isinstance(item, ValidationError):
        errors = item.errors(include_url=False)
        raw = errors[0].get("input") if errors else None
    if isinstance(raw, str):
        found = request_id(raw)
        return found, parse_problem(raw)
    if isinstance(raw, dict):
        found = raw.get("id")
        msg_id = found if isinstance(found, (int, str)) and not isinstance(found, bool) else None
        return msg_id, check_message(raw) or Problem(
            INVALID_REQUEST,
            "message: not a valid JSON-RPC 2.0 request. "
            'Fix: send {"jsonrpc": "2.0", "id": 1, "method": "...", "params": {...}}',
        )
    return None, Problem(
        INVALID_REQUEST, f"message: could not be read ({type(item).__name__}). Fix: send JSON"
    )


def _error(msg_id: int | str | None, problem: Problem) -> SessionMessage:
    if isinstance(msg_id, str) and len(msg_id) > 256:
        msg_id = None
    return SessionMessage(
        JSONRPCError(jsonrpc="2.0", id=msg_id, error=ErrorData(code=problem.code, message=problem.message))
    )


def screen(item: SessionMessage | Exception) -> tuple[SessionMessage | None, SessionMessage | None]:
    """(the message to pass on, or the error reply to send instead): one of the two is None."""
    if isinstance(item, Exception):
        msg_id, problem = _refused(item)
        log.warning("refused a message: %s", problem.message, extra={"id": msg_id})
        return None, _error(msg_id, problem)  # id null when it cannot be found
    message = item.message
    if isinstance(message, JSONRPCRequest):
        refused = check_message({"id": message.id}) or check_value(
            {"params": message.params} if message.params is not None else {}
        )
        if refused is not None:
            log.warning("refused request %s: %s", message.id, refused.message)
            return None, _error(message.id, refused)
    return item, None


async def relay(
    source: Any,  # the transport's read stream: SessionMessage | Exception
    sink: Any,  # what the session reads
    replies: Any,  # the transport's write stream
) -> None:
    async with sink:
        async for item in source:
            passed, reply = screen(item)
            if reply is not None:
                await replies.send(reply)
            else:
                await sink.send(passed)


def streams() -> tuple[Any, Any]:
    return anyio.create_memory_object_stream[SessionMessage | Exception](0)
