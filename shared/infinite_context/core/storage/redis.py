"""Redis store: plain Redis >= 6, Valkey or Redis Cluster, no modules needed.

Key layout (``<p>`` is the key prefix, default ``ic``; ``{<sid>}`` is a cluster hash tag, so one
session's keys share a slot and WATCH/MULTI works on a cluster):

==========================  ======  ========================================================
``<p>:{<sid>}:version``     string  current version (an integer), the compare-and-set anchor
``<p>:{<sid>}:state``       string  the state as JSON
``<p>:{<sid>}:history``     list    history entries as JSON, newest first, trimmed to N
``<p>:{<sid>}:lock``        string  advisory session lock: the owner, with a TTL
``<p>:{<sid>}:wlock``       string  short write mutex held by a writer's last CAS attempt
``<p>:{<sid>}:changes``     pubsub  change feed channel (a message per new version)
``<p>:{<sid>}:observations`` hash   endless-mode observations, field = Claude Code tool_use_id
==========================  ======  ========================================================

A write WATCHes ``version`` (and ``wlock``), reads, and in one MULTI/EXEC sets state and version,
pushes the history entry and trims the history; a failed EXEC leaves the old state whole. The
last attempt takes ``wlock`` first; optimistic writers back off while it is held, so it cannot
lose. The change message is published right after EXEC (a notification after the commit).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import orjson

from ..errors import ConflictError, StorageUnavailable
from ..models import HistoryEntry, LockInfo, Observation, ProjectState
from .base import BaseStore, Change, ChangeCallback, parse_entry, parse_observation
from .memory_redis import RedisMemoryMixin

log = logging.getLogger(__name__)
_T = TypeVar("_T")

WRITE_MUTEX_MS = 10_000
WRITE_MUTEX_WAIT_SECONDS = 30.0
SOCKET_TIMEOUT_SECONDS = 3.0  # also bounds a TLS handshake against a plain port
CONNECT_TIMEOUT_SECONDS = 3.0

# Compare-and-delete / compare-and-expire: only the owner releases or refreshes its lock.
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
_ACQUIRE = (
    "local cur = redis.call('get', KEYS[1]) "
    "if cur == false or cur == ARGV[1] then "
    "redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return {1, ARGV[1]} end "
    "return {0, cur, redis.call('pttl', KEYS[1])}"
)


def display_url(url: str) -> str:
    """The URL without its password (safe for logs, errors and `status`)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def is_cluster_url(url: str) -> bool:
    return urlsplit(url).scheme.endswith("+cluster")


