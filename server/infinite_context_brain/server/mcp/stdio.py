"""The stdio wire without worker threads (issue 19): the SDK's ``stdio_server`` reads each line in
a worker thread (``anyio.wrap_file``) and writes and flushes each reply in two more, ~0.2 ms of
thread hand-offs per call on these machines. Here the event loop reads and writes the pipes
itself (asyncio pipe transports); the SDK still parses every line and writes every reply, through
the streams it accepts in place of its own.

Like the SDK, fd 0 and fd 1 are pointed at the null device and stderr while serving (a stray
``print`` or a child process cannot corrupt the wire) and restored on exit. Only pipes and sockets
take this path (what Claude Code and every MCP client give); a terminal or a regular file keeps
the SDK's own threaded transport.

``idle``: work run once a reply is written and no byte of a next request has come in for
``IDLE_DELAY`` (the store's deferred index writes: ``memory_settle``), in a worker thread, one run
at a time: the loop goes on reading, and once a byte of a next request has come in the work stops
after its current transaction (``memory_settle`` works in small ones) and leaves the rest for later,
so background work does not take the request's CPU either.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

log = logging.getLogger(__name__)
#: idle work, given a predicate that turns True once a next request starts coming in
Idle = Callable[[Callable[[], bool]], None]
#: a JSON-RPC message is one line; a line longer than this is an error the SDK's parser reports
LINE_LIMIT = 1 << 30
#: seconds without input after a reply before ``idle`` work runs
IDLE_DELAY = 0.002


def fast_fds() -> bool:
    """Whether stdin and stdout are both pipes or sockets (the event loop can poll them; not on
    Windows, where asyncio's pipe transports do not take standard handles)."""
    if sys.platform == "win32":
        return False
    try:
        return all(stat.S_ISFIFO(m) or stat.S_ISSOCK(m) for m in (os.fstat(0).st_mode, os.fstat(1).st_mode))
    except OSError:
        return False


class LineReader:
    """``async for line in reader``: the text lines of the wire, as the SDK's transport reads them
    (UTF-8, undecodable bytes replaced; the SDK's parser reports what is not JSON-RPC)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:  # end of input: the last line, if unterminated
            if not exc.partial:
                raise StopAsyncIteration from None
            line = exc.partial
        except asyncio.LimitOverrunError as exc:  # hand the SDK what it would have read: it reports
            line = await self._reader.readexactly(exc.consumed)
        return line.decode("utf-8", errors="replace")


class _Counting(asyncio.StreamReaderProtocol):
    """Counts the chunks read from the wire: a change means a request is coming in."""

    received = 0

    def data_received(self, data: bytes) -> None:
        self.received += 1
        super().data_received(data)


class LineWriter:
    """``await writer.write(text)`` then ``flush()``, as the SDK's transport writes a reply; the
    write waits only while the client is not reading (the pipe is full)."""

    def __init__(
        self,
        writer: asyncio.StreamWriter,
        incoming: _Counting | None = None,
        idle: Idle | None = None,
    ) -> None:
        self._writer = writer
        self._incoming, self._idle = incoming, idle
        self._busy = False
        #: the pending idle check (one at a time: only the latest reply's matters)
        self._timer: asyncio.TimerHandle | None = None

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))
        await self._writer.drain()
        if self._idle is not None and self._incoming is not None:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = asyncio.get_running_loop().call_later(
                IDLE_DELAY, self._when_idle, self._incoming.received
            )

    def stop(self) -> None:
        """No idle work from now on (the wire is closing; ``close`` settles): a check left
        pending would fire while asyncio shuts its executor down."""
        self._idle = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _when_idle(self, received: int) -> None:
        self._timer = None
        if self._idle is None or self._incoming is None or self._incoming.received != received:
            return  # a request came in: its own reply schedules this again
        if not self._busy:  # in a worker thread: the loop keeps reading meanwhile
            self._busy = True
            asyncio.get_running_loop().run_in_executor(None, self._run_idle, self._idle, received)

    def _run_idle(self, idle: Idle, received: int) -> None:
        incoming = self._incoming
        try:  # until a byte of the next request arrives: then that request goes first
            idle(lambda: incoming is not None and incoming.received != received)
        except Exception:  # deferred work only: whoever deferred it redoes it (a read settles first)
            log.warning("idle work after a reply failed", exc_info=True)
        finally:
            self._busy = False

    async def flush(self) -> None:
        """Nothing buffered here: ``write`` hands the bytes to the pipe."""


def _divert(fd: int, flags: int, target: int | None) -> tuple[int, int]:
    """A private close-on-exec copy of ``fd`` for the wire, and ``fd`` pointed at ``target`` (the
    null device when None). Returns (private copy, a copy of the original to restore)."""
    import fcntl  # POSIX only, as this transport

    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    saved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    replacement = os.open(os.devnull, flags) if target is None else os.dup(target)
    try:
        os.dup2(replacement, fd)
    finally:
        os.close(replacement)
    return private, saved


@asynccontextmanager
async def pipe_streams(
    idle: Idle | None = None,
) -> AsyncIterator[tuple[LineReader, LineWriter]]:
    """The wire as (lines in, replies out) on the running asyncio loop; fd 0 and fd 1 diverted
    meanwhile and restored after (with their blocking mode: the descriptions may be shared);
    ``idle`` as the module says."""
    loop = asyncio.get_running_loop()
    in_fd, in_saved = _divert(0, os.O_RDONLY, None)
    out_fd, out_saved = _divert(1, os.O_WRONLY, 2)
    blocking = (os.get_blocking(in_fd), os.get_blocking(out_fd))
    transports: list[asyncio.BaseTransport] = []
    try:
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        incoming = _Counting(reader)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: incoming, os.fdopen(in_fd, "rb", buffering=0, closefd=False)
        )
        transports.append(read_transport)
        write_transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(out_fd, "wb", buffering=0, closefd=False)
        )
        transports.append(write_transport)
        # drain() then waits until the pipe took every byte (the SDK's flush), so nothing is
        # left in a buffer when the transport closes
        write_transport.set_write_buffer_limits(high=0)
        writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        lines_out = LineWriter(writer, incoming, idle)
        try:
            yield LineReader(reader), lines_out
        finally:
            lines_out.stop()
    finally:
        for transport in transports:
            transport.close()
        for fd, was_blocking in zip((in_fd, out_fd), blocking, strict=True):
            os.set_blocking(fd, was_blocking)
        for fd, saved in ((0, in_saved), (1, out_saved)):
            os.dup2(saved, fd)
            os.close(saved)
        os.close(in_fd)
        os.close(out_fd)
