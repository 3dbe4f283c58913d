"""What a user must be able to take for granted of the store: a copy never replaces a destination
whose history differs, concurrent writers are not a wiped store (and a real wipe still is),
``rollback`` after an unreadable state restores the newest intact version, a dead or frozen
writer costs no wait over 2 s, and a broken cluster or a flushed server is said in words."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import Settings, load_settings
from infinite_context_brain.core.errors import StorageUnavailable
from infinite_context_brain.core.storage import open_store
from infinite_context_brain.core.storage.copy import copy_all

from ..conftest import PYTHON, RedisServer, cli_env
from ..helpers.redis_servers import start_cluster


def _flush(url: str) -> None:
    redis.Redis.from_url(url).flushall()


@pytest.mark.parametrize("direction", ["sqlite-to-redis", "redis-to-sqlite"])
def test_a_copy_never_replaces_a_destination_whose_history_differs(
    project_dir: Path, tmp_path: Path, redis_server: RedisServer, direction: str
) -> None:
    _flush(redis_server.url)
    urls = {"sqlite": f"sqlite:///{tmp_path / 'brain.db'}", "redis": redis_server.url}
    source_name, destination_name = direction.split("-to-")
    source = ProjectBrain.open(project_dir, load_settings(store_url=urls[source_name]))
    for n in range(1, 6):
        source.checkpoint(f"Current task: step {n} of the migration")
    destination = ProjectBrain.open(project_dir, load_settings(store_url=urls[destination_name]))
    destination.checkpoint("Current task: try redis")  # its own v1: the two diverged
    report = copy_all(source.store, destination.store)
    assert report.sessions_copied == 0
    assert len(report.skipped) == 1 and "diverged" in report.skipped[0], report.skipped
    assert "1 skipped" in report.summary()
    kept = destination.store.states.get_state(source.session_id)
    assert kept is not None and kept.active_context.current_task == "try redis"
    assert [e.version for e in destination.store.states.history(source.session_id)] == [1]

    # a destination behind on the same line is brought up to the source
    behind = ProjectBrain.open(project_dir, load_settings(store_url=f"sqlite:///{tmp_path / 'behind.db'}"))
    copy_all(source.store, behind.store)
    source.checkpoint("Current task: step 6 of the migration")
    again = copy_all(source.store, behind.store)
    assert again.sessions_copied == 1 and again.skipped == []
    assert behind.store.states.current_version(source.session_id) == 6
    for brain in (source, destination, behind):
        brain.close()


WRITER = textwrap.dedent(
    """
    import sys
    from infinite_context_brain.server.cli.main import main
    for n in range(int(sys.argv[2])):
        main(["--project", sys.argv[1], "checkpoint", "-m", f"Done: write {n} of " + sys.argv[3]])
    """
)


def test_concurrent_writers_are_not_a_wiped_store_but_a_wipe_is(project_dir: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'brain.db'}"
    ProjectBrain.open(project_dir, load_settings(store_url=url)).checkpoint("Current task: the first")
    writers = [
        subprocess.Popen(
            [PYTHON, "-c", WRITER, str(project_dir), "6", f"writer{n}"],
            env=cli_env(url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(8)
    ]
    outputs = [w.communicate(timeout=300) for w in writers]
    assert all(w.returncode == 0 for w in writers), [e.decode()[-500:] for _, e in outputs]
    said = b"".join(out + err for out, err in outputs).decode()
    assert "wiped or replaced" not in said
    with ProjectBrain.open(project_dir, load_settings(store_url=url)) as brain:
        assert brain.store.states.current_version(brain.session_id) == 1 + 8 * 6
        assert not brain.status().warnings
    (tmp_path / "brain.db").unlink()  # a real wipe: the file is gone, a new one starts at 0
    for suffix in ("-wal", "-shm"):
        Path(f"{tmp_path / 'brain.db'}{suffix}").unlink(missing_ok=True)
    with ProjectBrain.open(project_dir, load_settings(store_url=url)) as brain:
        result = brain.checkpoint("Done: after the wipe")
        assert result.version == 1 + 8 * 6 + 1
        assert any("wiped or replaced" in w for w in result.warnings)


def test_rollback_after_an_unreadable_state_restores_the_newest_intact_version(brain: ProjectBrain) -> None:
    for n in range(1, 6):
        brain.checkpoint(f"Current task: version {n}")
    path = brain.store.display_url.removeprefix("sqlite://")
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE states SET state = '{\"meta\": 42' WHERE session_id = ?", (brain.session_id,))
    conn.close()
    with pytest.raises(Exception) as unreadable:
        brain.resume()
    assert "newest intact version" in str(getattr(unreadable.value, "fix", ""))
    done = brain.rollback()
    assert (done.restored_from, done.version) == (5, 6)
    state = brain.store.states.get_state(brain.session_id)
    assert state is not None and state.active_context.current_task == "version 5"
    assert brain.rollback().restored_from == 5  # readable again: one step back, as always


HOLDER = textwrap.dedent(
    """
    import sys, time
    from datetime import UTC, datetime
    from infinite_context_brain.core.config import load_settings
    from infinite_context_brain.core.models import HistoryEntry, ProjectState
    from infinite_context_brain.core.storage import open_store

    store = open_store(load_settings(store_url=sys.argv[1], cas_attempts=1))

    def hold(current, version):
        print("holding", flush=True)
        time.sleep(60)  # killed here, the write mutex held
        state = ProjectState.empty(sys.argv[2])
        return HistoryEntry(version=version, timestamp=datetime.now(UTC), merged_by="t", state=state)

    store.states.update_state(sys.argv[2], hold)  # one attempt: the exclusive one
    """
)


def test_a_writer_killed_holding_the_redis_write_lock_stalls_the_next_for_under_2_s(
    project_dir: Path, redis_server: RedisServer
) -> None:
    _flush(redis_server.url)
    settings = load_settings(store_url=redis_server.url)
    with ProjectBrain.open(project_dir, settings) as brain:
        brain.checkpoint("Current task: before the crash")
        holder = subprocess.Popen(
            [PYTHON, "-c", HOLDER, redis_server.url, brain.session_id],
            stdout=subprocess.PIPE,
            env=cli_env(""),
        )
        assert holder.stdout is not None and holder.stdout.readline() == b"holding\n"
        time.sleep(0.5)  # the lease renewed at least once while it lived
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        started = time.monotonic()
        assert brain.checkpoint("Current task: after the crash").version == 2
        assert time.monotonic() - started < 2.0


FROZEN = textwrap.dedent(
    """
    import os, signal, sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")  # the write lock, taken and never given back
    conn.execute("INSERT INTO states VALUES ('frozen', 1, '{}', 0)")
    print("frozen", flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)
    """
)


def test_a_frozen_sqlite_writer_costs_under_2_s_and_names_the_fix(brain: ProjectBrain) -> None:
    brain.checkpoint("Current task: before the freeze")
    path = brain.store.display_url.removeprefix("sqlite://")
    frozen = subprocess.Popen([sys.executable, "-c", FROZEN, path], stdout=subprocess.PIPE)
    try:
        assert frozen.stdout is not None and frozen.stdout.readline() == b"frozen\n"
        started = time.monotonic()
        with pytest.raises(StorageUnavailable) as busy:
            brain.checkpoint("Current task: during the freeze")
        assert time.monotonic() - started < 2.0
        assert "fuser -v" in busy.value.fix and path in busy.value.fix
        assert brain.status().version == 1  # reads go on meanwhile
    finally:
        os.kill(frozen.pid, signal.SIGKILL)
        frozen.wait()
    assert brain.checkpoint("Current task: after the freeze").version == 2


def test_a_cluster_that_is_down_is_an_unavailable_store_with_its_fix(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path / "cluster")
    try:
        store = open_store(load_settings(store_url=cluster.url))
        store.states.get_state("s")  # up: an answer
        for node in cluster.nodes:  # no node serves any slot any more: the cluster is down
            redis.Redis(port=node.port).execute_command("CLUSTER", "DELSLOTSRANGE", 0, 16383)
        started = time.monotonic()
        with pytest.raises(StorageUnavailable) as down:
            store.states.get_state("s")
        assert time.monotonic() - started < 10
        assert "cluster" in str(down.value).lower() and "CLUSTER INFO" in down.value.fix
        store.close()
    finally:
        cluster.stop()


def test_recall_after_the_server_was_flushed_says_what_happened(
    project_dir: Path, redis_server: RedisServer
) -> None:
    _flush(redis_server.url)
    with ProjectBrain.open(project_dir, load_settings(store_url=redis_server.url)) as brain:
        memory = brain.memory()
        memory.store_item(content="the deploy key rotates on Fridays")
        first = memory.recall()
        assert first.warnings == [] and len(first.items) == 1
        _flush(redis_server.url)
        after = brain.memory().recall()
        assert after.items == []
        assert len(after.warnings) == 1 and "wiped or replaced" in after.warnings[0]
        assert "working-memory items" in after.warnings[0]
        assert brain.memory().recall().warnings == []  # said once


def test_many_threads_checkpointing_one_brain_never_see_a_wipe(project_dir: Path, tmp_path: Path) -> None:
    settings = Settings(store_url=f"sqlite:///{tmp_path / 'brain.db'}", data_dir=tmp_path / "data")
    brains = [ProjectBrain.open(project_dir, settings) for _ in range(4)]
    brains[0].checkpoint("Current task: start")
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda b: [b.checkpoint(f"Done: {n}") for n in range(5)], brains))
    assert not [w for found in results for r in found for w in r.warnings if "wiped" in w]
    for b in brains:
        b.close()
