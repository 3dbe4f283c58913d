"""The one thing the MCP SDK's stdio transport leaves undone: a line it cannot read as a JSON-RPC
message (not JSON, a lone UTF-16 surrogate escape such as ``\\ud83d`` from a cut emoji, nesting a
few hundred levels deep, JSON that is no JSON-RPC message) reaches the server as an exception,
which the server drops without a reply, so the client waits for an answer that never comes.

``relay`` sits between the transport's read stream and the server: such an item is answered with a
JSON-RPC error naming the field and the fix (``wire.parse_problem``) and the request's id when
it can be found (``wire.request_id``); every message passes through untouched.
``tests/server/test_protocol_faults.py`` pins the SDK behaviour this works around: when the
stock server answers those lines itself, this module goes.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable
from typing import Protocol

from mcp.shared.message import SessionMessage
from mcp.types import ErrorData, JSONRPCError
from pydantic import ValidationError

from ..wire import INVALID_REQUEST, MAX_ID_CHARS, Problem, check_message, parse_problem, request_id

log = logging.getLogger(__name__)


class Sink(Protocol):
    async def send(self, item: SessionMessage, /) -> None: ...


class Passage(Protocol):
    async def send(self, item: SessionMessage | Exception, /) -> None: ...

    async def aclose(self) -> None: ...


def refusal(item: Exception) -> tuple[int | str | None, Problem]:
    """The id (if it can be found) and the reason for a line the transport could not read. Its
    parser's error carries the line (text that is no JSON) or the parsed value (JSON that is no
    JSON-RPC message)."""
    errors = item.errors(include_url=False) if isinstance(item, ValidationError) else []
    raw = errors[0].get("input") if errors else None
    if isinstance(raw, str):
        return request_id(raw), parse_problem(raw)
    if isinstance(raw, dict):
        found = raw.get("id")
        msg_id = found if isinstance(found, (int, str)) and not isinstance(found, bool) else None
        return msg_id, check_message(raw) or Problem(
            INVALID_REQUEST,
            "message: not a valid JSON-RPC 2.0 message. "
            'Fix: send {"jsonrpc": "2.0", "id": 1, "method": "...", "params": {...}}',
        )
    return None, Problem(
        INVALID_REQUEST, f"message: could not be read ({type(item).__name__}). Fix: send JSON"
    )


async def relay(source: AsyncIterable[SessionMessage | Exception], server: Passage, replies: Sink) -> None:
    """Pass ``source`` on to ``server`` (closed at the end of input), answering what it could not read."""
    try:
        async for item in source:
            if not isinstance(item, Exception):
                await server.send(item)
                continue
            msg_id, problem = refusal(item)
            log.warning("refused a message: %s", problem.message, extra={"id": msg_id})
            if isinstance(msg_id, str) and len(msg_id) > MAX_ID_CHARS:
                msg_id = None
            error = ErrorData(code=problem.code, message=problem.message)
            await replies.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=msg_id, error=error)))
    finally:
        await server.aclose()
