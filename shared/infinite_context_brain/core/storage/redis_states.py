"""The Redis state part: state, version, history, advisory lock and write mutex of a session.

A write WATCHes ``version`` (and ``wlock``), reads, and in one MULTI/EXEC sets state and version,
pushes the history entry and trims the history; a failed EXEC leaves the old state whole. The
last attempt takes ``wlock`` (a redis-py ``Lock``) first; optimistic writers back off while it
is held, so it cannot lose. The change message is published right after EXEC (a notification
after the commit).

``wlock`` is a short lease (``LEASE_SECONDS``) that a thread renews while its writer lives: a
writer killed while holding it delays the next one by at most the lease, not by a long TTL, and a
writer that takes longer than the lease still keeps it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import cast

from ..errors import ConflictError
from ..models import HistoryEntry, LockInfo, ProjectState
from .redis_conn import RedisConnection, text
from .states import CasStates, parse_entry

#: the write mutex's lease, renewed every third of it while its writer lives
LEASE_SECONDS = 1.0
WRITE_MUTEX_WAIT_SECONDS = 30.0
WRITE_MUTEX_POLL_SECONDS = 0.01

# The advisory session lock (not redis-py's Lock: its owner may take it again and a refusal
# names the holder). Compare-and-delete / compare-and-set: only the owner releases or renews it.
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
_ACQUIRE = (
    "local cur = redis.call('get', KEYS[1]) "
    "if cur == false or cur == ARGV[1] then "
    "redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return {1, ARGV[1]} end "
    "return {0, cur, redis.call('pttl', KEYS[1])}"
)


class RedisStates(CasStates):
    def __init__(self, conn: RedisConnection, *, history_size: int = 5, cas_attempts: int = 3) -> None:
        super().__init__(history_size=history_size, cas_attempts=cas_attempts)
        self.conn = conn

    # ---- compare-and-set primitives ---------------------------------------------------------
    def _read(self, session_id: str) -> tuple[int, bytes | None]:
        key = self.conn.key

        def read() -> tuple[int, bytes | None]:
            pipe = self.conn.client.pipeline(transaction=False)
            pipe.get(key(session_id, "version"))
            pipe.get(key(session_id, "state"))
            try:
                version, raw = pipe.execute(raise_on_error=False)
            finally:
                pipe.reset()
            if isinstance(version, Exception):
                raise version
            if isinstance(raw, Exception):  # WRONGTYPE: a foreign value sits in the state key
                raw = b"<not a string>"
            return _int(version), raw

        return self.conn.guard(read)

    def _transaction(
        self, session_id: str, expected: int | None, build: Callable[[int, bytes | None], HistoryEntry]
    ) -> HistoryEntry | None:
        """One WATCH/MULTI/EXEC round; None if the version moved (or the write mutex is held by
        someone else while ``expected`` is given, i.e. in an optimistic attempt)."""
        import redis

        key = self.conn.key
        version_key, state_key = key(session_id, "version"), key(session_id, "state")
        history_key, wlock_key = key(session_id, "history"), key(session_id, "wlock")

        def attempt() -> HistoryEntry | None:
            with self.conn.client.pipeline(transaction=True) as pipe:
                pipe.watch(version_key, wlock_key)
                version = _int(pipe.get(version_key))
                if expected is not None and (version != expected or pipe.get(wlock_key) is not None):
                    pipe.unwatch()
                    return None
                try:
                    raw = cast("bytes | None", pipe.get(state_key))  # responses are not decoded
                except redis.ResponseError:  # WRONGTYPE: a foreign value sits in the state key
                    raw = b"<not a string>"
                entry = build(version, raw)
                pipe.multi()
                pipe.set(state_key, entry.state.model_dump_json())
                pipe.set(version_key, entry.version)
                pipe.lpush(history_key, entry.model_dump_json())
                pipe.ltrim(history_key, 0, self.history_size - 1)
                try:
                    pipe.execute()
                except redis.WatchError:
                    return None
                return entry

        try:
            entry = self.conn.guard(attempt)
        except redis.WatchError as exc:
            # redis-py raises WatchError (not ConnectionError) when the connection drops while
            # keys are watched: the server is unreachable, not a concurrent writer.
            raise self.conn.unavailable(exc) from None
        if entry is not None:
            self.conn.publish(session_id, entry.version)
        return entry

    def _write_if(self, session_id: str, expected_version: int, entry: HistoryEntry) -> bool:
        return self._transaction(session_id, expected_version, lambda _v, _raw: entry) is not None

    def _update_exclusive(
        self, session_id: str, build: Callable[[int, bytes | None], HistoryEntry]
    ) -> HistoryEntry:
        with self._write_mutex(session_id):
            for _ in range(10):
                entry = self._transaction(session_id, None, build)
                if entry is not None:
                    return entry
                time.sleep(0.01)
        raise ConflictError(
            f"session {session_id} kept changing while this writer held its write mutex",
            fix="another client ignores the write protocol; retry",
        )

    @contextmanager
    def _write_mutex(self, session_id: str) -> Iterator[None]:
        """redis-py's ``Lock`` on ``wlock`` (SET NX PX with a random token, released only by the
        token's owner) as a lease renewed while this writer holds it (module docstring)."""
        import redis

        mutex = self.conn.client.lock(
            self.conn.key(session_id, "wlock"),
            timeout=LEASE_SECONDS,
            sleep=WRITE_MUTEX_POLL_SECONDS,
            blocking_timeout=WRITE_MUTEX_WAIT_SECONDS,
            thread_local=False,
            # Lost (the renewal could not reach the server): the write itself still went
            # through WATCH, so nothing is lost; there is nothing left to release.
            raise_on_release_error=False,
        )
        if not self.conn.guard(mutex.acquire):
            raise ConflictError(
                f"waited {WRITE_MUTEX_WAIT_SECONDS:.0f} s for the write mutex of session {session_id}",
                fix="another writer is still working on it; retry",
            )
        done = threading.Event()

        def renew() -> None:
            while not done.wait(LEASE_SECONDS / 3):
                try:
                    mutex.reacquire()
                except redis.RedisError:  # lost or unreachable: the write's WATCH still guards it
                    return

        renewer = threading.Thread(target=renew, name="ic-wlock-lease", daemon=True)
        renewer.start()
        try:
            yield
        finally:
            done.set()
            renewer.join()
            self.conn.guard(mutex.release)

    # ---- history ----------------------------------------------------------------------------
    def history(self, session_id: str, limit: int | None = None) -> list[HistoryEntry]:
        end = -1 if limit is None else limit - 1
        key = self.conn.key(session_id, "history")
        rows = self.conn.guard(lambda: self.conn.client.lrange(key, 0, end))
        entries = (parse_entry(raw, session_id=session_id) for raw in rows)
        return sorted((e for e in entries if e is not None), key=lambda e: -e.version)

    def history_entry(self, session_id: str, version: int) -> HistoryEntry | None:
        return next((e for e in self.history(session_id) if e.version == version), None)

    def replace_session(self, session_id: str, state: ProjectState, history: list[HistoryEntry]) -> None:
        key = self.conn.key
        history_key = key(session_id, "history")
        newest_first = sorted(history, key=lambda e: -e.version)

        def write() -> None:
            with self.conn.client.pipeline(transaction=True) as pipe:
                pipe.set(key(session_id, "state"), state.model_dump_json())
                pipe.set(key(session_id, "version"), state.meta.version)
                pipe.delete(history_key)
                if newest_first:
                    pipe.rpush(history_key, *[e.model_dump_json() for e in newest_first])
                pipe.execute()

        self.conn.guard(write)
        self.conn.publish(session_id, state.meta.version)

    def sessions(self) -> list[str]:
        return self.conn.sessions_with("version")

    # ---- advisory lock ----------------------------------------------------------------------
    def acquire_lock(self, session_id: str, owner: str, ttl_seconds: float) -> LockInfo:
        ttl_ms = max(1, int(ttl_seconds * 1000))
        key = self.conn.key(session_id, "lock")
        result = self.conn.guard(lambda: self.conn.client.eval(_ACQUIRE, 1, key, owner, ttl_ms))
        acquired, holder = int(result[0]), text(result[1])
        if acquired:
            return LockInfo(acquired=True, owner=owner, holder=owner, expires_at=_after_ms(ttl_ms))
        return LockInfo(acquired=False, owner=owner, holder=holder, expires_at=_after_ms(int(result[2])))

    def release_lock(self, session_id: str, owner: str) -> bool:
        key = self.conn.key(session_id, "lock")
        return bool(self.conn.guard(lambda: self.conn.client.eval(_RELEASE, 1, key, owner)))

    def lock_holder(self, session_id: str) -> str | None:
        value = self.conn.guard(lambda: self.conn.client.get(self.conn.key(session_id, "lock")))
        return text(value) if value is not None else None


def _int(value: object) -> int:
    if not isinstance(value, bytes | str | int):
        return 0
    try:
        return int(value)
    except ValueError:
        return 0


def _after_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(time.time() + max(ms, 0) / 1000, UTC)
