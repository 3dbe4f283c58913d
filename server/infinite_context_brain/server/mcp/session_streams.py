"""The MCP session's two streams read and written in place over the pipes (issue 19).

The SDK's ``stdio_server`` hands each parsed line to the session through a memory stream served
by a task of its own, ``guard.relay`` screened it through a second one, and every reply went out
through a third (a writer task): three task hand-offs per call, ~60 µs of the ~200 µs the SDK
spent on a call that does nothing. Here the session's ``receive`` reads the next line, parses it
as the SDK's transport does, screens it (``guard.screen``: a refused message gets its error reply
at once and the next line is read) and returns it; ``send`` serialises a message as the SDK's
transport does and writes it. Used over pipes (``stdio.pipe_streams``); a terminal or a file keeps
the SDK's transport with ``guard.relay``. With ``fast``, calls of the bounded tools are answered
here and never reach the session (``fast_calls``).
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Self

import anyio
from mcp import types
from mcp.shared.message import SessionMessage

from .fast_calls import FastCalls
from .guard import screen
from .stdio import LineReader, LineWriter

log = logging.getLogger(__name__)


class SessionReader:
    """What the session reads: screened messages, parse errors already answered."""

    def __init__(self, lines: LineReader, replies: SessionWriter, fast: FastCalls | None = None) -> None:
        self._lines = lines
        self._replies = replies
        self._fast = fast
        self._closed = False

    async def receive(self) -> SessionMessage | Exception:
        if self._closed:
            raise anyio.ClosedResourceError
        while True:
            try:
                line = await self._lines.__anext__()
            except StopAsyncIteration:
                raise anyio.EndOfStream from None
            item: SessionMessage | Exception
            try:
                item = SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
            except Exception as exc:  # what the SDK's transport passes on: screen answers it
                item = exc
            passed, reply = screen(item)
            if passed is not None and self._fast is not None:
                reply = await self._answer(self._fast, passed)
                if reply is None:
                    return passed
            elif passed is not None:
                return passed
            if reply is not None:
                await self._replies.send(reply)

    @staticmethod
    async def _answer(fast: FastCalls, passed: SessionMessage) -> SessionMessage | None:
        """The reply to a request the transport answers itself (None: the session's)."""
        message = passed.message
        if not isinstance(message, types.JSONRPCRequest):
            return None
        fast.saw_request(message)
        if not fast.takes(message):
            return None
        try:
            reply = await fast.answer(message)
        except Exception:  # a bug here must cost this call, never the server (nor run it twice)
            log.exception("answering %s on the fast path failed", message.method)
            error = types.ErrorData(code=types.INTERNAL_ERROR, message="internal error")
            return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=message.id, error=error))
        return None if reply is None else SessionMessage(reply)

    def __aiter__(self) -> SessionReader:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class SessionWriter:
    """What the session writes: each message as one JSON line, written at once (a whole line a
    ``write``: concurrent replies never interleave)."""

    def __init__(self, lines: LineWriter, fast: FastCalls | None = None) -> None:
        self._lines = lines
        self._fast = fast
        self._closed = False

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._fast is not None:
            self._fast.saw_reply(item.message)
        await self._lines.write(item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n")

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def session_streams(
    lines: LineReader, out: LineWriter, fast: FastCalls | None = None
) -> tuple[SessionReader, SessionWriter]:
    writer = SessionWriter(out, fast)
    return SessionReader(lines, writer, fast), writer
