"""The proxy's ASGI application: forward everything to the upstream, transform two bodies.

``POST /v1/messages`` and ``POST /v1/messages/count_tokens`` bodies go through the live transform
(``core.transcript.live``); every other request, and any body the transform cannot handle, is
forwarded as received (fail open: one log line, never an error of ours). Headers pass through
untouched except the hop-by-hop ones (host, content-length, connection...), which belong to each
connection; they are never logged or stored. Responses stream back chunk by chunk as they arrive
(``aiter_raw``: SSE bytes and any content-encoding untouched). A client that disconnects cancels
the upstream request.

``GET /_infinite_context_brain/status`` (never forwarded) answers with the proxy's own figures: the
status of ``infinite-context proxy status`` and of the editor's status bar.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from infinite_context_brain.core.transcript.live import LiveStats, LiveTransformer

from .process import STATUS_PATH

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger("infinite_context_brain.proxy")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

TRANSFORMED = frozenset({"/v1/messages", "/v1/messages/count_tokens"})
#: belong to one connection, not to the message (RFC 9110 7.6.1), plus what the body change redoes
HOP_BY_HOP = frozenset(
    {
        b"host",
        b"content-length",
        b"connection",
        b"keep-alive",
        b"transfer-encoding",
        b"te",
        b"trailer",
        b"upgrade",
        b"proxy-connection",
        b"proxy-authenticate",
        b"proxy-authorization",
    }
)


@dataclass
class ProxyFigures:
    """What the proxy did since it started (no request content, no headers)."""

    started_at: float = field(default_factory=time.time)
    requests: int = 0
    transformed: int = 0
    failed_open: int = 0
    upstream_errors: int = 0
    epochs: int = 0
    seen_once: int = 0  # results replaced on the request after the model first read them
    cache_moves: int = 0  # requests whose last cache breakpoint moved before a result sent once
    tokens_before: int = 0  # tool-result tokens received, summed over requests
    tokens_after: int = 0  # tool-result tokens forwarded
    last_before: int = 0  # the last transformed request's tool-result tokens
    last_after: int = 0
    last_overhead_ms: float = 0.0

    def record(self, stats: LiveStats) -> None:
        self.transformed += 1
        self.epochs += stats.epoch
        self.seen_once += stats.seen_once
        self.cache_moves += stats.cache_moved
        self.tokens_before += stats.tokens_before
        self.tokens_after += stats.tokens_after
        self.last_before, self.last_after = stats.tokens_before, stats.tokens_after
        self.last_overhead_ms = round(stats.elapsed_ms, 2)


def _error_body(kind: str, message: str) -> bytes:
    """An error in the Messages API's own shape, so the client shows it as it shows the API's."""
    return orjson.dumps({"type": "error", "error": {"type": kind, "message": message}})


class ProxyApp:
    def __init__(
        self,
        upstream: str,
        transformer: LiveTransformer,
        *,
        timeout: float,
        connect_timeout: float = 10.0,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.transformer = transformer
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.figures = ProxyFigures()
        self._client: httpx2.AsyncClient | None = None

    def client(self) -> httpx2.AsyncClient:
        if self._client is None:
            import httpx2

            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(self.timeout, connect=self.connect_timeout),
                limits=httpx2.Limits(max_connections=100, max_keepalive_connections=20),
                follow_redirects=False,
                trust_env=False,  # the upstream is what we were given, not a proxy variable
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["path"] == STATUS_PATH and scope["method"] == "GET":
            await self._reply(send, 200, orjson.dumps(self.status()), b"application/json")
            return
        await self._forward(scope, receive, send)

    def status(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "upstream": self.upstream, **asdict(self.figures)}

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _reply(self, send: Send, status: int, body: bytes, kind: bytes) -> None:
        headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _read_body(self, receive: Receive) -> bytes | None:
        parts: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            parts.append(message.get("body", b""))
            if not message.get("more_body"):
                return b"".join(parts)

    def _transform(self, method: str, path: str, body: bytes) -> bytes:
        if method != "POST" or path not in TRANSFORMED or not body:
            return body
        try:
            out, stats = self.transformer.transform_body(body, caches=path == "/v1/messages")
        except Exception as exc:  # fail open: the original goes, one line says why
            self.figures.failed_open += 1
            log.warning("transform failed, forwarding the original body: %s", type(exc).__name__)
            return body
        self.figures.record(stats)
        if stats.epoch:
            log.info(
                "epoch: %d results decided (%d read once, sweep: %s); tool-result tokens %d -> %d",
                stats.decided,
                stats.seen_once,
                stats.sweep,
                stats.tokens_before,
                stats.tokens_after,
            )
        return out

    async def _forward(self, scope: Scope, receive: Receive, send: Send) -> None:
        import httpx2

        self.figures.requests += 1
        body = await self._read_body(receive)
        if body is None:
            return
        method, path = scope["method"], scope["path"]
        body = self._transform(method, path, body)
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP]
        target = self.upstream + (scope.get("raw_path") or path.encode()).decode("latin-1")
        if scope.get("query_string"):
            target += "?" + scope["query_string"].decode("latin-1")
        client = self.client()
        request = client.build_request(method, target, headers=headers, content=body)
        try:
            response = await client.send(request, stream=True)
        except httpx2.TimeoutException:
            self.figures.upstream_errors += 1
            log.warning("upstream timed out: %s %s", method, path)
            await self._reply(
                send, 504, _error_body("timeout_error", "upstream timed out"), b"application/json"
            )
            return
        except httpx2.HTTPError as exc:
            self.figures.upstream_errors += 1
            log.warning("upstream unreachable: %s %s (%s)", method, path, type(exc).__name__)
            message = f"infinite-context proxy: upstream {self.upstream} unreachable ({type(exc).__name__})"
            await self._reply(send, 502, _error_body("api_error", message), b"application/json")
            return
        await self._stream_back(response, receive, send)

    async def _stream_back(self, response: httpx2.Response, receive: Receive, send: Send) -> None:
        """Send the response as it arrives; stop (closing the upstream) when the client leaves."""
        out_headers = [(k, v) for k, v in response.headers.raw if k.lower() not in HOP_BY_HOP]
        length = response.headers.get("content-length")
        if length is not None and not response.headers.get("transfer-encoding"):
            out_headers.append((b"content-length", length.encode()))

        async def pump() -> None:
            await send(
                {"type": "http.response.start", "status": response.status_code, "headers": out_headers}
            )
            async for chunk in response.aiter_raw():
                if chunk:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        pumping = asyncio.ensure_future(pump())
        watching = asyncio.ensure_future(watch())
        try:
            done, _ = await asyncio.wait({pumping, watching}, return_when=asyncio.FIRST_COMPLETED)
            if pumping not in done:
                pumping.cancel()
                log.info("client disconnected mid-response; upstream request closed")
            for task in done:
                if task is pumping and not task.cancelled() and task.exception() is not None:
                    self.figures.upstream_errors += 1
                    log.warning("response stream ended early: %s", type(task.exception()).__name__)
        finally:
            watching.cancel()
            await asyncio.gather(pumping, watching, return_exceptions=True)
            await response.aclose()
