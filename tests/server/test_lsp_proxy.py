"""Live endless mode through the language server (pytest-lsp over stdio): with the setting on,
the server starts the real per-user proxy (a detached ``proxy run`` in a temp data dir on a free
port), one request through it to a fake upstream makes the pushed figures non-zero, and the
``infiniteContext/proxy`` request stops and starts it. A port that is taken, or a setting of the
wrong type, gives a clear state naming the setting; with the setting off nothing is started."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from infinite_context_brain.server.proxy import process

from ..conftest import PYTHON
from ..helpers.fake_anthropic import FakeAnthropic, Step, fake_anthropic

SERVER = [PYTHON, "-m", "infinite_context_brain.server", "lsp", "--stdio"]


@pytest.fixture
def upstream() -> Iterator[FakeAnthropic]:
    """The scripted Messages API the Claude Code tests use: it records each request."""
    with fake_anthropic([Step(text="ok")]) as fake:
        yield fake


def plain(value: Any) -> Any:
    """pygls hands custom params over as namedtuples (nested too)."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Client:
    def __init__(self, client: LanguageClient, pushed: list[dict[str, Any]], data: Path) -> None:
        self.client, self.pushed, self.data = client, pushed, data

    async def proxy(self, action: str) -> dict[str, Any]:
        return plain(
            await self.client.protocol.send_request_async("infiniteContext/proxy", {"action": action})
        )

    async def pushed_where(self, predicate: Any, timeout: float = 15.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for payload in reversed(self.pushed):
                if predicate(payload):
                    return payload
            await asyncio.sleep(0.05)
        raise AssertionError(f"no matching proxyStatus in {timeout}s: {self.pushed[-2:]}")


async def start_client(
    tmp_path: Path, upstream_url: str, options: dict[str, Any], **extra_env: str
) -> Client:
    data = tmp_path / "data"
    folder = tmp_path / "project"
    folder.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INFINITE_CONTEXT_", "ANTHROPIC_"))}
    env.update(
        INFINITE_CONTEXT_DATA_DIR=str(data),
        INFINITE_CONTEXT_PROXY_UPSTREAM=upstream_url,
        INFINITE_CONTEXT_PROXY_EPOCH_TOKENS="1000",  # an epoch on the first long request
        **extra_env,
    )
    client = await ClientServerConfig(server_command=SERVER, server_env=env).start()
    pushed: list[dict[str, Any]] = []

    @client.feature("infiniteContext/proxyStatus")
    def on_status(params: Any) -> None:
        pushed.append(plain(params))

    await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name="project")],
            initialization_options={"storeUrl": f"sqlite:///{tmp_path / 'brain.db'}", **options},
        )
    )
    return Client(client, pushed, data)


@pytest_asyncio.fixture
async def stop_proxies(tmp_path: Path) -> AsyncIterator[None]:
    yield
    await asyncio.to_thread(process.stop, tmp_path / "data")  # detached: it outlives the server


