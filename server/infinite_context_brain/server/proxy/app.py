"""The proxy's ASGI application: screen each request, forward it to the upstream, transform two
bodies.

Every request is first screened (``guard``: origin-form target, a loopback ``Host`` with our
port, no browser ``Origin``); its body is read within ``body_timeout`` and up to ``max_body``
bytes (else the Messages API's 408 / 413 error). ``POST /v1/messages`` and
``POST /v1/messages/count_tokens`` bodies then go through the live transform
(``core.transcript.live``) in a worker thread, so a large body never stalls the event loop;
every other request, and any body the transform cannot handle, is forwarded as received (fail
open: one log line, never an error of ours). Headers pass through untouched except the
hop-by-hop ones (host, content-length, connection...), which belong to each connection; they are
never logged or stored. Responses stream back chunk by chunk as they arrive (``aiter_raw``: SSE
bytes and any content-encoding untouched). A client that disconnects cancels the upstream request.

``GET /_infinite_context_brain/status`` (never forwarded) answers with the proxy's figures and the
upstream without its user name or password; with a nonce header, also the proof that this is the
user's proxy (``identity``). Nothing in it says where the user's files or keys are.
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import time
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx2
import orjson

from infinite_context_brain.core.transcript.live import LiveStats, LiveTransformer

from .config import STATUS_PATH, shown_upstream
from .guard import Refusal, allowed_hosts, error_body, screen, upstream_url
from .identity import NONCE_HEADER, proof

log = logging.getLogger("infinite_context_brain.proxy")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

TRANSFORMED = frozenset({"/v1/messages", "/v1/messages/count_tokens"})
#: the beta a request whose breakpoints ask for the 1-hour lifetime names (as Claude Code does)
LONG_CACHE_BETA = b"extended-cache-ttl-2025-04-11"
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
BODY_TIMEOUT = 60.0
#: a Claude Code session id, as its header and its metadata carry it
_SESSION = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


@dataclass
class ProxyFigures:
    """What the proxy did since it started (no request content, no headers)."""

    started_at: float = field(default_factory=time.time)
    requests: int = 0
    transformed: int = 0
    failed_open: int = 0
    refused: int = 0
    upstream_errors: int = 0
    epochs: int = 0
    seen_once: int = 0  # results replaced on the request after the model first read them
    cache_moves: int = 0  # requests whose last cache breakpoint moved back
    held: int = 0  # requests that carried the breakpoint held before the undecided results
    long_cache: int = 0  # requests whose breakpoints asked for the 1-hour lifetime
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
        self.held += stats.held
        self.long_cache += stats.long_cache
        self.tokens_before += stats.tokens_before
        self.tokens_after += stats.tokens_after
        self.last_before, self.last_after = stats.tokens_before, stats.tokens_after
        self.last_overhead_ms = round(stats.elapsed_ms, 2)


class ProxyApp:
    def __init__(
        self,
        upstream: str,
        transformer: LiveTransformer,
        *,
        port: int,
        timeout: float,
        max_body: int,
        key: bytes,
        connect_timeout: float = 10.0,
        body_timeout: float = BODY_TIMEOUT,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.base = httpx2.URL(self.upstream)
        self.transformer = transformer
        self.hosts = allowed_hosts(port)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_body = max_body
        self.body_timeout = body_timeout
        self.key = key
        self.figures = ProxyFigures()
        self.pool = ThreadPoolExecutor(2, "ic-proxy-transform")
        self._client: httpx2.AsyncClient | None = None

    def client(self) -> httpx2.AsyncClient:
        if self._client is None:
            limits = httpx2.Limits(max_connections=100, max_keepalive_connections=20)
            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(self.timeout, connect=self.connect_timeout),
                limits=limits,
                follow_redirects=False,
                trust_env=False,  # the upstream is what we were given, not a proxy variable
                # a request's head and body go out as two writes: without TCP_NODELAY the body
                # waits for the upstream's delayed acknowledgement of the head
                transport=httpx2.AsyncHTTPTransport(
                    limits=limits,
                    trust_env=False,
                    socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
                ),
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        self.pool.shutdown(wait=False, cancel_futures=True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        refusal = screen(dict(scope), self.hosts)
        if refusal is not None:
            self.figures.refused += 1
            await self._refuse(send, refusal)
            return
        if scope["path"] == STATUS_PATH and scope["method"] == "GET":
            nonce = next((v for k, v in scope["headers"] if k == NONCE_HEADER.encode()), None)
            await self._reply(send, 200, orjson.dumps(self.status(nonce)), b"application/json")
            return
        await self._forward(scope, receive, send)

    def status(self, nonce: bytes | None = None) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "service": "infinite-context-proxy",
            "upstream": shown_upstream(self.upstream),
        }
        answer.update(asdict(self.figures))
        if nonce is not None:
            answer["proof"] = proof(self.key, nonce.decode("latin-1")[:128])
        return answer

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _reply(
        self,
        send: Send,
        status: int,
        body: bytes,
        kind: bytes,
        extra: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode()), *(extra or [])]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _refuse(self, send: Send, refusal: Refusal) -> None:
        await self._reply(
            send, refusal.status, refusal.body(), b"application/json", [(b"connection", b"close")]
        )

    async def _read_body(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        """The whole body, or None after answering 413 / 408 (or when the client left)."""
        declared = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        too_large = Refusal(
            413,
            "request_too_large",
            f"request exceeds the local proxy's limit of {self.max_body:,} bytes "
            "(INFINITE_CONTEXT_PROXY_MAX_BODY_MB)",
        )
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            await self._refuse(send, too_large)
            return None
        parts: list[bytes] = []
        size = 0
        deadline = time.monotonic() + self.body_timeout
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                await self._refuse(
                    send, Refusal(408, "timeout_error", "the request body did not arrive in time")
                )
                return None
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await self._refuse(send, too_large)
                return None
            parts.append(chunk)
            if not message.get("more_body"):
                return b"".join(parts)

    def _transform(self, method: str, path: str, body: bytes, session: str | None) -> tuple[bytes, bool]:
        """The body to forward, and whether its breakpoints now ask for the 1-hour lifetime."""
        if method != "POST" or path not in TRANSFORMED or not body:
            return body, False
        try:
            out, stats = self.transformer.transform_body(body, caches=path == "/v1/messages", session=session)
        except Exception as exc:  # fail open: the original goes, one line says why
            self.figures.failed_open += 1
            log.warning("transform failed, forwarding the original body: %s", type(exc).__name__)
            return body, False
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
        return out, stats.long_cache

    async def _forward(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.figures.requests += 1
        body = await self._read_body(scope, receive, send)
        if body is None:
            return
        method, path = scope["method"], scope["path"]
        long_cache = False
        if method == "POST" and path in TRANSFORMED and body:
            loop = asyncio.get_running_loop()
            session = claude_session(scope["headers"], body)
            body, long_cache = await loop.run_in_executor(
                self.pool, self._transform, method, path, body, session
            )
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP]
        if long_cache:
            headers = with_beta(headers, LONG_CACHE_BETA)
        target = upstream_url(self.base, scope["raw_path"], scope.get("query_string") or b"")
        client = self.client()
        request = client.build_request(method, target, headers=headers, content=body)
        try:
            response = await client.send(request, stream=True)
        except httpx2.TimeoutException:
            self.figures.upstream_errors += 1
            log.warning("upstream timed out: %s %s", method, path)
            await self._reply(
                send, 504, error_body("timeout_error", "upstream timed out"), b"application/json"
            )
            return
        except httpx2.HTTPError as exc:
            self.figures.upstream_errors += 1
            log.warning("upstream unreachable: %s %s (%s)", method, path, type(exc).__name__)
            message = (
                f"infinite-context proxy: upstream {shown_upstream(self.upstream)} unreachable "
                f"({type(exc).__name__})"
            )
            await self._reply(send, 502, error_body("api_error", message), b"application/json")
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


def with_beta(headers: list[tuple[bytes, bytes]], beta: bytes) -> list[tuple[bytes, bytes]]:
    """``headers`` with ``beta`` added to the ``anthropic-beta`` list when the client sent one
    (a client that sends no betas, e.g. with experimental betas turned off, gets none)."""
    out = []
    for name, value in headers:
        if name.lower() == b"anthropic-beta":
            names = [v.strip() for v in value.split(b",")]
            if beta not in names:
                value = value + b"," + beta if value.strip() else beta
        out.append((name, value))
    return out


def claude_session(headers: list[tuple[bytes, bytes]], body: bytes) -> str | None:
    """The Claude Code session a request belongs to: its ``x-claude-code-session-id`` header,
    else the session id in ``metadata.user_id`` (searched in the body's last bytes, where Claude
    Code puts it, without parsing the body again)."""
    for name, value in headers:
        if name == b"x-claude-code-session-id":
            found = _SESSION.fullmatch(value.decode("latin-1").strip())
            return found.group(0).lower() if found else None
    head = body[-4096:].decode("utf-8", "replace")  # metadata follows the messages
    marker = head.find('"metadata"')
    found = _SESSION.search(head, marker) if marker >= 0 else None
    return found.group(0).lower() if found else None
