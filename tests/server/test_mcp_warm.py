"""The MCP server's warm-up: a call that comes while it opens the brain waits for its brain, a
failed warm-up leaves the first call its error, stopping ends it, and `initialize` never waits for
the store. The real brain, store and settings throughout; the factory is only counted (and held, to
make a call arrive while it is opening)."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.errors import ConfigError, StorageUnavailable
from infinite_context_brain.server.claude_code.hook_tool import HOOK_TOOL
from infinite_context_brain.server.mcp import warm
from infinite_context_brain.server.mcp.holder import BrainHolder

from ..conftest import PYTHON, cli_env
from ..helpers.mcp_client import INIT
from ..helpers.redis_servers import free_port


class CountedOpen:
    """``ProjectBrain.open`` on a real store, counted; ``hold`` keeps it from finishing."""

    def __init__(self, project_dir: Path, store_url: str, **settings: object) -> None:
        self.project_dir, self.store_url, self.settings = project_dir, store_url, settings
        self.calls = 0
        self.entered = threading.Event()
        self.hold = threading.Event()
        self.hold.set()

    def __call__(self) -> ProjectBrain:
        self.calls += 1
        self.entered.set()
        assert self.hold.wait(10)
        settings = load_settings(store_url=self.store_url, **self.settings)
        return ProjectBrain.open(self.project_dir, settings)


@pytest.fixture
def held(project_dir: Path, store_url: str) -> Iterator[tuple[CountedOpen, BrainHolder]]:
    """A holder whose brain opens only once ``opener.hold`` is set; released and closed after."""
    opener = CountedOpen(project_dir, store_url)
    opener.hold.clear()
    holder = BrainHolder(opener)
    yield opener, holder
    opener.hold.set()
    holder.close()


def test_a_call_during_the_warm_up_waits_for_its_brain(
    project_dir: Path, held: tuple[CountedOpen, BrainHolder]
) -> None:
    opener, holder = held
    warm.start(holder)
    assert opener.entered.wait(10)  # the warm-up is opening the brain, held there
    got: list[ProjectBrain] = []
    call = threading.Thread(target=lambda: got.append(holder.get()))
    call.start()  # a tool call arriving now waits for the warm-up's brain
    call.join(0.3)
    assert call.is_alive() and not got
    opener.hold.set()
    call.join(10)
    assert got and got[0] is holder.get()
    assert opener.calls == 1  # opened once, by the warm-up
    # the warm-up only read: the project's id file waits for the first write
    assert not (project_dir / ".claude_session_id").exists()
    item, _report = got[0].memory().store_item(content="the ledger lives in tenantLedger7")
    assert (project_dir / ".claude_session_id").exists()
    assert [h.item.id for h in holder.get().memory().query("tenantLedger7")] == [item.id]


@pytest.mark.parametrize(
    ("settings", "url", "error", "named"),
    [
        ({"resume_tokens": "lots"}, None, ConfigError, "resume_tokens"),
        ({}, "redis://127.0.0.1:{port}/0", StorageUnavailable, "127.0.0.1"),
    ],
    ids=["bad setting", "unreachable redis"],
)
def test_a_failed_warm_up_leaves_the_first_call_its_error(
    project_dir: Path,
    store_url: str,
    caplog: pytest.LogCaptureFixture,
    settings: dict[str, object],
    url: str | None,
    error: type[Exception],
    named: str,
) -> None:
    opener = CountedOpen(project_dir, url.format(port=free_port()) if url else store_url, **settings)
    holder = BrainHolder(opener)
    with caplog.at_level(logging.WARNING, logger="infinite_context_brain.server.mcp.warm"):
        warm.warm(holder)  # as the thread runs it, here to the end
    assert any("could not open the brain" in r.getMessage() for r in caplog.records)
    assert not holder.ready
    with pytest.raises(error) as raised:  # the first call opens it again and reports why
        holder.get()
    assert named in str(raised.value) and "Fix:" in str(raised.value)
    assert opener.calls == 2
    assert not (project_dir / ".claude_session_id").exists()


def test_stopping_while_the_warm_up_opens_the_brain_ends_it(
    project_dir: Path, held: tuple[CountedOpen, BrainHolder]
) -> None:
    """The client leaves while the brain is still opening: ``close`` waits for the open to finish,
    then closes it; the warm-up thread ends, and a stopped holder opens nothing again (a store
    and a session lock nobody would close)."""
    opener, holder = held
    thread = warm.start(holder)
    assert opener.entered.wait(10)
    closing = threading.Thread(target=holder.close)
    closing.start()
    opener.hold.set()
    closing.join(10)
    warm.stop(thread)
    assert not closing.is_alive() and not thread.is_alive()
    assert not holder.ready
    with pytest.raises(StorageUnavailable, match="stopping"):
        holder.get()
    assert opener.calls == 1


class SilentServer:
    """A TCP port that accepts connections and never answers (a frozen Redis): records when the
    first connection came and when its client gave up on it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted: float | None = None
        self.given_up: float | None = None
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        self.accepted = time.monotonic()
        while conn.recv(65536):  # swallow the client's commands until it closes
            pass
        self.given_up = time.monotonic()
        while True:  # later connections (the first call's) are held the same way
            later, _ = self.sock.accept()
            threading.Thread(target=self._hold, args=(later,), daemon=True).start()

    @staticmethod
    def _hold(conn: socket.socket) -> None:
        while conn.recv(65536):
            pass


def test_initialize_does_not_wait_for_a_frozen_store(project_dir: Path) -> None:
    """The warm-up opens the store once serving starts: a Redis that never answers holds the
    warm-up thread (up to the client's 2 s timeout), never `initialize`, a `ping` or a Claude
    Code hook call (queued for later); the first tool call names the store."""
    silent = SilentServer()
    server = subprocess.Popen(
        [PYTHON, "-m", "infinite_context_brain.server", "mcp"],
        cwd=project_dir,
        env=cli_env(f"redis://127.0.0.1:{silent.port}/0"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write((json.dumps(INIT) + "\n").encode())
        server.stdin.flush()
        reply = json.loads(server.stdout.readline())
        answered = time.monotonic()
        assert "result" in reply, reply
        # the warm-up had connected and was still waiting for the store when `initialize` was
        # answered (or had not connected yet): either way `initialize` did not wait for it
        assert silent.accepted is None or silent.given_up is None or silent.given_up > answered
        hook = {"event": "PostToolUse", "tool_name": "Bash", "tool_use_id": "toolu_1", "tool_response": "ok"}
        server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        for message in (
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": HOOK_TOOL, "arguments": hook},
            },
            {"jsonrpc": "2.0", "id": 4, "method": "ping"},
        ):
            server.stdin.write((json.dumps(message) + "\n").encode())
        server.stdin.flush()
        answers = {json.loads(server.stdout.readline())["id"] for _ in range(2)}
        assert answers == {3, 4}
        assert silent.accepted is None or silent.given_up is None  # the store still held the warm-up
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {}},
        }
        server.stdin.write((json.dumps(call) + "\n").encode())
        server.stdin.flush()
        result = json.loads(server.stdout.readline())["result"]
        assert result["isError"] is True
        assert f"127.0.0.1:{silent.port}" in result["content"][0]["text"]
        assert "did not answer" in result["content"][0]["text"]
    finally:
        server.kill()
        server.wait()
