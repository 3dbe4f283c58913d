"""The Store contract: every backend in conftest.BACKENDS must pass all of it."""

from __future__ import annotations

import subprocess
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infinite_context_brain.core.errors import CorruptState, StorageError
from infinite_context_brain.core.models import HistoryEntry, ProjectState
from infinite_context_brain.core.storage import Change

from ..conftest import PYTHON, Backend, cli_env

SID = "session-contract"


def entry_for(version: int, task: str, sid: str = SID) -> HistoryEntry:
    state = ProjectState.empty(sid)
    state.meta.version = version
    state.active_context.current_task = task
    return HistoryEntry(version=version, timestamp=datetime.now(UTC), merged_by="test", state=state)


def write(store, task: str, sid: str = SID) -> HistoryEntry:  # type: ignore[no-untyped-def]
    return store.states.update_state(sid, lambda cur, nxt: entry_for(nxt, task, sid)).entry


def test_empty_session(backend: Backend) -> None:
    store = backend.open()
    assert store.states.get_state(SID) is None
    assert store.states.current_version(SID) == 0
    assert store.states.history(SID) == []
    assert store.states.history_entry(SID, 1) is None


def test_versions_are_dense_and_history_matches_state(backend: Backend) -> None:
    store = backend.open()
    versions = [write(store, f"task {i}").version for i in range(1, 5)]
    assert versions == [1, 2, 3, 4]
    state = store.states.get_state(SID)
    assert state is not None and state.meta.version == 4 and state.active_context.current_task == "task 4"
    history = store.states.history(SID)
    assert [e.version for e in history] == [4, 3, 2, 1]
    assert history[0].state == state
    assert store.states.history_entry(SID, 2).state.active_context.current_task == "task 2"  # type: ignore[union-attr]


def test_history_is_bounded(backend: Backend) -> None:
    store = backend.open(history_size=3)
    for i in range(6):
        write(store, f"t{i}")
    assert [e.version for e in store.states.history(SID)] == [6, 5, 4]
    assert store.states.history_entry(SID, 3) is None
    assert [e.version for e in store.states.history(SID, 2)] == [6, 5]


def test_update_reruns_on_fresh_state_after_a_conflict(backend: Backend) -> None:
    mine, other = backend.open(), backend.open()
    write(mine, "base")
    seen: list[int] = []

    def update(current: ProjectState | None, next_version: int) -> HistoryEntry:
        assert current is not None
        seen.append(current.meta.version)
        if len(seen) == 1:
            write(other, "sneaked in")  # another writer moves the version after our read
        return entry_for(next_version, f"built on v{current.meta.version}")

    outcome = mine.states.update_state(SID, update)
    assert seen == [1, 2]
    assert outcome.attempts == 2
    assert outcome.entry.version == 3
    assert mine.states.get_state(SID).active_context.current_task == "built on v2"  # type: ignore[union-attr]


def test_last_attempt_is_exclusive_and_cannot_lose(backend: Backend) -> None:
    mine, other = backend.open(cas_attempts=2), backend.open()
    calls = 0

    def update(current: ProjectState | None, next_version: int) -> HistoryEntry:
        nonlocal calls
        calls += 1
        if calls == 1:
            write(other, "interference")
        return entry_for(next_version, "mine")

    outcome = mine.states.update_state(SID, update)
    assert outcome.attempts == 2 and outcome.entry.version == 2


def test_failed_update_writes_nothing(backend: Backend) -> None:
    store = backend.open()
    write(store, "good")

    def boom(current: ProjectState | None, next_version: int) -> HistoryEntry:
        raise RuntimeError("merge crashed")

    with pytest.raises(RuntimeError):
        store.states.update_state(SID, boom)
    with pytest.raises(StorageError):
        store.states.update_state(SID, lambda cur, nxt: entry_for(nxt + 5, "wrong version"))
    assert store.states.current_version(SID) == 1
    assert [e.version for e in store.states.history(SID)] == [1]


def test_corrupt_state_is_reported_and_repairable(backend: Backend) -> None:
    store = backend.open()
    write(store, "v1")
    write(store, "v2")
    backend.corrupt_state(SID)
    with pytest.raises(CorruptState) as info:
        store.states.get_state(SID)
    assert "rollback" in str(info.value)
    with pytest.raises(CorruptState):
        write(store, "must not overwrite silently")
    assert [e.version for e in store.states.history(SID)] == [2, 1]
    good = store.states.history_entry(SID, 2)
    assert good is not None
    repaired = store.states.update_state(SID, lambda cur, nxt: entry_for(nxt, "restored"), repair=True).entry
    assert repaired.version == 3
    assert store.states.get_state(SID).active_context.current_task == "restored"  # type: ignore[union-attr]


