"""The MCP server's warm-up (issue 19): a call that comes while it opens the brain sharing its
work, a failed warm-up leaving the first call its error, and start-up without the garbage
collector until the server is built and the read path warm. The real brain, store and settings
throughout; the factory is only counted (and held, to make a call arrive while it is opening)."""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from infinite_context.core.brain import ProjectBrain
from infinite_context.core.config import load_settings
from infinite_context.core.errors import ConfigError, StorageUnavailable
from infinite_context.server.mcp import warm
from infinite_context.server.mcp.holder import BrainHolder
from infinite_context.server.mcp.startup_gc import StartupGc

from ..redis_servers import free_port


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


@pytest.mark.usefixtures("collector")
def test_a_call_during_the_warm_up_waits_for_its_brain(project_dir: Path, store_url: str) -> None:
    opener = CountedOpen(project_dir, store_url)
    opener.hold.clear()
    holder = BrainHolder(opener)
    try:
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
    finally:
        opener.hold.set()
        holder.close()


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
    with caplog.at_level(logging.WARNING, logger="infinite_context.server.mcp.warm"):
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
    project_dir: Path, store_url: str, writes: threading.Event
) -> None:
    """The collector is off from ``start`` (before the SDK import) until both the server is
    built and the read path is warm, then on again with start-up's objects frozen; the write
    path waits for the server."""
    opener = CountedOpen(project_dir, store_url)
    opener.hold.clear()
    holder = BrainHolder(opener)
    frozen = gc.get_freeze_count()
    try:
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
    finally:
        opener.hold.set()
        holder.close()


@pytest.mark.usefixtures("collector")
def test_the_collector_waits_for_a_slow_read_path(project_dir: Path, store_url: str) -> None:
    opener = CountedOpen(project_dir, store_url)
    opener.hold.clear()
    holder = BrainHolder(opener)
    try:
        warmup = warm.start(holder)
        warmup.server_built()  # the server first: the brain is still opening
        assert opener.entered.wait(10)
        assert not gc.isenabled()
        opener.hold.set()
        assert _wait_until(gc.isenabled)
    finally:
        opener.hold.set()
        holder.close()


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
