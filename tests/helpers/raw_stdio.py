"""Raw stdio clients for the two servers: send bytes a real client library would refuse to send
(lone surrogates, 100k-deep nesting, frames without Content-Length) and read the replies.
Used by tests/server/test_protocol_faults.py and benchmarks/probe.py."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PYTHON = sys.executable


class RawServer:
    """One server process (``infinite-context ARGS``, or ``command + ARGS``); ``reply(id)`` waits
    for the message answering ``id``."""

    def __init__(
        self,
        args: list[str],
        cwd: Path,
        env: dict[str, str],
        framed: bool,
        command: list[str] | None = None,
    ) -> None:
        self.framed = framed
        self.stderr_path = cwd / f".stderr-{os.getpid()}-{id(self)}.log"
        self.proc = subprocess.Popen(
            [*(command or [PYTHON, "-m", "infinite_context_brain.server"]), *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr_path.open("wb"),
        )
        self.buffer = b""
        self.messages: list[dict[str, Any]] = []

    # ---- writing ---------------------------------------------------------------------------
    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, text: str | bytes) -> None:
        body = text.encode() if isinstance(text, str) else text
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body if self.framed else body + b"\n")

    def request(self, msg_id: Any, method: str, params: Any) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))

    def notify(self, method: str, params: Any) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}))

    # ---- reading ---------------------------------------------------------------------------
    def _next(self) -> dict[str, Any] | None:
        if self.framed:
            if b"\r\n\r\n" not in self.buffer:
                return None
            head, rest = self.buffer.split(b"\r\n\r\n", 1)
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
            if len(rest) < length:
                return None
            self.buffer = rest[length:]
            return dict(json.loads(rest[:length]))
        if b"\n" not in self.buffer:
            return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        return dict(json.loads(line))

    def reply(self, msg_id: Any, timeout: float = 5.0) -> dict[str, Any] | None:
        """The reply to ``msg_id`` (None on timeout); other messages are kept in ``messages``."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while True:
            for n, message in enumerate(self.messages):
                if message.get("id") == msg_id and ("result" in message or "error" in message):
                    return self.messages.pop(n)
            found = self._next()
            if found is not None:
                self.messages.append(found)
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not chunk:
                return None
            self.buffer += chunk

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.stderr_path.unlink(missing_ok=True)


def mcp_handshake(server: RawServer, timeout: float = 20) -> None:
    """``initialize`` (id 0) answered, then ``notifications/initialized``: an MCP client's start."""
    server.request(
        0,
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    )
    assert server.reply(0, timeout) is not None, server.stderr()
    server.notify("notifications/initialized", {})


def start_mcp(cwd: Path, env: dict[str, str]) -> RawServer:
    server = RawServer(["mcp"], cwd, env, framed=False)
    mcp_handshake(server)
    return server


def start_lsp(cwd: Path, env: dict[str, str]) -> RawServer:
    server = RawServer(["lsp", "--stdio"], cwd, env, framed=True)
    server.request(0, "initialize", {"processId": None, "rootUri": cwd.as_uri(), "capabilities": {}})
    assert server.reply(0, 20) is not None, server.stderr()
    server.notify("initialized", {})
    return server


def tool_call(msg_id: int, name: str, arguments_json: str) -> str:
    """A tools/call request whose arguments are given as raw JSON text (may be invalid JSON)."""
    return (
        f'{{"jsonrpc":"2.0","id":{msg_id},"method":"tools/call",'
        f'"params":{{"name":"{name}","arguments":{arguments_json}}}}}'
    )


def lsp_request(msg_id: int, method: str, params_json: str) -> str:
    return f'{{"jsonrpc":"2.0","id":{msg_id},"method":"{method}","params":{params_json}}}'


def has_traceback(message: dict[str, Any] | None) -> bool:
    text = json.dumps(message or {})
    return "Traceback" in text or '"traceback"' in text
