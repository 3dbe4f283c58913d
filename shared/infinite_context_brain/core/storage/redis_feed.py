"""The Redis change feed: a pub/sub listener thread per subscription, on the channel
``<prefix>:{<session>}:changes`` (or the pattern over every session)."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

import orjson

from .feed import FeedThread, Subscriptions
from .parts import Change, ChangeCallback
from .redis_conn import RedisConnection

if TYPE_CHECKING:
    from redis.client import PubSub

log = logging.getLogger(__name__)


class RedisFeed(Subscriptions["_Listener"]):
    def __init__(self, conn: RedisConnection) -> None:
        super().__init__()
        self.conn = conn

    def subscribe(self, callback: ChangeCallback, session_id: str | None = None) -> _Listener:
        return self._started(_Listener(self.conn, callback, session_id))


class _Listener(FeedThread):
    """Pub/sub listener thread; re-subscribes by itself after Redis comes back."""

    def __init__(self, conn: RedisConnection, callback: ChangeCallback, session_id: str | None) -> None:
        super().__init__(self._run, "ic-redis-feed")
        self._conn = conn
        self._callback = callback
        self._session_id = session_id
        self._ready = threading.Event()

    def start(self) -> None:
        super().start()
        # Subscribing is asynchronous; wait briefly so a write right after subscribe() is seen.
        self._ready.wait(timeout=2.0)

    def _pubsub(self) -> PubSub:
        from redis.cluster import RedisCluster

        client = self._conn.client
        # redis-py leaves pubsub() unannotated
        if isinstance(client, RedisCluster):
            return client.pubsub(node=client.get_random_node())  # type: ignore[no-untyped-call,no-any-return]
        return client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call,no-any-return]

    def _run(self) -> None:
        delay = 0.1
        while not self._stop.is_set():
            pubsub = None
            try:
                pubsub = self._pubsub()
                if self._session_id is None:
                    pubsub.psubscribe(f"{self._conn.prefix}:{{*}}:changes")
                else:
                    pubsub.subscribe(self._conn.key(self._session_id, "changes"))
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
