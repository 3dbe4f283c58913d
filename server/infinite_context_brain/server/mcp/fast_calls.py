"""Calls of the bounded tools answered by the transport itself, past the SDK's request pipeline
(issue 19).

Between reading a ``tools/call`` line and writing its reply, the SDK's pipeline (dispatcher, a
task per request, the runner, its middleware chain, per-version validation and serialisation,
three stream hand-offs) cost ~0.2 ms a call on an idle machine, as much again as a ``store``'s
own work; the real MCP client and the pipes cost ~0.4 ms more. Over pipes (``session_streams``)
a call of one of ``BOUNDED`` tools is answered here instead, as the SDK would answer it:

* the same checks: ``mcp_types``' surface validation of the request for the negotiated protocol
  version, and of the result (its ``serialize_server_result``, as the runner does);
* the same call: ``MCPServer.call_tool`` (our ``Server`` subclass: argument errors in the core's
  words), tool errors becoming an ``isError`` result as ``MCPServer``'s handler makes them, an
  ``MCPError`` a JSON-RPC error;
* on the event loop, in order, as the SDK runs these tools (their work is bounded: ``inline``).

Everything else goes to the SDK untouched: every method but ``tools/call``, every other tool,
requests before ``initialize`` is answered, any a request the SDK would treat specially (a task,
request state, input responses), a session on a protocol version without the ``initialize``
handshake, a request the surface check refuses (the SDK writes the error), and every call while
the brain is still opening (the SDK runs it in a worker thread, the loop goes on reading). With a
tracer provider installed, or middleware other than the SDK's request-state boundary, nothing is
answered here (``enabled``): spans and middleware see every call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    CallToolResult,
    ErrorData,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    TextContent,
)
from mcp_types.methods import serialize_server_result, validate_client_request

if TYPE_CHECKING:
    from .app import Server

log = logging.getLogger(__name__)
METHOD = "tools/call"
#: request fields only the SDK's pipeline acts on (tasks, multi-round-trip state)
_SDK_ONLY = frozenset({"task", "requestState", "inputResponses"})


def enabled(server: Any) -> bool:
    """Whether the SDK's pipeline would add nothing to a tool call: no middleware but its
    request-state boundary (OpenTelemetry's is dropped when no tracer is installed), no cache
    hint for ``tools/call``."""
    from mcp.server.request_state import RequestStateBoundary

    middleware = getattr(server, "middleware", None)
    hints = getattr(server, "cache_hints", None)
    if not isinstance(middleware, list) or not isinstance(hints, Mapping):
        return False  # an SDK shaped otherwise: leave every call to it
    return METHOD not in hints and all(isinstance(m, RequestStateBoundary) for m in middleware)


class FastCalls:
    """Watches the session's ``initialize`` go by, then answers calls of ``tools`` (see module)."""

    def __init__(self, app: Server, tools: frozenset[str], ready: Callable[[], bool]) -> None:
        self._app = app
        self._tools = tools
        self._ready = ready  # the brain is open: the tools run inline
        self._initialize_id: int | str | None = None
        #: the negotiated protocol version, once ``initialize`` was answered
        self.version: str | None = None
        self.answered = 0  # calls answered here with a result (tests read it)

    def saw_request(self, message: JSONRPCRequest) -> None:
        """An incoming request, before anything answers it."""
        if message.method == "initialize":
            self._initialize_id = message.id
            self.version = None
            info = (message.params or {}).get("clientInfo")
            name = info.get("name") if isinstance(info, dict) else None
            self._app.connected_client = name if isinstance(name, str) else None

    def saw_reply(self, message: Any) -> None:
        """An outgoing message: the reply to ``initialize`` opens the fast path."""
        if (
            self._initialize_id is not None
            and isinstance(message, JSONRPCResponse)
            and message.id == self._initialize_id
        ):
            version = message.result.get("protocolVersion")
            self.version = version if isinstance(version, str) else None

    def takes(self, message: JSONRPCRequest) -> bool:
        params = message.params
        return (
            self.version is not None
            and message.method == METHOD
            and isinstance(params, dict)
            and params.get("name") in self._tools
            and _SDK_ONLY.isdisjoint(params)
            and self._ready()
        )

    async def answer(self, message: JSONRPCRequest) -> JSONRPCResponse | JSONRPCError | None:
        """The reply to a call ``takes`` accepted; None: the SDK answers it (its surface check
        refused the request, and the SDK words that error)."""
        version, params = self.version, message.params
        if version is None or params is None:  # not one ``takes`` accepted
            return None
        try:
            validate_client_request(METHOD, version, params)
        except Exception:
            return None
        name, arguments = params["name"], params.get("arguments") or {}
        try:
            result = await self._app.call_tool(name, arguments)
        except MCPError as exc:
            return JSONRPCError(jsonrpc="2.0", id=message.id, error=exc.error)
        except Exception as exc:  # as MCPServer's tools/call handler answers it
            if isinstance(exc, ToolError) and not isinstance(exc, UnexpectedToolError):
                log.info("Tool %r failed: %r", name, str(exc))
            else:
                log.exception("Tool %r raised an unexpected exception", name)
            result = CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)
        try:  # the runner's shaping of the result for the negotiated version
            dumped = serialize_server_result(
                METHOD, version, result.model_dump(by_alias=True, mode="json", exclude_none=True)
            )
        except Exception:
            log.exception("tool %r returned an invalid result", name)
            error = ErrorData(code=INTERNAL_ERROR, message="Handler returned an invalid result")
            return JSONRPCError(jsonrpc="2.0", id=message.id, error=error)
        self.answered += 1
        return JSONRPCResponse(jsonrpc="2.0", id=message.id, result=dumped)