def history(results: int = 6) -> bytes:
    """A Claude Code-shaped request whose old tool results are long listings."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "list the modules"}]
    for i in range(results):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"toolu_vs{i}", "name": "Bash", "input": {"command": "ls"}}
                ],
            }
        )
        out = "\n".join(f"src/module_{i}_{n}.py" for n in range(300))
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_vs{i}", "content": out}],
            }
        )
    return json.dumps({"model": "m", "messages": messages, "stream": True}).encode()


async def test_setting_starts_the_proxy_and_the_figures_follow_a_request(
    tmp_path: Path, upstream: FakeAnthropic, stop_proxies: None
) -> None:
    port = free_port()
    lsp = await start_client(tmp_path, upstream.url, {"endlessEnabled": True, "endlessPort": port})
    try:
        up = await lsp.pushed_where(lambda p: p["running"])
        first = lsp.pushed[0]  # the status bar knows at once that it is coming
        assert first["starting"] and not first["running"] and first["problem"] is None
        assert up["url"] == f"http://127.0.0.1:{port}" and up["enabled"] and up["problem"] is None
        assert up["upstream"] == upstream.url and up["savedShare"] is None  # nothing through it yet
        # Claude Code in an integrated terminal gets the proxy; no first-party claim for a fake.
        assert up["terminalEnv"] == {"ANTHROPIC_BASE_URL": up["url"]}

        body = history()
        reply = await asyncio.to_thread(
            httpx2.post,
            up["url"] + "/v1/messages",
            content=body,
            headers={"content-type": "application/json"},
        )
        assert reply.status_code == 200 and upstream.requests  # it went through to the upstream
        assert len(json.dumps(upstream.requests[-1])) < len(body) / 2  # transformed on the way

        live = await lsp.pushed_where(lambda p: p["transformed"] >= 1)
        assert live["tokensBefore"] > live["tokensAfter"] > 0
        assert live["savedTokens"] == live["tokensBefore"] - live["tokensAfter"]
        assert live["savedShare"] == pytest.approx(live["savedTokens"] / live["tokensBefore"])
        assert live["savedShare"] > 0.5 and live["lastSavedShare"] == live["savedShare"]  # one request
        asked = await lsp.proxy("status")
        assert asked["tokensBefore"] == live["tokensBefore"] and asked["pid"] == live["pid"]

        stopped = await lsp.proxy("stop")
        assert not stopped["running"] and stopped["terminalEnv"] == {} and not stopped["startFailed"]
        # stopped on purpose: a state the bar shows plainly, not a problem to fix
        assert stopped["stopped"] and stopped["problem"] is None and stopped["fix"] is None
        assert not (lsp.data / "proxy" / "proxy.json").exists()
        polled = await lsp.proxy("status")
        assert polled["stopped"] and polled["problem"] is None
        again = await lsp.proxy("start")
        assert again["running"] and again["pid"] != live["pid"] and again["tokensBefore"] == 0
        assert not again["stopped"]
    finally:
        await lsp.client.shutdown_session()
    # The language server going away leaves the proxy up (terminals may use it).
    assert (await asyncio.to_thread(process.status, lsp.data)).running


async def test_a_taken_port_is_a_clear_state_and_start_says_why(
    tmp_path: Path, upstream: FakeAnthropic, stop_proxies: None
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        lsp = await start_client(tmp_path, upstream.url, {"endlessEnabled": True, "endlessPort": port})
        try:
            failed = await lsp.pushed_where(lambda p: p["problem"] is not None)
            assert not failed["running"] and failed["terminalEnv"] == {}
            assert "exited at start" in failed["problem"] and failed["startFailed"]
            assert "infiniteContext.endless.port" in failed["fix"] and "--port" not in failed["fix"]
            with pytest.raises(JsonRpcException) as raised:
                await lsp.proxy("start")
            assert "infiniteContext.endless.port" in str(raised.value)
        finally:
            await lsp.client.shutdown_session()


async def test_setting_off_starts_nothing_and_bad_values_name_the_setting(
    tmp_path: Path, upstream: FakeAnthropic
) -> None:
    lsp = await start_client(tmp_path, upstream.url, {})
    try:
        off = await lsp.pushed_where(lambda p: True)
        assert off == {**off, "enabled": False, "running": False, "problem": None, "terminalEnv": {}}
        with pytest.raises(JsonRpcException) as raised:
            await lsp.proxy("restart")
        assert "action" in str(raised.value)
    finally:
        await lsp.client.shutdown_session()
    assert not (tmp_path / "data" / "proxy" / "proxy.json").exists()

    lsp = await start_client(tmp_path, upstream.url, {"endlessEnabled": True, "endlessPort": "8419"})
    try:
        bad = await lsp.pushed_where(lambda p: p["problem"] is not None)
        assert "infiniteContext.endless.port" in bad["problem"] and not bad["running"] and bad["startFailed"]
    finally:
        await lsp.client.shutdown_session()
    assert not (tmp_path / "data" / "proxy" / "proxy.json").exists()


async def test_a_bad_proxy_variable_is_the_status_bar_problem_not_a_crash(
    tmp_path: Path, upstream: FakeAnthropic
) -> None:
    """``INFINITE_CONTEXT_PROXY_PORT=99999`` in the editor's environment: the status payload says
    which variable and how to fix it (it was a traceback in the log every poll), nothing starts."""
    lsp = await start_client(
        tmp_path, upstream.url, {"endlessEnabled": True}, INFINITE_CONTEXT_PROXY_PORT="99999"
    )
    try:
        bad = await lsp.pushed_where(lambda p: p["problem"] is not None)
        assert "proxy_port" in bad["problem"] and "INFINITE_CONTEXT_PROXY_PORT" in (bad["fix"] or "")
        assert bad["startFailed"] and not bad["running"] and bad["log"] is None
        status = await lsp.proxy("status")  # the request answers too
        assert "proxy_port" in status["problem"]
    finally:
        await lsp.client.shutdown_session()
    assert not (tmp_path / "data" / "proxy" / "proxy.json").exists()
