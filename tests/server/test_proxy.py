"""The real proxy process (``infinite-context proxy run``) against a fake upstream on loopback:
streams pass byte for byte, count_tokens sees the transformed body, headers pass and are never
logged, upstream errors and timeouts come back as such, a malformed body is forwarded untouched,
and a client leaving mid-stream leaves the proxy serving."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pytest

PROXY_RUN = [sys.executable, "-m", "infinite_context_brain.server", "proxy", "run"]
SECRET = "sk-ant-api03-proxy-test-" + "k" * 30
CHUNKS = [f'event: content_block_delta\ndata: {{"i": {i}}}\n\n'.encode() for i in range(5)]


@dataclass
class Upstream:
    url: str = ""
    bodies: list[tuple[str, bytes, dict[str, str]]] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    up = Upstream()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            up.bodies.append((self.path, body, {k.lower(): v for k, v in self.headers.items()}))
            if self.path.startswith("/status/"):
                code = int(self.path.split("/")[2])
                reply = b'{"type":"error","error":{"type":"overloaded_error","message":"busy"}}'
                self.send_response(code)
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
                for chunk in CHUNKS:
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                    time.sleep(0.15 if self.path.startswith("/v1/messages-slowstream") else 0.01)
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                up.aborted.append(self.path)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    up.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield up
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def proxy(upstream: Upstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    data = tmp_path_factory.mktemp("proxy-data")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFINITE_CONTEXT_")}
    env.update(
        INFINITE_CONTEXT_DATA_DIR=str(data),
        INFINITE_CONTEXT_PROXY_TIMEOUT="1",
        INFINITE_CONTEXT_PROXY_EPOCH_TOKENS="1000",
        LOG_LEVEL="DEBUG",
    )
    log = open(data / "stderr.log", "wb")  # noqa: SIM115
    child = subprocess.Popen(
        [*PROXY_RUN, "--port", str(port), "--upstream", upstream.url],
        env=env,
        stderr=log,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            httpx2.get(url + "/_infinite_context_brain/status", timeout=0.2)
            break
        except httpx2.HTTPError:
            time.sleep(0.02)
    yield url, data
    child.terminate()
    assert child.wait(10) == 0
    log.close()
    assert not (data / "proxy" / "proxy.json").exists()  # cleaned up on SIGTERM
    logged = (data / "stderr.log").read_bytes()
    assert SECRET.encode() not in logged and b"x-api-key" not in logged.lower()


HEADERS = {
    "x-api-key": SECRET,
    "authorization": f"Bearer {SECRET}",
    "anthropic-beta": "interleaved-thinking-2025-05-14",
    "anthropic-version": "2023-06-01",
    "content-type": "application/json",
}


def history(results: int = 6) -> bytes:
    messages = []
    for i in range(results):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "sig+/=="},
                    {"type": "tool_use", "id": f"toolu_px{i}", "name": "Bash", "input": {"command": "ls"}},
                ],
            }
        )
        out = "\n".join(f"src/module_{i}_{n}.py" for n in range(300))
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_px{i}", "content": out}],
            }
        )
    return json.dumps({"model": "m", "messages": messages, "system": "sys", "stream": True}).encode()


def test_stream_passes_byte_for_byte_with_headers(proxy: tuple[str, Path], upstream: Upstream) -> None:
    url, _ = proxy
    body = b'{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}'
    with httpx2.stream("POST", url + "/v1/messages?beta=true", content=body, headers=HEADERS) as reply:
        got = b"".join(reply.iter_raw())
    assert reply.status_code == 200 and got == b"".join(CHUNKS)
    path, sent, headers = upstream.bodies[-1]
    assert path == "/v1/messages?beta=true" and sent == body  # nothing to change: the same bytes
    assert headers["x-api-key"] == SECRET and headers["authorization"] == f"Bearer {SECRET}"
    assert headers["anthropic-beta"] == HEADERS["anthropic-beta"]


def test_messages_and_count_tokens_are_transformed(proxy: tuple[str, Path], upstream: Upstream) -> None:
    url, _ = proxy
    raw = history()
    counted = httpx2.post(url + "/v1/messages/count_tokens", content=raw, headers=HEADERS)
    assert counted.status_code == 200 and counted.json()["input_tokens"] < len(raw) / 2
    sent = json.loads(upstream.bodies[-1][1])
    results = [m["content"][0]["content"] for m in sent["messages"] if m["role"] == "user"]
    assert results[0].startswith("[endless-mode") and "expand toolu_px0" in results[0].replace("`", "")
    assert results[-1] == json.loads(raw)["messages"][-1]["content"][0]["content"]  # recent: whole
    assert sent["messages"][0] == json.loads(raw)["messages"][0]  # thinking + signature untouched
    # the next turn renders the same bytes for what was decided
    httpx2.post(url + "/v1/messages", content=raw, headers=HEADERS).read()
    again = json.loads(upstream.bodies[-1][1])
    assert again["messages"] == sent["messages"]
    status = httpx2.get(url + "/_infinite_context_brain/status").json()
    assert status["tokens_after"] < status["tokens_before"] and status["epochs"] >= 1
    assert status["seen_once"] >= 0 and status["cache_moves"] >= 0  # added beside the fields above


def test_malformed_body_goes_untouched(proxy: tuple[str, Path], upstream: Upstream) -> None:
    url, _ = proxy
    body = b'{"messages": [ this is not json'
    httpx2.post(url + "/v1/messages", content=body, headers=HEADERS).read()
    assert upstream.bodies[-1][1] == body
    assert httpx2.get(url + "/_infinite_context_brain/status").json()["failed_open"] >= 1


@pytest.mark.parametrize("code", [400, 401, 429, 500, 529])
def test_upstream_errors_pass_through(proxy: tuple[str, Path], code: int) -> None:
    url, _ = proxy
    reply = httpx2.post(url + f"/status/{code}", content=b"{}", headers=HEADERS)
    assert reply.status_code == code and reply.json()["error"]["type"] == "overloaded_error"


def test_upstream_timeout_and_unreachable(proxy: tuple[str, Path]) -> None:
    url, _ = proxy
    reply = httpx2.post(url + "/slow", content=b"{}", headers=HEADERS, timeout=10)
    assert reply.status_code == 504 and reply.json()["type"] == "error"


def test_client_leaving_mid_stream_closes_upstream(proxy: tuple[str, Path], upstream: Upstream) -> None:
    url, _ = proxy
    with socket.create_connection((url.split("//")[1].split(":")[0], int(url.rsplit(":", 1)[1]))) as s:
        s.sendall(b"POST /v1/messages-slowstream HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}")
        assert s.recv(4096)  # the first bytes came
    deadline = time.monotonic() + 5
    while "/v1/messages-slowstream" not in upstream.aborted and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "/v1/messages-slowstream" in upstream.aborted
    assert httpx2.get(url + "/_infinite_context_brain/status").status_code == 200  # still serving
