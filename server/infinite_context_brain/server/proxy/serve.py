"""Run the proxy in this process (``infinite-context proxy run``).

The order makes each step's failure clear and leaves nothing half-started: take the lock (one
proxy per user), bind the socket (a taken port fails here, before anything is written), write
``proxy.json``, then hand the bound socket to uvicorn's public ``Server.serve(sockets=[...])``.
uvicorn serves the ASGI app (``app``) with the per-request head deadline (``protocol``), its
keep-alive timeout and a connection cap.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import signal
import socket
import sys
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import uvicorn

from infinite_context_brain.core.transcript.live import LiveTransformer

from .app import ProxyApp
from .config import HOST, ProxyConfig, shown_upstream
from .files import INFO, LOCK, open_file, private_folder, secret, write_private
from .protocol import HeadTimeoutH11
from .store import StoreBridge, live_options

if TYPE_CHECKING:
    from infinite_context_brain.core.config import Settings

log = logging.getLogger("infinite_context_brain.proxy")

#: connections served at once (uvicorn answers 503 past it)
MAX_CONNECTIONS = 64
KEEP_ALIVE = 5


def bind(port: int) -> socket.socket:
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY on accepted connections only for sockets that
    # say so, and without it each response's head and body wait on delayed ACKs
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock


def serve(data_dir: Path, config: ProxyConfig, settings: Settings) -> int:
    """Run the proxy until SIGINT/SIGTERM; 1 when one already runs or the port is taken."""
    folder = private_folder(data_dir)
    lock = open_file(folder / LOCK, os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        sys.stderr.write(f"error: a proxy already runs for this user (see {folder / INFO})\n")
        return 1
    try:
        try:
            sock = bind(config.port)
        except OSError as exc:
            sys.stderr.write(f"error: cannot listen on {HOST}:{config.port}: {exc.strerror or exc}\n")
            return 1
        with sock:
            return _run(data_dir, folder, sock, config, settings)
    finally:
        os.close(lock)


def _run(data_dir: Path, folder: Path, sock: socket.socket, config: ProxyConfig, settings: Settings) -> int:
    bridge = StoreBridge(settings)
    transformer = LiveTransformer(
        options=live_options(settings), lookup=bridge.lookup, persist=bridge.persist
    )
    app = ProxyApp(
        config.upstream,
        transformer,
        port=config.port,
        timeout=settings.proxy_timeout,
        max_body=settings.proxy_max_body_mb * 1024 * 1024,
        key=secret(data_dir),
        body_timeout=settings.proxy_body_timeout,
    )
    protocol = type("HeadTimeoutH11", (HeadTimeoutH11,), {"head_timeout": settings.proxy_head_timeout})
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="on",
            http=protocol,
            limit_concurrency=MAX_CONNECTIONS,
            timeout_keep_alive=KEEP_ALIVE,
            timeout_graceful_shutdown=5,
            server_header=False,
            date_header=False,
        )
    )
    info = folder / INFO
    shown = shown_upstream(config.upstream)
    data = {
        "pid": os.getpid(),
        "port": config.port,
        "url": config.url,
        "upstream": shown,
        "started_at": time.time(),
    }
    write_private(info, json.dumps(data) + "\n")
    log.info("proxy listening on %s, upstream %s", config.url, shown)

    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then raises the signal again for the
    # handler that was there before: make that one a clean exit, so the files below are cleaned.
    def leave(_signum: int, _frame: FrameType | None) -> None:
        sys.exit(0)

    previous = signal.signal(signal.SIGTERM, leave)
    try:
        asyncio.run(server.serve(sockets=[sock]))
    finally:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(info.read_text()).get("pid") == os.getpid():
                info.unlink()
        transformer.close()
        bridge.close()
        signal.signal(signal.SIGTERM, previous)
    return 0 if server.started else 1