def test_advisory_lock(backend: Backend) -> None:
    store = backend.open()
    a = store.states.acquire_lock(SID, "A", 60)
    assert a.acquired and a.holder == "A"
    b = store.states.acquire_lock(SID, "B", 60)
    assert not b.acquired and b.holder == "A"
    assert store.states.acquire_lock(SID, "A", 60).acquired  # refresh by the holder
    assert store.states.lock_holder(SID) == "A"
    assert not store.states.release_lock(SID, "B")
    assert store.states.release_lock(SID, "A")
    assert store.states.lock_holder(SID) is None
    assert store.states.acquire_lock(SID, "B", 0.2).acquired
    time.sleep(0.35)
    assert store.states.lock_holder(SID) is None
    assert store.states.acquire_lock(SID, "A", 60).acquired  # expired locks are taken over


def test_sessions_are_listed_and_isolated(backend: Backend) -> None:
    store = backend.open()
    write(store, "one", sid="s1")
    write(store, "two", sid="s2")
    write(store, "two again", sid="s2")
    assert set(store.states.sessions()) >= {"s1", "s2"}
    assert store.states.current_version("s1") == 1 and store.states.current_version("s2") == 2


def _collect(store, session_id=None):  # type: ignore[no-untyped-def]
    got: list[tuple[Change, float]] = []
    cond = threading.Condition()

    def callback(change: Change) -> None:
        with cond:
            got.append((change, time.time()))
            cond.notify_all()

    sub = store.feed.subscribe(callback, session_id)

    def wait_for(n: int, timeout: float = 3.0) -> list[tuple[Change, float]]:
        with cond:
            cond.wait_for(lambda: len(got) >= n, timeout)
            return list(got)

    return sub, wait_for


def test_change_feed_sees_another_connection_within_a_second(backend: Backend) -> None:
    watcher, writer = backend.open(), backend.open()
    sub, wait_for = _collect(watcher, SID)
    try:
        write(writer, "other session", sid="unrelated")
        started = time.time()
        write(writer, "hello")
        got = wait_for(1)
        assert [c.version for c, _ in got] == [1]
        assert got[0][0].session_id == SID and got[0][0].kind == "state"
        assert got[0][1] - started < 1.0
    finally:
        sub.close()


def test_change_feed_sees_another_process_within_a_second(
    backend: Backend, project_dir: Path, tmp_path: Path
) -> None:
    from infinite_context_brain.core.project import resolve_project

    sid = resolve_project(project_dir).session_id
    watcher = backend.open()
    sub, wait_for = _collect(watcher, sid)
    try:
        subprocess.run(
            [
                PYTHON,
                "-m",
                "infinite_context_brain.server",
                "--project",
                str(project_dir),
                "checkpoint",
                "-m",
                "Done: x",
            ],
            env=cli_env(backend.url),
            check=True,
            capture_output=True,
        )
        got = wait_for(1)
        assert got, "no change event from the other process"
        change, received = got[0]
        assert change.version == 1
        assert received - change.at < 1.0, f"event arrived {received - change.at:.2f} s after the write"
    finally:
        sub.close()


def test_observations_put_and_batched_get(backend: Backend) -> None:
    from infinite_context_brain.core.models import Observation

    store = backend.open()
    ids = [f"toolu_{i:04d}" for i in range(700)]  # more than one SQL batch
    for i, tool_use_id in enumerate(ids):
        store.observations.put_observation(
            SID,
            Observation(
                tool_use_id=tool_use_id, tool_name="Read", text=f"obs {i}", original_tokens=100, tokens=3
            ),
        )
    found = store.observations.get_observations(SID, [*ids, "toolu_missing"])
    assert len(found) == 700 and "toolu_missing" not in found
    assert found["toolu_0042"].text == "obs 42"
    store.observations.put_observation(
        SID, Observation(tool_use_id="toolu_0042", tool_name="Read", text="new", original_tokens=1, tokens=1)
    )
    assert store.observations.get_observations(SID, ["toolu_0042"])["toolu_0042"].text == "new"
    assert store.observations.get_observations("other-session", ["toolu_0042"]) == {}
    assert store.observations.get_observations(SID, []) == {}


def _open_new_store(args: tuple[str, int]) -> int:
    import time as _time

    from infinite_context_brain.core.config import load_settings as _load
    from infinite_context_brain.core.storage import open_store as _open

    url, start_at = args
    while _time.time() < start_at:  # every process opens the new file at the same moment
        pass
    with _open(_load(store_url=url)) as store:
        return store.states.current_version("s")


def test_many_processes_opening_a_new_sqlite_file_at_once(tmp_path: Path) -> None:
    """Switching a brand-new file to WAL races between processes ("database is locked" without
    the busy handler); every opener must still get a working store."""
    import multiprocessing
    import time

    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(8) as pool:
        for round_ in range(3):
            url = f"sqlite:///{tmp_path / f'new-{round_}.db'}"
            start_at = time.time() + 1.0
            assert pool.map(_open_new_store, [(url, start_at)] * 8) == [0] * 8