class RedisStore(RedisMemoryMixin, BaseStore):
    def __init__(
        self,
        url: str,
        *,
        prefix: str = "ic",
        cluster: bool = False,
        history_size: int = 5,
        cas_attempts: int = 3,
    ) -> None:
        super().__init__(history_size=history_size, cas_attempts=cas_attempts)
        self.url = url
        self.display_url = display_url(url)
        self.prefix = prefix
        self.cluster = cluster or is_cluster_url(url)
        self._subscriptions: list[_Listener] = []
        self._client = self._make_client()
        self._ping()

    # ---- connection -------------------------------------------------------------------------
    def _make_client(self) -> Any:
        import redis
        from redis.backoff import ExponentialBackoff
        from redis.retry import Retry

        plain_url = self.url.replace("+cluster://", "://", 1)
        common: dict[str, Any] = {
            "socket_timeout": SOCKET_TIMEOUT_SECONDS,
            "socket_connect_timeout": CONNECT_TIMEOUT_SECONDS,
            # One quick retry rides over a dropped pooled connection; a server that is really
            # down is reported at once (and used again as soon as it is back).
            "retry": Retry(ExponentialBackoff(cap=0.5, base=0.05), 1),
        }
        try:
            if self.cluster:
                from redis.cluster import RedisCluster

                return RedisCluster.from_url(plain_url, **common)
            return redis.Redis.from_url(plain_url, health_check_interval=30, **common)
        except redis.RedisError as exc:
            raise self._unavailable(exc) from None
        except ValueError as exc:
            raise StorageUnavailable(
                f"the Redis URL {self.display_url} is malformed: {exc}",
                fix="use redis://[user:password@]host:port/db (rediss:// for TLS)",
            ) from None

    def _unavailable(self, exc: BaseException) -> StorageUnavailable:
        import redis

        if isinstance(exc, redis.AuthenticationError) or "WRONGPASS" in str(exc) or "NOAUTH" in str(exc):
            return StorageUnavailable(
                f"Redis at {self.display_url} rejected the credentials: {exc}",
                fix="put the right user and password in INFINITE_CONTEXT_STORE_URL (redis://user:pass@host:port)",
            )
        if self.url.startswith("rediss") and isinstance(exc, redis.TimeoutError):
            return StorageUnavailable(
                f"cannot reach Redis at {self.display_url}: the server did not answer the TLS handshake",
                fix="use redis:// if that port does not speak TLS, or the TLS port of your server",
            )
        return StorageUnavailable(
            f"cannot reach Redis at {self.display_url}: {exc}",
            fix="start Redis or correct INFINITE_CONTEXT_STORE_URL / REDIS_URL "
            "(rediss:// only for TLS ports); unset both to use the embedded SQLite store",
        )

    def _guard(self, what: Callable[[], _T]) -> _T:
        import redis

        try:
            return what()
        except redis.WatchError:
            raise
        except (redis.ConnectionError, redis.TimeoutError, redis.AuthenticationError, OSError) as exc:
            raise self._unavailable(exc) from None
        except redis.ResponseError as exc:
            if "NOAUTH" in str(exc) or "WRONGPASS" in str(exc):
                raise self._unavailable(exc) from None
            raise
        except redis.RedisError as exc:
            raise self._unavailable(exc) from None

    def _ping(self) -> None:
        self._guard(self._client.ping)

    # ---- keys -------------------------------------------------------------------------------
    def key(self, session_id: str, name: str) -> str:
        return f"{self.prefix}:{{{session_id}}}:{name}"

    def sessions_with(self, name: str) -> list[str]:
        """Sessions that have the key ``name`` (e.g. ``version``, ``observations``), by SCAN."""
        head, tail = f"{self.prefix}:{{", f"}}:{name}"
        keys = self._guard(lambda: list(self._client.scan_iter(match=f"{head}*{tail}", count=500)))
        found = set()
        for key in keys:
            text = key.decode() if isinstance(key, bytes) else key
            if text.startswith(head) and text.endswith(tail) and len(text) > len(head) + len(tail):
                found.add(text[len(head) : -len(tail)])
        return sorted(found)

    # ---- state ------------------------------------------------------------------------------
    def _read(self, session_id: str) -> tuple[int, bytes | None]:
        def read() -> tuple[int, bytes | None]:
            pipe = self._client.pipeline(transaction=False)
            pipe.get(self.key(session_id, "version"))
            pipe.get(self.key(session_id, "state"))
            try:
                version, raw = pipe.execute(raise_on_error=False)
            finally:
                pipe.reset()
            if isinstance(version, Exception):
                raise version
            if isinstance(raw, Exception):  # WRONGTYPE: a foreign value sits in the state key
                raw = b"<not a string>"
            return _int(version), raw

        return self._guard(read)

    def _transaction(
        self, session_id: str, expected: int | None, build: Callable[[int, bytes | None], HistoryEntry]
    ) -> HistoryEntry | None:
        """One WATCH/MULTI/EXEC round; None if the version moved (or the write mutex is held by
        someone else while ``expected`` is given, i.e. in an optimistic attempt)."""
        import redis

        version_key, state_key = self.key(session_id, "version"), self.key(session_id, "state")
        history_key, wlock_key = self.key(session_id, "history"), self.key(session_id, "wlock")

        def attempt() -> HistoryEntry | None:
            with self._client.pipeline(transaction=True) as pipe:
                pipe.watch(version_key, wlock_key)
                version = _int(pipe.get(version_key))
                if expected is not None and (version != expected or pipe.get(wlock_key) is not None):
                    pipe.unwatch()
                    return None
                try:
                    raw = pipe.get(state_key)
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
            entry = self._guard(attempt)
        except redis.WatchError as exc:
            # redis-py raises WatchError (not ConnectionError) when the connection drops while
            # keys are watched: the server is unreachable, not a concurrent writer.
            raise self._unavailable(exc) from None
        if entry is not None:
            self._publish(session_id, entry.version)
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
        key, token = self.key(session_id, "wlock"), uuid.uuid4().hex
        deadline = time.monotonic() + WRITE_MUTEX_WAIT_SECONDS
        delay = 0.005
        while not self._guard(lambda: self._client.set(key, token, nx=True, px=WRITE_MUTEX_MS)):
            if time.monotonic() > deadline:
                raise ConflictError(
                    f"waited {WRITE_MUTEX_WAIT_SECONDS:.0f} s for the write mutex of session {session_id}",
                    fix="retry; a writer that died releases it within 10 s",
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
        try:
            yield
        finally:
            self._guard(lambda: self._client.eval(_RELEASE, 1, key, token))

    def _publish(self, session_id: str, version: int) -> None:
        message = orjson.dumps(
            {"session_id": session_id, "version": version, "kind": "state", "at": time.time()}
        )
        try:
            self._client.publish(self.key(session_id, "changes"), message)
        except Exception:
            # The write is committed; a lost notification only delays listeners until the next one.
            log.warning("could not publish a change notification", exc_info=True)

    # ---- history ----------------------------------------------------------------------------
    def history(self, session_id: str, limit: int | None = None) -> list[HistoryEntry]:
        end = -1 if limit is None else limit - 1
        rows = self._guard(lambda: self._client.lrange(self.key(session_id, "history"), 0, end))
        entries = (parse_entry(raw, session_id=session_id) for raw in rows)
        return sorted((e for e in entries if e is not None), key=lambda e: -e.version)

    def history_entry(self, session_id: str, version: int) -> HistoryEntry | None:
        return next((e for e in self.history(session_id) if e.version == version), None)

    # ---- advisory lock ----------------------------------------------------------------------
    def acquire_lock(self, session_id: str, owner: str, ttl_seconds: float) -> LockInfo:
        ttl_ms = max(1, int(ttl_seconds * 1000))
        result = self._guard(
            lambda: self._client.eval(_ACQUIRE, 1, self.key(session_id, "lock"), owner, ttl_ms)
        )
        acquired, holder = int(result[0]), _text(result[1])
        if acquired:
            return LockInfo(acquired=True, owner=owner, holder=owner, expires_at=_after_ms(ttl_ms))
        return LockInfo(acquired=False, owner=owner, holder=holder, expires_at=_after_ms(int(result[2])))

    def release_lock(self, session_id: str, owner: str) -> bool:
        return bool(self._guard(lambda: self._client.eval(_RELEASE, 1, self.key(session_id, "lock"), owner)))

    def lock_holder(self, session_id: str) -> str | None:
        value = self._guard(lambda: self._client.get(self.key(session_id, "lock")))
        return _text(value) if value is not None else None

    def replace_session(self, session_id: str, state: ProjectState, history: list[HistoryEntry]) -> None:
        history_key = self.key(session_id, "history")
        newest_first = sorted(history, key=lambda e: -e.version)

        def write() -> None:
            with self._client.pipeline(transaction=True) as pipe:
                pipe.set(self.key(session_id, "state"), state.model_dump_json())
                pipe.set(self.key(session_id, "version"), state.meta.version)
                pipe.delete(history_key)
                if newest_first:
                    pipe.rpush(history_key, *[e.model_dump_json() for e in newest_first])
                pipe.execute()

        self._guard(write)
        self._publish(session_id, state.meta.version)

    # ---- observations -----------------------------------------------------------------------
    def put_observations(self, session_id: str, observations: list[Observation]) -> None:
        key = self.key(session_id, "observations")
        mapping = {o.tool_use_id: o.model_dump_json() for o in observations}
        if mapping:
            self._guard(lambda: self._client.hset(key, mapping=mapping))

    def get_observations(self, session_id: str, tool_use_ids: list[str]) -> dict[str, Observation]:
        if not tool_use_ids:
            return {}
        key = self.key(session_id, "observations")
        values = self._guard(lambda: self._client.hmget(key, tool_use_ids))
        found: dict[str, Observation] = {}
        for tool_use_id, raw in zip(tool_use_ids, values, strict=True):
            parsed = parse_observation(raw) if raw is not None else None
            if parsed is not None:
                found[tool_use_id] = parsed
        return found

    def all_observations(self, session_id: str) -> dict[str, Observation]:
        raw = self._guard(lambda: self._client.hgetall(self.key(session_id, "observations")))
        return {_text(t): o for t, value in raw.items() if (o := parse_observation(value)) is not None}

    def observation_sessions(self) -> list[str]:
        return self.sessions_with("observations")

    # ---- change feed ------------------------------------------------------------------------
    def subscribe(self, callback: ChangeCallback, session_id: str | None = None) -> _Listener:
        listener = _Listener(self, callback, session_id)
        self._subscriptions.append(listener)
        listener.start()
        return listener

    def sessions(self) -> list[str]:
        return self.sessions_with("version")

    def close(self) -> None:
        subs, self._subscriptions = self._subscriptions, []
        for sub in subs:
            sub.close()
        try:
            self._client.close()
        except Exception:
            log.debug("closing the Redis client failed", exc_info=True)


class _Listener:
    """Pub/sub listener thread; re-subscribes by itself after Redis comes back."""

    def __init__(self, store: RedisStore, callback: ChangeCallback, session_id: str | None) -> None:
        self._store = store
        self._callback = callback
        self._session_id = session_id
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ic-redis-feed", daemon=True)

    def start(self) -> None:
        self._thread.start()
        # Subscribing is asynchronous; wait briefly so a write right after subscribe() is seen.
        self._ready.wait(timeout=2.0)

    def _pubsub(self) -> Any:
        client = self._store._client
        if self._store.cluster:
            return client.pubsub(node=client.get_random_node())
        return client.pubsub(ignore_subscribe_messages=True)

    def _run(self) -> None:
        delay = 0.1
        while not self._stop.is_set():
            pubsub = None
            try:
                pubsub = self._pubsub()
                if self._session_id is None:
                    pubsub.psubscribe(f"{self._store.prefix}:{{*}}:changes")
                else:
                    pubsub.subscribe(self._store.key(self._session_id, "changes"))
                delay = 0.1
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=0.2)
                    self._ready.set()
                    if message and message.get("type") in ("message", "pmessage"):
                        self._deliver(message["data"])
            except Exception:
                if self._stop.is_set():
                    break
                log.debug("change feed lost its Redis connection; reconnecting", exc_info=True)
                self._stop.wait(delay)
                delay = min(delay * 2, 2.0)
            finally:
                if pubsub is not None:
                    try:
                        pubsub.close()
                    except Exception:
                        log.debug("closing pubsub failed", exc_info=True)

    def _deliver(self, data: bytes) -> None:
        try:
            payload = orjson.loads(data)
            change = Change(
                str(payload["session_id"]),
                int(payload["version"]),
                str(payload["kind"]),
                float(payload["at"]),
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            log.warning("ignored a malformed change message")
            return
        try:
            self._callback(change)
        except Exception:
            log.exception("change feed callback failed")

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=2)


def _int(value: object) -> int:
    if not isinstance(value, bytes | str | int):
        return 0
    try:
        return int(value)
    except ValueError:
        return 0


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _after_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(time.time() + max(ms, 0) / 1000, UTC)
