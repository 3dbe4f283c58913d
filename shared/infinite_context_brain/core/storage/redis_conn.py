"""The one Redis client every part of the Redis store shares (redis.py composes them): the
connection settings, the mapping of Redis errors to the error tree, and the key scheme
``<prefix>:{<session>}:<name>`` (the hash tag keeps a session's keys in one cluster slot).

Errors: a malformed URL is a ``ConfigError`` (never a ValueError from the URL parser); an
unreachable, frozen or password-protected server is ``StorageUnavailable`` with the fix. A call
costs at most ``socket_timeout`` against a frozen server: only a dropped connection is retried
(once), never a timeout. Session ids are hash-tag safe: ``{``, ``}`` and ``%`` in an id are
percent-encoded in key names (an id starting with ``}`` made an empty tag, so each key of a
session hashed to its own slot and every write failed with CROSSSLOT on a cluster).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import orjson

from ..errors import ConfigError, StorageUnavailable

if TYPE_CHECKING:
    import redis
    from redis.cluster import RedisCluster

log = logging.getLogger(__name__)
_T = TypeVar("_T")


def display_url(url: str) -> str:
    """The URL without its password (safe for logs, errors and `status`), even when malformed."""
    try:
        parts = urlsplit(url)
        password, port = parts.password, parts.port
    except ValueError:  # "redis://[bad", a port that is not a number: hide whatever is before @
        return re.sub(r"//[^/@]*@", "//***@", url)
    if password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    netloc = f"{user}:***@{host}" + (f":{port}" if port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def text(value: object) -> str:
    """A reply value as text (redis-py returns bytes unless asked to decode)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def is_cluster_url(url: str) -> bool:
    return url.split("://", 1)[0].endswith("+cluster")


_URL_FIX = "use redis://[user:password@]host:port/db (rediss:// for TLS, redis+cluster:// for a cluster)"


def check_url(url: str) -> None:
    """ConfigError naming what is wrong with a Redis URL, before redis-py parses it."""
    shown = display_url(url)
    fix = _URL_FIX
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as exc:
        raise ConfigError(f"the Redis URL {shown} is malformed: {exc}", fix=fix) from None
    if parts.scheme.replace("+cluster", "") not in ("redis", "rediss", "unix"):
        raise ConfigError(f"the Redis URL {shown} has an unknown scheme {parts.scheme!r}", fix=fix)
    if parts.scheme != "unix" and not parts.hostname:
        raise ConfigError(f"the Redis URL {shown} names no host", fix=fix)


def hash_tag(session_id: str) -> str:
    """A session id as it appears inside ``{...}``: ``{``, ``}`` and ``%`` percent-encoded, and
    the empty id as ``%`` (an empty tag would not be a tag); other ids unchanged."""
    if not session_id:
        return "%"
    if not any(c in session_id for c in "{}%"):
        return session_id
    return session_id.replace("%", "%25").replace("{", "%7B").replace("}", "%7D")


def session_of_tag(tag: str) -> str:
    if tag == "%":
        return ""
    return tag.replace("%7D", "}").replace("%7B", "{").replace("%25", "%") if "%" in tag else tag


def _has_password(url: str) -> bool:
    try:
        return urlsplit(url).password is not None or "password=" in urlsplit(url).query
    except ValueError:
        return False


