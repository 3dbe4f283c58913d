"""The rows and commands of the Redis memory index (memory_redis.py): how an item's ``meta`` row
and its indexed terms are encoded (a posting's score: memory_redis_put.PUT), and the grouped
commands of one write (``Batch``). Queries read the index with memory_redis_search.py's scripts."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from ..memory.model import MemoryItem
from .access import parse_item
from .redis_conn import text

if TYPE_CHECKING:
    from redis.client import Pipeline
    from redis.cluster import ClusterPipeline
    from redis.typing import EncodableT, FieldT


def parse(raw: Any, access: Any = None) -> MemoryItem | None:
    if raw is None:
        return None
    if access is None:
        return parse_item(raw)
    accessed, count = text(access).split()
    return parse_item(raw, int(accessed), int(count))


def vocabulary(raw: Any) -> dict[str, Any]:
    """An item's indexed terms from ``terms``: JSON counts, or schema 1's space-separated words."""
    raw_text = text(raw)
    return dict(json.loads(raw_text)) if raw_text.startswith("{") else dict.fromkeys(raw_text.split())


class Meta:
    """One item's row in ``meta``."""

    def __init__(self, raw: Any) -> None:
        seq, dl, tokens, archived, pinned, content_type = text(raw).split()
        self.seq, self.dl, self.tokens = int(seq), int(dl), int(tokens)
        self.archived, self.pinned, self.content_type = archived == "1", pinned == "1", content_type

    @property
    def live_tokens(self) -> int:
        return 0 if self.archived else self.tokens


def meta_row(seq: int, dl: int, item: MemoryItem) -> str:
    return f"{seq} {dl} {item.tokens} {int(item.archived)} {int(item.pinned)} {item.content_type}"


class Batch:
    """Commands of one write grouped by key, so a MULTI holds one command per key (ZADD with
    every member, HSET with every field) instead of one per item and key: a bulk store of 500
    items or a compaction archiving 1,000 is a few thousand commands, not tens of thousands.
    Removals of a key run before its additions (re-indexing removes then adds a posting)."""

    def __init__(self) -> None:
        self.deleted: list[str] = []
        self.removed: dict[tuple[str, str], dict[str, None]] = {}
        self.added: dict[tuple[str, str], dict[str, Any]] = {}
        self.increments: dict[tuple[str, str], int] = {}

    def delete(self, key: str) -> None:
        self.deleted.append(key)

    def _remove(self, kind: str, key: str, member: str) -> None:
        self.removed.setdefault((kind, key), {})[member] = None

    def hdel(self, key: str, member: str) -> None:
        self._remove("hash", key, member)

    def zrem(self, key: str, member: str) -> None:
        self._remove("zset", key, member)

    def srem(self, key: str, member: str) -> None:
        self._remove("set", key, member)

    def hset(self, key: str, member: str, value: Any) -> None:
        self.added.setdefault(("hash", key), {})[member] = value

    def zadd(self, key: str, mapping: dict[str, float], xx: bool = False) -> None:
        self.added.setdefault(("zset-xx" if xx else "zset", key), {}).update(mapping)

    def sadd(self, key: str, member: str) -> None:
        self.added.setdefault(("set", key), {})[member] = None

    def hincrby(self, key: str, name: str, delta: int) -> None:
        self.increments[(key, name)] = self.increments.get((key, name), 0) + delta

    def emit(self, pipe: Pipeline | ClusterPipeline) -> None:
        for key in sorted(set(self.deleted)):
            pipe.delete(key)
        for (kind, key), members in self.removed.items():
            names = list(members)
            if kind == "hash":
                pipe.hdel(key, *names)
            elif kind == "zset":
                pipe.zrem(key, *names)
            else:
                pipe.srem(key, *names)
        for (kind, key), values in self.added.items():
            if kind == "hash":
                pipe.hset(key, mapping=cast("dict[FieldT, EncodableT]", values))
            elif kind.startswith("zset"):
                pipe.zadd(key, values, xx=kind == "zset-xx")
            else:
                pipe.sadd(key, *values)
        for (key, name), delta in self.increments.items():
            if delta:
                pipe.hincrby(key, name, delta)
