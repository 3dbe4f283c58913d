"""The real proxy process (``infinite-context proxy run``) against a fake upstream on loopback:
streams pass byte for byte, the Messages API body is transformed and count_tokens counts what was
decided, headers pass and are never logged, upstream errors and timeouts come back as such, a
malformed body is forwarded untouched, a client leaving mid-stream leaves the proxy serving, the
status route shows no gateway password and proves the proxy to whoever knows its key, and its
files are private."""

from __future__ import annotations

import json
import os
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from infinite_context_brain.server.proxy.files import secret
from infinite_context_brain.server.proxy.identity import NONCE_HEADER, proof

from ..helpers.proxy_run import SSE_CHUNKS, STATUS, Proxy, Upstream, fake_upstream, running_proxy

SECRET = "sk-ant-api03-proxy-test-" + "k" * 30


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with fake_upstream() as up:
        yield up


@pytest.fixture(scope="module")
def proxy(upstream: Upstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    data = tmp_path_factory.mktemp("proxy-data")
    old = os.umask(0o022)  # a loose umask: the proxy's files must be private anyway
    try:
        with running_proxy(
            data,
            upstream.url,
            INFINITE_CONTEXT_PROXY_TIMEOUT="1",
            INFINITE_CONTEXT_PROXY_EPOCH_TOKENS="1000",
            LOG_LEVEL="DEBUG",
        ) as running:
            yield running
    finally:
        os.umask(old)
    assert not (data / "proxy" / "proxy.json").exists()  # cleaned up on SIGTERM
    logged = running.log.read_bytes()
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


def test_stream_passes_byte_for_byte_with_headers(proxy: Proxy, upstream: Upstream) -> None:
    body = b'{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}'
    with httpx2.stream("POST", proxy.url + "/v1/messages?beta=true", content=body, headers=HEADERS) as reply:
        got = b"".join(reply.iter_raw())
    assert reply.status_code == 200 and got == b"".join(SSE_CHUNKS)
    path, sent, headers = upstream.seen[-1]
    assert path == "/v1/messages?beta=true" and sent == body  # nothing to change: the same bytes
    assert headers["x-api-key"] == SECRET and headers["authorization"] == f"Bearer {SECRET}"
    assert headers["anthropic-beta"] == HEADERS["anthropic-beta"]


def test_messages_are_transformed_and_count_tokens_counts_what_was_decided(
    proxy: Proxy, upstream: Upstream
) -> None:
    raw = history()
    counted = httpx2.post(proxy.url + "/v1/messages/count_tokens", content=raw, headers=HEADERS)
    assert counted.status_code == 200 and counted.json()["input_tokens"] == len(raw)  # nothing decided yet
    httpx2.post(proxy.url + "/v1/messages", content=raw, headers=HEADERS).read()
    sent = json.loads(upstream.seen[-1][1])
    results = [m["content"][0]["content"] for m in sent["messages"] if m["role"] == "user"]
    assert results[0].startswith("[endless-mode") and "expand toolu_px0" in results[0].replace("`", "")
    assert results[-1] == json.loads(raw)["messages"][-1]["content"][0]["content"]  # unread: whole
    assert sent["messages"][0] == json.loads(raw)["messages"][0]  # thinking + signature untouched
    # the next turn renders the same bytes for what was decided, and count_tokens counts them
    httpx2.post(proxy.url + "/v1/messages", content=raw, headers=HEADERS).read()
    again = json.loads(upstream.seen[-1][1])
    assert again["messages"] == sent["messages"]
    counted = httpx2.post(proxy.url + "/v1/messages/count_tokens", content=raw, headers=HEADERS)
    assert counted.json()["input_tokens"] < len(raw) / 2
    status = proxy.status()
    assert int(status["tokens_after"]) < int(status["tokens_before"])  # type: ignore[call-overload]
    assert int(status["epochs"]) >= 1  # type: ignore[call-overload]


def test_malformed_body_goes_untouched(proxy: Proxy, upstream: Upstream) -> None:
    body = b'{"messages": [ this is not json'
    httpx2.post(proxy.url + "/v1/messages", content=body, headers=HEADERS).read()
    assert upstream.seen[-1][1] == body
    assert int(proxy.status()["failed_open"]) >= 1  # type: ignore[call-overload]


@pytest.mark.parametrize("code", [400, 401, 429, 500, 529])
def test_upstream_errors_pass_through(proxy: Proxy, code: int) -> None:
    reply = httpx2.post(proxy.url + f"/status/{code}", content=b"{}", headers=HEADERS)
    assert reply.status_code == code and reply.json()["error"]["type"] == "overloaded_error"


def test_upstream_timeout_comes_back_as_the_apis_error(proxy: Proxy) -> None:
    reply = httpx2.post(proxy.url + "/slow", content=b"{}", headers=HEADERS, timeout=10)
    assert reply.status_code == 504 and reply.json()["type"] == "error"


def test_client_leaving_mid_stream_closes_upstream(proxy: Proxy, upstream: Upstream) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port)) as s:
        s.sendall(
            f"POST /v1/messages-slowstream HTTP/1.1\r\nhost: 127.0.0.1:{proxy.port}\r\n"
            "content-length: 2\r\n\r\n{}".encode()
        )
        assert s.recv(4096)  # the first bytes came
    deadline = time.monotonic() + 5
    while "/v1/messages-slowstream" not in upstream.aborted and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "/v1/messages-slowstream" in upstream.aborted
    assert proxy.status()["service"] == "infinite-context-proxy"  # still serving


def test_status_proves_the_proxy_and_tells_no_secret(proxy: Proxy) -> None:
    status = proxy.status()
    assert "proof" not in status and "pid" not in status
    reply = httpx2.get(proxy.url + STATUS, headers={NONCE_HEADER: "n0nce"})
    assert reply.json()["proof"] == proof(secret(proxy.data), "n0nce")
    assert reply.headers.get("server") is None


def test_a_gateway_password_is_used_but_never_shown(upstream: Upstream, tmp_path: Path) -> None:
    gateway = upstream.url.replace("http://", "http://gw-user:gw-pass@")
    with running_proxy(tmp_path / "data", gateway) as proxy:
        httpx2.post(proxy.url + "/v1/messages", content=b"{}", headers=HEADERS).read()
        sent = upstream.seen[-1][2]
        assert sent["authorization"] == "Basic Z3ctdXNlcjpndy1wYXNz"  # gw-user:gw-pass, to the gateway
        assert sent["x-api-key"] == SECRET
        status = proxy.status()
        info = (tmp_path / "data" / "proxy" / "proxy.json").read_text()
    assert status["upstream"] == upstream.url and "gw-pass" not in json.dumps(status) + info


def test_the_proxys_files_are_private(proxy: Proxy) -> None:
    folder = proxy.data / "proxy"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    names = {p.name for p in folder.iterdir()}
    assert {"proxy.json", "proxy.lock", "proxy.key"} <= names
    for path in folder.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name
