"""uvicorn's h11 protocol with a deadline on each request's head.

uvicorn closes a keep-alive connection that stays idle after a response, but a connection that
opens and sends nothing, or half a request line or headers, stays open for ever. This subclass,
handed to uvicorn as ``Config(http=...)``, closes a connection whose next request head has not
arrived ``HEAD_TIMEOUT`` seconds after it opened or after the previous response. The body's own
deadline is the application's (``app``), which reads it. It reads one attribute of uvicorn's
protocol, ``cycle`` (the request being served), to know a head arrived; the raw-socket tests of
slow and idle clients (``tests/server/test_proxy_guard.py``) pin that behaviour.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_TIMEOUT = 10.0


class HeadTimeoutH11(H11Protocol):
    head_timeout = HEAD_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.head_deadline: asyncio.TimerHandle | None = None
        self.head_for: object | None = None  # the request cycle whose head arrived last

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.arm_head_deadline()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.cycle is not None and self.cycle is not self.head_for:  # a request's head arrived
            self.head_for = self.cycle
            self.disarm_head_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.cycle is self.head_for:  # no pipelined request started: wait for the next head
            self.arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self.disarm_head_deadline()
        super().connection_lost(exc)

    def arm_head_deadline(self) -> None:
        self.disarm_head_deadline()
        self.head_deadline = asyncio.get_running_loop().call_later(self.head_timeout, self.head_expired)

    def disarm_head_deadline(self) -> None:
        if self.head_deadline is not None:
            self.head_deadline.cancel()
            self.head_deadline = None

    def head_expired(self) -> None:
        self.head_deadline = None
        if not self.transport.is_closing():
            self.transport.close()
