"""The proxy as a local service that lets no one else in, each rule tried with raw bytes on a
socket against the real proxy process: origin-form request-targets only (the API key never goes
to another host), loopback ``Host`` names with its port only, no browser ``Origin``, a body limit
answered with the Messages API's 413, deadlines for a request's head and body and for an idle
connection, a connection cap that a slow client cannot hold for ever, and a small request answered
while a large one is being transformed."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..helpers.proxy_run import (
    STATUS,
    Proxy,
    Upstream,
    fake_upstream,
    get,
    post,
    raw,
    read_response,
    running_proxy,
)

LIMIT_MB = 1
TIMEOUT = "1"


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with fake_upstream() as up:
        yield up


@pytest.fixture(scope="module")
def attacker() -> Iterator[Upstream]:
    """Another listener on loopback: where a crafted target would send the request."""
    with fake_upstream() as up:
        yield up


@pytest.fixture(scope="module")
def proxy(upstream: Upstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    with running_proxy(
        tmp_path_factory.mktemp("guard") / "data",
        upstream.url,
        INFINITE_CONTEXT_PROXY_MAX_BODY_MB=str(LIMIT_MB),
        INFINITE_CONTEXT_PROXY_HEAD_TIMEOUT=TIMEOUT,
        INFINITE_CONTEXT_PROXY_BODY_TIMEOUT=TIMEOUT,
    ) as running:
        yield running
    assert b"Traceback" not in running.log.read_bytes()


def error_type(body: bytes) -> str:
    answer = json.loads(body)
    assert answer["type"] == "error"
    return str(answer["error"]["type"])


@pytest.mark.parametrize(
    "target",
    [
        "@127.0.0.1:{attacker}/v1/messages",
        "http://127.0.0.1:{attacker}/v1/messages",
        "//127.0.0.1:{attacker}/v1/messages",
        "127.0.0.1:{attacker}",
        "*",
        "/v1/../v1/messages",
        "/v1/%2e%2e/v1/messages",
    ],
)
def test_only_origin_form_targets_are_served(
    proxy: Proxy, upstream: Upstream, attacker: Upstream, target: str
) -> None:
    before = len(upstream.seen)
    status, headers, body = raw(proxy.port, post(target.format(attacker=attacker.port), b"{}", proxy.port))
    assert status == 400
    if headers.get("content-type") == "application/json":  # ours (h11 refuses a few itself)
        assert error_type(body) == "invalid_request_error"
    assert attacker.seen == [] and len(upstream.seen) == before  # the key went nowhere


def test_the_upstream_url_keeps_the_gateways_path(upstream: Upstream, tmp_path: Path) -> None:
    with running_proxy(tmp_path / "data", upstream.url + "/anthropic") as gateway:
        status, _headers, _body = raw(gateway.port, post("/v1/messages?beta=true", b"{}", gateway.port))
    assert status == 200 and upstream.seen[-1][0] == "/anthropic/v1/messages?beta=true"


@pytest.mark.parametrize(
    "host", ["attacker.example", "attacker.example:{port}", "127.0.0.1:{other}", "127.0.0.1"]
)
def test_only_loopback_host_names_with_its_port_are_served(
    proxy: Proxy, upstream: Upstream, host: str
) -> None:
    before = len(upstream.seen)
    name = host.format(port=proxy.port, other=proxy.port + 1)
    status, _headers, body = raw(proxy.port, get(STATUS, proxy.port, host=name))
    assert status == 403 and error_type(body) == "permission_error" and b"upstream" not in body
    status, _headers, body = raw(proxy.port, post("/v1/messages", b"{}", proxy.port, host=name))
    assert status == 403 and len(upstream.seen) == before
    # HTTP/1.0 without any Host
    status, _headers, _body = raw(proxy.port, f"GET {STATUS} HTTP/1.0\r\n\r\n".encode())
    assert status in (400, 403)


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "LOCALHOST:{port}"])
def test_loopback_names_are_served(proxy: Proxy, host: str) -> None:
    status, _headers, body = raw(proxy.port, get(STATUS, proxy.port, host=host.format(port=proxy.port)))
    assert status == 200 and json.loads(body)["service"] == "infinite-context-proxy"


def test_a_request_from_a_web_page_is_refused(proxy: Proxy, upstream: Upstream) -> None:
    """A cross-site ``text/plain`` POST, as a page can send without a preflight."""
    before, transformed = len(upstream.seen), proxy.status()["transformed"]
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode()
    request = post(
        "/v1/messages", body, proxy.port, extra="Origin: https://evil.example\r\ncontent-type: text/plain\r\n"
    )
    status, _headers, answer = raw(proxy.port, request)
    assert status == 403 and error_type(answer) == "permission_error"
    assert len(upstream.seen) == before and proxy.status()["transformed"] == transformed


def test_a_body_over_the_limit_gets_the_apis_413(proxy: Proxy, upstream: Upstream) -> None:
    before = len(upstream.seen)
    size = LIMIT_MB * 1024 * 1024 + 1
    head = (
        f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{proxy.port}\r\ncontent-length: {size}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        sock.sendall(head)  # answered before the body is sent
        status, _headers, body = read_response(sock)
    assert status == 413 and error_type(body) == "request_too_large"
    chunk = b"x" * (256 * 1024)
    chunked = (
        f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{proxy.port}\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        sock.sendall(chunked.encode())
        try:
            for _ in range(5):  # 1.25 MB in all
                sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        except OSError:  # refused mid-way: the answer is waiting
            pass
        status, _headers, body = read_response(sock)
    assert status == 413 and error_type(body) == "request_too_large"
    assert len(upstream.seen) == before


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the proxy closes ``sock`` (or answers and closes) within ``seconds``."""
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
    return True


