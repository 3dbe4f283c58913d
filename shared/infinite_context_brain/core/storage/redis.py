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
``<p>:{<sid>}:mem:...``     (many)  working memory and its index (memory_redis.py)
``<p>:store``               hash    the store's identity (``store_id``, identity.py)
==========================  ======  ========================================================

The parts share one client (redis_conn.py): state, history and locks (redis_states.py), the
change feed (redis_feed.py), observations (redis_observations.py), working memory
(memory_redis.py).
"""

from __future__ import annotations

from .identity import RedisIdentity
from .memory_redis import RedisMemory
from .redis_conn import RedisConnection, display_url, is_cluster_url
from .redis_feed import RedisFeed
from .redis_observations import RedisObservations
from .redis_states import RedisStates
from .store import Store

__all__ = ["RedisStore", "display_url", "is_cluster_url"]

#: what one call costs at most against a frozen server (no retry on a timeout: redis_conn.py);
#: also bounds a TLS handshake against a plain port. Redis answers our calls in milliseconds.
SOCKET_TIMEOUT_SECONDS = 2.0
CONNECT_TIMEOUT_SECONDS = 2.0


class RedisStore(Store):
    def __init__(
        self,
        url: str,
        *,
        prefix: str = "ic",
        cluster: bool = False,
        history_size: int = 5,
        cas_attempts: int = 3,
    ) -> None:
        conn = RedisConnection(
            url,
            prefix=prefix,
            cluster=cluster,
            socket_timeout=SOCKET_TIMEOUT_SECONDS,
            connect_timeout=CONNECT_TIMEOUT_SECONDS,
        )
        self.url, self.prefix, self.cluster = url, prefix, conn.cluster
        super().__init__(
            display_url=conn.display_url,
            states=RedisStates(conn, history_size=history_size, cas_attempts=cas_attempts),
            feed=RedisFeed(conn),
            observations=RedisObservations(conn),
            memory=RedisMemory(conn),
            identity=RedisIdentity(conn),
            close=conn.close,
        )
