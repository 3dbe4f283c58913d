"""The MCP server's warm-up (issue 19): a call that comes while it opens the brain sharing its
work, a failed warm-up leaving the first call its error, and start-up without the garbage
collector until the server is built and the read path warm. The real brain, store and settings
throughout; the factory is only counted (and held, to make a call arrive while it is opening)."""

from __future__ import annotations

import gc
import json
import logging
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.errors import ConfigError, StorageUnavailable
from infinite_context_brain.server.mcp import warm
from infinite_context_brain.server.mcp.holder import BrainHolder
from infinite_context_brain.server.mcp.startup_gc import StartupGc

from ..conftest import PYTHON, cli_env
from ..redis_servers import free_port
from .test_mcp_fast_path import INIT


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


@pytest.mark.usefixtures("collector")
def test_a_call_during_the_warm_up_waits_for_its_brain(
    project_dir: Path, held: tuple[CountedOpen, BrainHolder]
) -> None:
    opener, holder = held
    warm.start(holder).server_built()
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


def _wait_until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture
def collector() -> Iterator[None]:
    """The warm-up pauses and freezes this process's collector: leave it as it was."""
    assert gc.isenabled()
    yield
    gc.unfreeze()
    gc.enable()


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set once the write path has been warmed (the real one, then this flag); no delay before."""
    done = threading.Event()
    real = warm._warm_writes

    def warm_writes(holder: BrainHolder) -> None:
        real(holder)
        done.set()

    monkeypatch.setattr(warm, "_warm_writes", warm_writes)
    monkeypatch.setattr(warm, "WRITE_PATH_DELAY", 0.0)
    return done


@pytest.mark.usefixtures("collector")
def test_start_up_runs_without_the_collector_until_built_and_warm(
    held: tuple[CountedOpen, BrainHolder], writes: threading.Event
) -> None:
    """The collector is off from ``start`` (before the SDK import) until both the server is
    built and the read path is warm, then on again with start-up's objects frozen; the write
    path waits for the server."""
    opener, holder = held
    frozen = gc.get_freeze_count()
    warmup = warm.start(holder)
    assert not gc.isenabled()
    assert opener.entered.wait(10)
    opener.hold.set()
    assert _wait_until(lambda: holder.ready)
    assert not writes.wait(0.3)  # the read path is warm; the server is not built yet
    assert not gc.isenabled()
    warmup.server_built()
    assert writes.wait(10)
    assert gc.isenabled()
    assert gc.get_freeze_count() > frozen


@pytest.mark.usefixtures("collector")
def test_the_collector_waits_for_a_slow_read_path(held: tuple[CountedOpen, BrainHolder]) -> None:
    opener, holder = held
    warmup = warm.start(holder)
    warmup.server_built()  # the server first: the brain is still opening
    assert opener.entered.wait(10)
    assert not gc.isenabled()
    opener.hold.set()
    assert _wait_until(gc.isenabled)


@pytest.mark.usefixtures("collector")
def test_a_failed_warm_up_turns_the_collector_back_on(project_dir: Path, store_url: str) -> None:
    holder = BrainHolder(CountedOpen(project_dir, store_url, resume_tokens="lots"))
    warmup = warm.start(holder)
    warmup.server_built()
    warmup.thread.join(10)
    assert not warmup.thread.is_alive()
    assert gc.isenabled()
    assert not holder.ready  # the first call reports the setting (above)


@pytest.mark.usefixtures("collector")
def test_stopping_ends_the_warm_up_at_once(
    project_dir: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server stopping while the warm-up waits to warm the write path: ``close`` cuts the wait
    short and ``stop`` returns once the thread has ended, so no warm-up is left running (in
    pydantic-core) while the interpreter finalizes; the write path is not warmed."""
    monkeypatch.setattr(warm, "WRITE_PATH_DELAY", 30.0)
    warmed = threading.Event()
    monkeypatch.setattr(warm, "_warm_writes", lambda holder: warmed.set())
    holder = BrainHolder(CountedOpen(project_dir, store_url))
    warmup = warm.start(holder)
    warmup.server_built()
    assert _wait_until(gc.isenabled)  # the read path is warm: the thread waits for the write path
    started = time.monotonic()
    holder.close()
    warmup.stop()
    assert not warmup.thread.is_alive()
    assert time.monotonic() - started < 5
    assert not warmed.is_set()


@pytest.mark.usefixtures("collector")
def test_stopping_a_server_that_was_never_built_ends_the_warm_up(project_dir: Path, store_url: str) -> None:
    opener = CountedOpen(project_dir, store_url)
    holder = BrainHolder(opener)
    warmup = warm.start(holder)  # the SDK import failed: ``server_built`` never comes
    holder.close()  # before or after the warm-up opened the brain: either way it ends
    warmup.stop()
    assert not warmup.thread.is_alive()
    # a stopped holder opens nothing again (a store and a session lock nobody would close)
    with pytest.raises(StorageUnavailable, match="stopping"):
        holder.get()
    assert opener.calls <= 1


@pytest.mark.usefixtures("collector")
def test_a_collector_switched_off_by_the_host_stays_off() -> None:
    gc.disable()
    pause = StartupGc(parties=1)
    assert not pause.paused
    pause.done()
    assert not gc.isenabled()
    on = StartupGc(parties=1)  # (the fixture turned nothing on: still off)
    on.done()
    assert not gc.isenabled()
    gc.enable()
    twice = StartupGc(parties=2)
    assert twice.paused and not gc.isenabled()
    twice.done()
    assert twice.paused
    twice.done()
    twice.done()  # an extra call (a `finally` after an error) changes nothing
    assert gc.isenabled() and not twice.paused


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
    """The warm-up opens the store beside start-up: a Redis that never answers holds the warm-up
    thread (up to the client's 2 s timeout), not `initialize`; the first call names the store."""
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
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {}},
        }
        server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        server.stdin.write((json.dumps(call) + "\n").encode())
        server.stdin.flush()
        result = json.loads(server.stdout.readline())["result"]
        assert result["isError"] is True
        assert f"127.0.0.1:{silent.port}" in result["content"][0]["text"]
        assert "did not answer" in result["content"][0]["text"]
    finally:
        server.kill()
        server.wait()
