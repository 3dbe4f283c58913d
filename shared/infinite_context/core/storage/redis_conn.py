"""The one Redis client every part of the Redis store shares (redis.py composes them): the
connection settings, the mapping of Redis errors to ``StorageUnavailable``, and the key scheme
``<prefix>:{<session>}:<name>`` (the hash tag keeps a session's keys in one cluster slot)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import orjson

from ..errors import StorageUnavailable

if TYPE_CHECKING:
    import redis
    from redis.cluster import RedisCluster

log = logging.getLogger(__name__)
_T = TypeVar("_T")


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


class RedisConnection:
    def __init__(
        self,
        url: str,
        *,
        prefix: str = "ic",
        cluster: bool = False,
        socket_timeout: float = 3.0,
        connect_timeout: float = 3.0,
    ) -> None:
        self.url = url
        self.display_url = display_url(url)
        self.prefix = prefix
        self.cluster = cluster or is_cluster_url(url)
        self.client = self._make_client(socket_timeout, connect_timeout)
        self.guard(self.client.ping)

    def _make_client(self, socket_timeout: float, connect_timeout: float) -> redis.Redis | RedisCluster:
        import redis
        from redis.backoff import ExponentialBackoff
        from redis.retry import Retry

        plain_url = self.url.replace("+cluster://", "://", 1)
        common: dict[str, Any] = {
            "socket_timeout": socket_timeout,
            "socket_connect_timeout": connect_timeout,
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
            raise self.unavailable(exc) from None
        except ValueError as exc:
            raise StorageUnavailable(
                f"the Redis URL {self.display_url} is malformed: {exc}",
                fix="use redis://[user:password@]host:port/db (rediss:// for TLS)",
            ) from None

    def unavailable(self, exc: BaseException) -> StorageUnavailable:
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

    def guard(self, what: Callable[[], _T]) -> _T:
        import redis

        try:
            return what()
        except redis.WatchError:
            raise
        except (redis.ConnectionError, redis.TimeoutError, redis.AuthenticationError, OSError) as exc:
            raise self.unavailable(exc) from None
        except redis.ResponseError as exc:
            if "NOAUTH" in str(exc) or "WRONGPASS" in str(exc):
                raise self.unavailable(exc) from None
            raise
        except redis.RedisError as exc:
            raise self.unavailable(exc) from None

    # ---- keys -------------------------------------------------------------------------------
    def key(self, session_id: str, name: str) -> str:
        return f"{self.prefix}:{{{session_id}}}:{name}"

    def sessions_with(self, name: str) -> list[str]:
        """Sessions that have the key ``name`` (e.g. ``version``, ``observations``), by SCAN."""
        head, tail = f"{self.prefix}:{{", f"}}:{name}"
        keys = self.guard(lambda: list(self.client.scan_iter(match=f"{head}*{tail}", count=500)))
        found = set()
        for key in keys:
            text = key.decode() if isinstance(key, bytes) else key
            if text.startswith(head) and text.endswith(tail) and len(text) > len(head) + len(tail):
                found.add(text[len(head) : -len(tail)])
        return sorted(found)

    def publish(self, session_id: str, version: int) -> None:
        """A change notification, sent after the write committed."""
        message = orjson.dumps(
            {"session_id": session_id, "version": version, "kind": "state", "at": time.time()}
        )
        try:
            self.client.publish(self.key(session_id, "changes"), message)
        except Exception:
            # The write is committed; a lost notification only delays listeners until the next one.
            log.warning("could not publish a change notification", exc_info=True)

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:
            log.debug("closing the Redis client failed", exc_info=True)
