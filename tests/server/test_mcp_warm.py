"""The MCP server's warm-up (issue 19): a call that comes while it opens the brain sharing its
work, and a failed warm-up leaving the first call its error. The real brain, store and settings
throughout; the factory is only counted (and held, to make a call arrive while it is opening)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from infinite_context.core.brain import ProjectBrain
from infinite_context.core.config import load_settings
from infinite_context.core.errors import ConfigError, StorageUnavailable
from infinite_context.server.mcp import warm
from infinite_context.server.mcp.holder import BrainHolder

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


def test_a_call_during_the_warm_up_waits_for_its_brain(project_dir: Path, store_url: str) -> None:
    opener = CountedOpen(project_dir, store_url)
    opener.hold.clear()
    holder = BrainHolder(opener)
    try:
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


def test_the_warm_up_leaves_start_up_objects_out_of_full_collections(
    project_dir: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once warm, what start-up made (SDK, pydantic schemas, the brain) is frozen: the collector's
    full passes walk only what the server made since (they walked ~100k objects, 60-120 ms)."""
    import gc

    monkeypatch.setattr(warm, "WRITE_PATH_DELAY", 0.0)
    holder = BrainHolder(CountedOpen(project_dir, store_url))
    gc.unfreeze()
    try:
        warm.warm(holder)  # as the thread runs it, here to the end
        assert holder.ready
        assert gc.get_freeze_count() > 1000
        brain = holder.get()  # and everything still works
        item, _ = brain.memory().store_item(content="frozen start-up, fresh items")
        assert [h.item.id for h in brain.memory().query("fresh items")] == [item.id]
    finally:
        gc.unfreeze()  # the rest of the test session collects as before
        holder.close()