class RedisConnection:
    def __init__(
        self,
        url: str,
        *,
        prefix: str = "ic",
        cluster: bool = False,
        socket_timeout: float,
        connect_timeout: float,
    ) -> None:
        check_url(url)
        self.url = url
        self.display_url = display_url(url)
        self.prefix = prefix
        self.cluster = cluster or is_cluster_url(url)
        self.socket_timeout = socket_timeout
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
            # down is reported at once (and used again as soon as it is back). A timeout is not
            # retried: a frozen server costs one socket_timeout per call, not two.
            "retry": Retry(
                ExponentialBackoff(cap=0.5, base=0.05), 1, supported_errors=(redis.ConnectionError,)
            ),
        }
        from redis.exceptions import RedisClusterException

        try:
            if self.cluster:
                from redis.cluster import RedisCluster

                return RedisCluster.from_url(plain_url, **common)
            return redis.Redis.from_url(plain_url, health_check_interval=30, **common)
        except redis.RedisError as exc:
            raise self.unavailable(exc) from None
        except RedisClusterException as exc:  # no node reachable (not a RedisError)
            raise self.cluster_down(exc) from None
        except ValueError as exc:
            raise ConfigError(f"the Redis URL {self.display_url} is malformed: {exc}", fix=_URL_FIX) from None

    def unavailable(self, exc: BaseException) -> StorageUnavailable:
        import redis

        said = str(exc)
        wants_auth = "NOAUTH" in said or "Authentication required" in said or "HELLO must be called" in said
        if wants_auth and not _has_password(self.url):
            return StorageUnavailable(
                f"Redis at {self.display_url} requires a password and the URL gives none",
                fix="put it in INFINITE_CONTEXT_STORE_URL: redis://:PASSWORD@host:port/0 "
                "(or redis://USER:PASSWORD@host:port/0 for an ACL user)",
            )
        if isinstance(exc, redis.AuthenticationError) or "WRONGPASS" in said or wants_auth:
            return StorageUnavailable(
                f"Redis at {self.display_url} rejected the credentials: {exc}",
                fix="put the right user and password in INFINITE_CONTEXT_STORE_URL (redis://user:pass@host:port)",
            )
        if self.url.startswith("rediss") and isinstance(exc, redis.TimeoutError):
            return StorageUnavailable(
                f"cannot reach Redis at {self.display_url}: the server did not answer the TLS handshake",
                fix="use redis:// if that port does not speak TLS, or the TLS port of your server",
            )
        if isinstance(exc, redis.TimeoutError):
            return StorageUnavailable(
                f"Redis at {self.display_url} did not answer within {self.socket_timeout:g} s "
                "(frozen, overloaded or a slow network)",
                fix="check the server (redis-cli -u URL ping); nothing was written if a write timed out "
                "before it was sent, so retry once it answers",
            )
        return StorageUnavailable(
            f"cannot reach Redis at {self.display_url}: {exc}",
            fix="start Redis or correct INFINITE_CONTEXT_STORE_URL / REDIS_URL "
            "(rediss:// only for TLS ports); unset both to use the embedded SQLite store",
        )

    def cluster_down(self, exc: BaseException) -> StorageUnavailable:
        host = urlsplit(self.url.replace("+cluster://", "://", 1))
        return StorageUnavailable(
            f"the Redis cluster at {self.display_url} is down: {exc} (a hash slot is served by no "
            "reachable node)",
            fix=f"check it with `redis-cli -c -h {host.hostname} -p {host.port or 6379} CLUSTER INFO` "
            "(cluster_state must be ok: start the missing nodes or assign their slots), then retry",
        )

    def guard(self, what: Callable[[], _T]) -> _T:
        import redis
        from redis.exceptions import ClusterDownError, RedisClusterException

        try:
            return what()
        except redis.WatchError:
            raise
        except (ClusterDownError, RedisClusterException) as exc:  # the latter: not a RedisError
            raise self.cluster_down(exc) from None
        except (redis.ConnectionError, redis.TimeoutError, redis.AuthenticationError, OSError) as exc:
            raise self.unavailable(exc) from None
        except redis.ResponseError as exc:
            if any(s in str(exc) for s in ("NOAUTH", "WRONGPASS", "HELLO must be called")):
                raise self.unavailable(exc) from None
            if str(exc).startswith("CLUSTERDOWN"):
                raise self.cluster_down(exc) from None
            if str(exc).startswith(("OOM", "READONLY", "MISCONF", "CROSSSLOT", "MOVED")):
                raise StorageUnavailable(
                    f"Redis at {self.display_url} refused a write: {exc}",
                    fix="free memory on the server (OOM), write to the primary (READONLY) or fix its "
                    "persistence (MISCONF), then retry",
                ) from None
            raise
        except redis.RedisError as exc:
            raise self.unavailable(exc) from None

    # ---- keys -------------------------------------------------------------------------------
    def key(self, session_id: str, name: str) -> str:
        return f"{self.prefix}:{{{hash_tag(session_id)}}}:{name}"

    def sessions_with(self, name: str) -> list[str]:
        """Sessions that have the key ``name`` (e.g. ``version``, ``observations``), by SCAN."""
        head, tail = f"{self.prefix}:{{", f"}}:{name}"
        keys = self.guard(lambda: list(self.client.scan_iter(match=f"{head}*{tail}", count=500)))
        found = set()
        for key in map(text, keys):
            if key.startswith(head) and key.endswith(tail) and len(key) > len(head) + len(tail):
                found.add(session_of_tag(key[len(head) : -len(tail)]))
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
