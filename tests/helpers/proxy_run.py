"""The real proxy process (``infinite-context proxy run``) and a recording fake upstream, for the
proxy tests; raw-socket requests so a test sends exactly the bytes it means."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PROXY_RUN = [sys.executable, "-m", "infinite_context_brain.server", "proxy", "run"]
STATUS = "/_infinite_context_brain/status"
SSE_CHUNKS = [f'event: content_block_delta\ndata: {{"i": {i}}}\n\n'.encode() for i in range(5)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Upstream:
    url: str = ""
    port: int = 0
    #: (path, body, headers) of every request, in the order they arrived
    seen: list[tuple[str, bytes, dict[str, str]]] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)


@contextmanager
def fake_upstream() -> Iterator[Upstream]:
    """Records each request; ``/status/<code>`` answers that error, ``/slow`` after 3 s,
    ``count_tokens`` with the body's length, everything else with a chunked SSE stream
    (``/v1/messages-slowstream``: slowly)."""
    up = Upstream()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            up.seen.append((self.path, b"", {k.lower(): v for k, v in self.headers.items()}))
            self.send_response(200)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            up.seen.append((self.path, body, {k.lower(): v for k, v in self.headers.items()}))
            if self.path.startswith("/status/"):
                reply = b'{"type":"error","error":{"type":"overloaded_error","message":"busy"}}'
                self.send_response(int(self.path.split("/")[2]))
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)
                return
            if self.path.startswith("/slow"):
                time.sleep(3)
            if "count_tokens" in self.path:
                reply = json.dumps({"input_tokens": len(body)}).encode()
                self.send_response(200)
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            try:
                for chunk in SSE_CHUNKS:
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                    time.sleep(0.15 if self.path.startswith("/v1/messages-slowstream") else 0.01)
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                up.aborted.append(self.path)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    up.port = server.server_address[1]
    up.url = f"http://127.0.0.1:{up.port}"
    try:
        yield up
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Proxy:
    port: int
    data: Path
    child: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def status(self) -> dict[str, object]:
        status, _headers, body = raw(self.port, get(STATUS, self.port))
        assert status == 200, body
        answer: dict[str, object] = json.loads(body)
        return answer


def proxy_env(data: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INFINITE_CONTEXT_", "ANTHROPIC_"))}
    env.update(INFINITE_CONTEXT_DATA_DIR=str(data), HOME=str(data / "home"), **extra)
    return env


@contextmanager
def running_proxy(data: Path, upstream: str, **extra: str) -> Iterator[Proxy]:
    """``proxy run`` on a free port until the test ends (SIGTERM, then it must exit 0)."""
    data.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = data / "stderr.log"
    with open(log, "wb") as handle:
        child = subprocess.Popen(
            [*PROXY_RUN, "--port", str(port), "--upstream", upstream],
            env=proxy_env(data, **extra),
            stderr=handle,
        )
    proxy = Proxy(port, data, child, log)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            if raw(port, get(STATUS, port), timeout=0.5)[0] == 200:
                break
        except OSError:
            time.sleep(0.02)
    else:
        child.kill()
        raise AssertionError(f"the proxy did not start: {log.read_text()}")
    try:
        yield proxy
    finally:
        child.terminate()
        code = child.wait(15)
        assert code == 0, log.read_text()


def get(path: str, port: int, host: str | None = None, extra: str = "") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: {host or f'127.0.0.1:{port}'}\r\n{extra}\r\n".encode()


def post(target: str, body: bytes, port: int, host: str | None = None, extra: str = "") -> bytes:
    head = (
        f"POST {target} HTTP/1.1\r\nHost: {host or f'127.0.0.1:{port}'}\r\ncontent-type: application/json\r\n"
        f"x-api-key: sk-ant-test\r\ncontent-length: {len(body)}\r\n{extra}\r\n"
    )
    return head.encode() + body


def raw(port: int, request: bytes, timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` as is on a new connection; the response's status, headers and body (a
    chunked body is joined)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        return read_response(sock)


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before a response: {data!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    if "content-length" in headers:
        size = int(headers["content-length"])
        while len(rest) < size:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        return status, headers, rest[:size]
    if headers.get("transfer-encoding") == "chunked":
        while not rest.endswith(b"0\r\n\r\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        body = b""
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line, 16)
            if size == 0:
                break
            body, rest = body + rest[:size], rest[size + 2 :]
        return status, headers, body
    while chunk := sock.recv(65536):
        rest += chunk
    return status, headers, rest


@contextmanager
def impostor(port: int, user: int | None = None) -> Iterator[None]:
    """A listener on ``port`` that answers the status route like the proxy, without the key, and
    refuses every POST (run as ``user`` when given)."""
    code = (
        "import http.server, json, sys\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        body = json.dumps({'service': 'infinite-context-proxy', 'proof': '00' * 32}).encode()\n"
        "        self.send_response(200); self.send_header('content-length', str(len(body)))\n"
        "        self.end_headers(); self.wfile.write(body)\n"
        "    def do_POST(self):\n"
        '        body = b\'{"type":"error","error":{"type":"invalid_request_error","message":"no"}}\'\n'
        "        self.send_response(400); self.send_header('content-length', str(len(body)))\n"
        "        self.end_headers(); self.wfile.write(body)\n"
        "    def log_message(self, *a): pass\n"
        f"http.server.HTTPServer(('127.0.0.1', {port}), H).serve_forever()\n"
    )
    # the system interpreter: another user may not reach this one (only the standard library is used)
    python = "/usr/bin/python3" if user is not None and Path("/usr/bin/python3").exists() else sys.executable
    child = subprocess.Popen([python, "-c", code], user=user, cwd="/")
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.02)
        yield
    finally:
        child.kill()
        child.wait()
