"""The MCP session's two streams read and written in place over the pipes (issue 19).

The SDK's ``stdio_server`` hands each parsed line to the session through a memory stream served
by a task of its own, ``guard.relay`` screened it through a second one, and every reply went out
through a third (a writer task): three task hand-offs per call, ~60 µs of the ~200 µs the SDK
spent on a call that does nothing. Here the session's ``receive`` reads the next line, parses it
as the SDK's transport does, screens it (``guard.screen``: a refused message gets its error reply
at once and the next line is read) and returns it; ``send`` serialises a message as the SDK's
transport does and writes it. Used over pipes (``stdio.pipe_streams``); a terminal or a file keeps
the SDK's transport with ``guard.relay``.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

import anyio
from mcp import types
from mcp.shared.message import SessionMessage

from .guard import screen
from .stdio import LineReader, LineWriter


class SessionReader:
    """What the session reads: screened messages, parse errors already answered."""

    def __init__(self, lines: LineReader, replies: SessionWriter) -> None:
        self._lines = lines
        self._replies = replies
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
            if passed is not None:
                return passed
            if reply is not None:
                await self._replies.send(reply)

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

    def __init__(self, lines: LineWriter) -> None:
        self._lines = lines
        self._closed = False

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        await self._lines.write(item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n")

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def session_streams(lines: LineReader, out: LineWriter) -> tuple[SessionReader, SessionWriter]:
    writer = SessionWriter(out)
    return SessionReader(lines, writer), writer