def test_slow_and_idle_clients_are_cut_off(proxy: Proxy) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port)) as silent:
        assert closed_within(silent, 5)
    with socket.create_connection(("127.0.0.1", proxy.port)) as half:
        half.sendall(f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{proxy.port}\r\nx-a".encode())
        assert closed_within(half, 5)
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as slow_body:
        slow_body.sendall(post("/v1/messages", b"{}" * 50, proxy.port)[:-60])
        status, _headers, body = read_response(slow_body)
        assert status == 408 and error_type(body) == "timeout_error"
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as idle:
        idle.sendall(get(STATUS, proxy.port))
        assert read_response(idle)[0] == 200
        idle.sendall(b"GE")  # the next request never completes
        assert closed_within(idle, 5)


def test_the_connection_cap_holds_and_frees_itself(proxy: Proxy) -> None:
    held = [socket.create_connection(("127.0.0.1", proxy.port)) for _ in range(64)]
    try:
        time.sleep(0.2)
        status, _headers, _body = raw(proxy.port, get(STATUS, proxy.port))
        assert status == 503
        assert all(closed_within(s, 5) for s in held)  # the head deadline closes them
        assert raw(proxy.port, get(STATUS, proxy.port))[0] == 200
    finally:
        for sock in held:
            sock.close()


def test_a_small_request_is_answered_while_a_large_one_is_transformed(
    upstream: Upstream, tmp_path: Path
) -> None:
    """A 24 MB body of 12,000 tool results (all new: each counted, each queued for its
    observation) takes the transform a while; a small request sent meanwhile reaches the upstream
    first, answered by the event loop the large one does not hold."""
    messages = []
    for i in range(12_000):
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"toolu_big{i}", "name": "Read", "input": {}}],
            }
        )
        text = f"line {i} of a file that goes on " * 64
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_big{i}", "content": text}],
            }
        )
    large = json.dumps({"model": "m", "messages": messages}).encode()
    small = b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'
    with running_proxy(tmp_path / "data", upstream.url) as proxy:
        answers: list[int] = []

        def send_large() -> None:
            answers.append(raw(proxy.port, post("/v1/messages?large", large, proxy.port), timeout=120)[0])

        sender = threading.Thread(target=send_large)
        sender.start()
        deadline = time.monotonic() + 60
        while int(proxy.status()["requests"]) < 1 and time.monotonic() < deadline:  # type: ignore[call-overload]
            time.sleep(0.005)  # the large body has arrived: the transform runs now
        status, _headers, _body = raw(proxy.port, post("/v1/messages?small", small, proxy.port))
        sender.join(120)
    assert status == 200 and answers == [200]
    order = [
        path
        for path, _body, _headers in upstream.seen
        if path in ("/v1/messages?small", "/v1/messages?large")
    ]
    assert order == ["/v1/messages?small", "/v1/messages?large"]
