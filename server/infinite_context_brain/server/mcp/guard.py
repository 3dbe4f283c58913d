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
import typing
from collections.abc import AsyncIterable
from typing import Protocol

from mcp.shared.message import SessionMessage
from mcp.types import ClientRequest, ErrorData, JSONRPCError, JSONRPCNotification
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


#: the methods a client may only send as requests (they expect an answer)
REQUEST_METHODS = frozenset(
    method
    for request in typing.get_args(ClientRequest)
    for method in typing.get_args(request.model_fields["method"].annotation)
)
BAD_ID = Problem(
    INVALID_REQUEST,
    "id: must be a string or an integer. Fix: number requests with integers (or use strings)",
)


def _lost_its_id(item: SessionMessage) -> bool:
    """A request whose ``id`` the SDK could not take (``1.5``, ``true``) is read by it as a
    notification of a request method, and never answered."""
    message = item.message
    return isinstance(message, JSONRPCNotification) and message.method in REQUEST_METHODS


async def relay(source: AsyncIterable[SessionMessage | Exception], server: Passage, replies: Sink) -> None:
    """Pass ``source`` on to ``server`` (closed at the end of input), answering what it could not read."""
    try:
        async for item in source:
            if not isinstance(item, Exception) and not _lost_its_id(item):
                await server.send(item)
                continue
            msg_id, problem = (None, BAD_ID) if not isinstance(item, Exception) else refusal(item)
            log.warning("refused a message: %s", problem.message, extra={"id": msg_id})
            if isinstance(msg_id, str) and len(msg_id) > MAX_ID_CHARS:
                msg_id = None
            error = ErrorData(code=problem.code, message=problem.message)
            await replies.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=msg_id, error=error)))
    finally:
        await server.aclose()
