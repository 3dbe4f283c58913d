"""Redis-only behaviour: key layout, errors that name the URL (never the password), faults,
and `store copy` between backends. The shared contract suite runs in test_store_contract.py."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.errors import CorruptState, StorageUnavailable
from infinite_context_brain.core.storage import open_store
from infinite_context_brain.core.storage import redis as redis_store
from infinite_context_brain.core.storage.redis import display_url

from ..conftest import PYTHON, cli_env, run_cli
from ..helpers.redis_servers import RedisServer, free_port


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    redis.Redis.from_url(redis_server.url).flushall()
    return redis_server.url


def test_keys_carry_a_hash_tag_per_session(redis_url: str, project_dir: Path) -> None:
    with ProjectBrain.open(project_dir, load_settings(store_url=redis_url, redis_prefix="team")) as brain:
        brain.checkpoint("Current task: layout")
        brain.claim("me")
        sid = brain.session_id
    keys = sorted(k.decode() for k in redis.Redis.from_url(redis_url).keys("*"))
    # one key outside every session: the store's identity (storage/identity.py)
    assert keys == [
        "team:store",
        *(f"team:{{{sid}}}:{name}" for name in ("history", "lock", "state", "version")),
    ]


def test_memory_keys_of_each_session_stay_under_its_own_hash_tag(redis_url: str) -> None:
    """Working-memory keys (their prefix is built once per session) for ids that need escaping
    in a hash tag and for two sessions used in turn by one store: each session's keys under its
    own tag, its items found there only, archiving (many keys per item) included."""
    from infinite_context_brain.core.memory.model import MemoryItem
    from infinite_context_brain.core.storage.parts import IndexedItem, IndexTerms
    from infinite_context_brain.core.storage.redis_conn import hash_tag

    sessions = ["a{b}%c", "plain", ""]
    with open_store(load_settings(store_url=redis_url, redis_prefix="team")) as store:
        for _ in range(2):
            for sid in sessions:
                items = [MemoryItem(id=f"{sid}-{n}", content=f"word{n}", tokens=1) for n in range(3)]
                store.memory.memory_put(
                    sid, [IndexedItem(i, IndexTerms((f"word{n}",), ())) for n, i in enumerate(items)]
                )
                store.memory.memory_update(sid, [items[0].model_copy(update={"archived": True})])
        for sid in sessions:
            assert sorted(store.memory.memory_get(sid, [f"{s}-{n}" for s in sessions for n in range(3)])) == [
                f"{sid}-{n}" for n in range(3)
            ]
            assert store.memory.memory_usage(sid) == (2, 2, 0, 1)
    keys = [k.decode() for k in redis.Redis.from_url(redis_url).keys("team:{*}:mem:*")]
    tags = {f"team:{{{hash_tag(sid)}}}:mem:" for sid in sessions}
    assert keys and all(sum(k.startswith(t) for t in tags) == 1 for k in keys)
    assert {t for t in tags if any(k.startswith(t) for k in keys)} == tags


def test_password_never_shown_and_wrong_password_is_clear(tmp_path: Path) -> None:
    assert display_url("redis://bob:s3cret@h:6379/0") == "redis://bob:***@h:6379/0"
    server = RedisServer(free_port(), tmp_path / "auth", ["--requirepass", "right-pass"])
    server.start()
    try:
        with pytest.raises(StorageUnavailable) as info:
            open_store(load_settings(store_url=f"redis://default:wrong-pass@127.0.0.1:{server.port}/0"))
        message = str(info.value)
        assert "rejected the credentials" in message and "wrong-pass" not in message and "***" in message
        good = open_store(load_settings(store_url=f"redis://default:right-pass@127.0.0.1:{server.port}/0"))
        assert "right-pass" not in good.display_url
        good.close()
    finally:
        server.stop()


def test_unreachable_and_tls_to_plain_port(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A TLS handshake against a plain port ends at the socket timeout (3 s, tried twice); a shorter
    # timeout takes the same path without six idle seconds.
    monkeypatch.setattr(redis_store, "SOCKET_TIMEOUT_SECONDS", 0.3)
    dead = free_port()
    with pytest.raises(StorageUnavailable) as info:
        open_store(load_settings(store_url=f"redis://127.0.0.1:{dead}/0"))
    assert f"127.0.0.1:{dead}" in str(info.value) and "start Redis" in str(info.value)
    started = time.monotonic()
    with pytest.raises(StorageUnavailable) as info:
        open_store(load_settings(store_url=redis_url.replace("redis://", "rediss://")))
    assert "TLS handshake" in str(info.value) and "redis://" in str(info.value)
    assert time.monotonic() - started < 8


def test_cli_reports_redis_down_with_exit_4(project_dir: Path) -> None:
    url = f"redis://:pw@127.0.0.1:{free_port()}/0"
    out = run_cli(url, "--project", str(project_dir), "status")
    assert out.returncode == 4 and b"cannot reach Redis" in out.stderr and b":pw@" not in out.stderr
    assert b"Traceback" not in out.stderr


def test_corrupt_json_in_state_key_then_rollback(redis_url: str, project_dir: Path) -> None:
    with ProjectBrain.open(project_dir, load_settings(store_url=redis_url)) as brain:
        brain.checkpoint("Current task: one")
        brain.checkpoint("Current task: two")
        client = redis.Redis.from_url(redis_url)
        client.set(f"ic:{{{brain.session_id}}}:state", b"{not json")
        with pytest.raises(CorruptState):
            brain.status()
        assert [h.version for h in brain.history(5)] == [2, 1]
        assert brain.rollback(version=2).version == 3
        assert brain.status().current_task == "two"
        client.delete(f"ic:{{{brain.session_id}}}:state")
        client.hset(f"ic:{{{brain.session_id}}}:state", "x", "y")  # a foreign type in our key
        with pytest.raises(CorruptState):
            brain.resume()
        assert brain.rollback(steps=1).restored_from == 2


def test_store_copy_sqlite_to_redis_is_idempotent(redis_url: str, project_dir: Path, store_url: str) -> None:
    with ProjectBrain.open(project_dir, load_settings(store_url=store_url)) as brain:
        for i in range(3):
            brain.checkpoint(f"Current task: step {i}")
        sid = brain.session_id

    def copy() -> dict[str, object]:
        import json

        out = run_cli(store_url, "--json", "store", "copy", "--from", store_url, "--to", redis_url)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)  # type: ignore[no-any-return]

    first = copy()
    assert (first["sessions_copied"], first["history_entries_copied"]) == (1, 3)
    second = copy()
    assert (second["sessions_copied"], second["sessions_unchanged"]) == (0, 1)
    with ProjectBrain.open(project_dir, load_settings(store_url=redis_url)) as brain:
        assert brain.session_id == sid
        assert brain.status().current_task == "step 2"
        assert [h.version for h in brain.history(5)] == [3, 2, 1]
        brain.checkpoint("Current task: ahead on redis")
    third = copy()
    assert third["sessions_copied"] == 0 and "ahead" in str(third["skipped"])


@pytest.mark.slow
def test_restart_redis_mid_loop_with_aof(tmp_path: Path, project_dir: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    server = RedisServer(free_port(), tmp_path / "aof", ["--appendonly", "yes", "--appendfsync", "always"])
    server.start()
    url = server.url
    results: list[tuple[str, object]] = []
    stop = threading.Event()

    def loop() -> None:
        with ProjectBrain.open(project_dir, load_settings(store_url=url)) as brain:
            i = 0
            while not stop.is_set():
                try:
                    results.append(("ok", brain.checkpoint(f"Done: step {i} in src/app.py").version))
                except StorageUnavailable as exc:
                    results.append(("down", str(exc)))
                    time.sleep(0.05)
                except Exception as exc:  # anything else fails the test instead of hanging it
                    results.append(("unexpected", repr(exc)))
                    return
                i += 1

    async def until(condition: Callable[[], bool], seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while not condition():
            unexpected = [detail for kind, detail in results if kind == "unexpected"]
            assert not unexpected, unexpected
            assert time.monotonic() < deadline, f"gave up waiting; last results {results[-5:]}"
            await asyncio.sleep(0.02)

    async def mcp_around_restart() -> tuple[int, int]:
        params = StdioServerParameters(
            command=PYTHON,
            args=["-m", "infinite_context_brain.server", "mcp"],
            cwd=str(project_dir),
            env=cli_env(url),
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            await s.call_tool("status", {})
            worker = threading.Thread(target=loop)
            worker.start()
            await until(lambda: sum(kind == "ok" for kind, _ in results) >= 10)
            server.stop()
            await asyncio.sleep(1.0)
            down = await s.call_tool("status", {})
            assert down.is_error and "cannot reach Redis" in down.content[0].text
            server.start()
            ok_before = len(results)
            await until(lambda: sum(kind == "ok" for kind, _ in results[ok_before:]) >= 10)
            stop.set()
            worker.join()
            after = await s.call_tool("checkpoint", {"context": "Done: survived the restart"})
            assert not after.is_error, after.content
            return after.structured_content["version"], down.is_error

    try:
        final_version, _ = asyncio.run(mcp_around_restart())
    finally:
        server.stop()
    errors = [detail for kind, detail in results if kind == "down"]
    versions = [v for kind, v in results if kind == "ok"]
    assert errors and all("cannot reach Redis" in str(e) for e in errors)
    assert versions == sorted(set(versions)) and versions[0] == 1  # nothing repeated
    # A write whose EXEC reached Redis just before it stopped is stored although the client saw
    # the connection drop: such a version is skipped in `versions`, never lost or reused.
    gaps = sum(b - a - 1 for a, b in itertools.pairwise(versions))
    assert gaps <= len(errors)
    assert final_version > versions[-1]
    server.start()
    try:
        with ProjectBrain.open(project_dir, load_settings(store_url=url)) as brain:  # AOF kept everything
            state = brain.store.states.get_state(brain.session_id)
            assert state is not None and state.meta.version == final_version
            assert brain.store.states.history(brain.session_id, 1)[0].state == state
    finally:
        server.stop()
