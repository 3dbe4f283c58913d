"""The Redis memory part: items plus an inverted index, all under the session's hash tag.

Keys (``ic:{<session>}:mem:...``): ``items`` HASH id -> item JSON; ``order`` ZSET id -> created
(live items), ``archive`` ZSET id -> created (archived items); ``tokens`` HASH id -> tokens of live
items; ``pinned`` SET; ``terms`` HASH id -> the item's indexed terms; ``t:<term>`` HASH id ->
"body_tf tag_tf" (a posting list); ``dl`` HASH id -> document length; ``config`` STRING.
An upsert WATCHes the item's ``terms`` entry, so its old postings are removed in the same MULTI
that adds the new ones. BM25 (k1 1.2, b 0.75, tag matches weighted 5x) is computed here from the
postings of the query's terms only.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import TYPE_CHECKING, Any

from ..errors import ConflictError
from ..memory.model import MemoryItem
from .parts import IndexedItem, IndexTerms
from .redis_conn import RedisConnection

if TYPE_CHECKING:
    from redis.client import Pipeline
    from redis.cluster import ClusterPipeline
    from redis.typing import EncodableT, FieldT

K1, B, TAG_WEIGHT = 1.2, 0.75, 5.0
WATCH_ATTEMPTS = 20
EXPORT_BATCH = 2000  # posting reads per pipeline round trip


def _parse(raw: Any) -> MemoryItem | None:
    try:
        return MemoryItem.model_validate_json(raw)
    except ValueError:
        return None


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisMemory:
    def __init__(self, conn: RedisConnection) -> None:
        self.conn = conn
        self._client = conn.client
        self._guard = conn.guard

    def _m(self, session_id: str, name: str) -> str:
        return self.conn.key(session_id, f"mem:{name}")

    def memory_put(self, session_id: str, items: list[IndexedItem]) -> None:
        import redis

        terms_key = self._m(session_id, "terms")

        def write() -> None:
            for _ in range(WATCH_ATTEMPTS):
                with self._client.pipeline(transaction=True) as pipe:
                    try:
                        pipe.watch(terms_key)
                        ids = [i.item.id for i in items]
                        old = dict(zip(ids, pipe.hmget(terms_key, ids), strict=True)) if ids else {}
                        pipe.multi()
                        for item, terms in items:
                            self._queue_index(pipe, session_id, item.id, terms, old.get(item.id))
                            self._queue_item(pipe, session_id, item)
                        pipe.execute()
                        return
                    except redis.WatchError:
                        continue
            raise ConflictError(
                f"the working-memory index of session {session_id} kept changing",
                fix="retry the store",
            )

        self._guard(write)

    def memory_update(self, session_id: str, items: list[MemoryItem]) -> None:
        def write() -> None:
            with self._client.pipeline(transaction=True) as pipe:
                for item in items:
                    self._queue_item(pipe, session_id, item)
                pipe.execute()

        if items:
            self._guard(write)

    def _queue_item(self, pipe: Pipeline | ClusterPipeline, sid: str, item: MemoryItem) -> None:
        pipe.hset(self._m(sid, "items"), item.id, item.model_dump_json())
        created = item.created_at.timestamp()
        if item.archived:
            pipe.zrem(self._m(sid, "order"), item.id)
            pipe.zadd(self._m(sid, "archive"), {item.id: created})
            pipe.hdel(self._m(sid, "tokens"), item.id)
        else:
            pipe.zrem(self._m(sid, "archive"), item.id)
            pipe.zadd(self._m(sid, "order"), {item.id: created})
            pipe.hset(self._m(sid, "tokens"), item.id, item.tokens)
        if item.pinned:
            pipe.sadd(self._m(sid, "pinned"), item.id)
        else:
            pipe.srem(self._m(sid, "pinned"), item.id)

    def _queue_index(
        self, pipe: Pipeline | ClusterPipeline, sid: str, item_id: str, terms: IndexTerms, old_terms: Any
    ) -> None:
        if old_terms:
            for term in _s(old_terms).split():
                pipe.hdel(self._m(sid, f"t:{term}"), item_id)
        body, tags = Counter(terms.body), Counter(terms.tags)
        vocabulary = sorted(set(body) | set(tags))
        for term in vocabulary:
            pipe.hset(self._m(sid, f"t:{term}"), item_id, f"{body.get(term, 0)} {tags.get(term, 0)}")
        pipe.hset(self._m(sid, "terms"), item_id, " ".join(vocabulary))
        pipe.hset(self._m(sid, "dl"), item_id, sum(body.values()) + sum(tags.values()))

    def memory_touch(self, session_id: str, items: list[MemoryItem]) -> None:
        mapping: dict[FieldT, EncodableT] = {item.id: item.model_dump_json() for item in items}
        if mapping:
            self._guard(lambda: self._client.hset(self._m(session_id, "items"), mapping=mapping))

    def memory_get(self, session_id: str, ids: list[str]) -> dict[str, MemoryItem]:
        if not ids:
            return {}
        values = self._guard(lambda: self._client.hmget(self._m(session_id, "items"), ids))
        found: dict[str, MemoryItem] = {}
        for raw in values:
            item = _parse(raw) if raw is not None else None
            if item is not None:
                found[item.id] = item
        return found

    def memory_all(self, session_id: str, archived: bool | None = False) -> list[MemoryItem]:
        values = self._guard(lambda: self._client.hvals(self._m(session_id, "items")))
        items = [item for raw in values if (item := _parse(raw)) is not None]
        return items if archived is None else [i for i in items if i.archived == archived]

    def memory_page(self, session_id: str, archived: bool, offset: int, limit: int) -> list[MemoryItem]:
        key = self._m(session_id, "archive" if archived else "order")
        ids = [_s(i) for i in self._guard(lambda: self._client.zrevrange(key, offset, offset + limit - 1))]
        found = self.memory_get(session_id, ids)
        return [found[i] for i in ids if i in found]

    def memory_delete(self, session_id: str, ids: list[str]) -> int:
        existing = [i for i, item in self.memory_get(session_id, ids).items() if item is not None]
        if not existing:
            return 0

        def delete() -> None:
            terms = self._client.hmget(self._m(session_id, "terms"), existing)
            with self._client.pipeline(transaction=True) as pipe:
                for item_id, old in zip(existing, terms, strict=True):
                    for term in _s(old or b"").split():
                        pipe.hdel(self._m(session_id, f"t:{term}"), item_id)
                    for name in ("items", "terms", "dl", "tokens"):
                        pipe.hdel(self._m(session_id, name), item_id)
                    pipe.zrem(self._m(session_id, "order"), item_id)
                    pipe.zrem(self._m(session_id, "archive"), item_id)
                    pipe.srem(self._m(session_id, "pinned"), item_id)
                pipe.execute()

        self._guard(delete)
        return len(existing)

    def memory_search(
        self, session_id: str, terms: list[str], limit: int, archived: bool
    ) -> list[tuple[str, float]]:
        unique = list(dict.fromkeys(t for t in terms if t))
        if not unique:
            return []

        def read() -> tuple[list[Any], dict[Any, Any], int]:
            pipe = self._client.pipeline(transaction=False)
            for term in unique:
                pipe.hgetall(self._m(session_id, f"t:{term}"))
            pipe.hgetall(self._m(session_id, "dl"))
            results = pipe.execute()
            return results[:-1], results[-1], len(results[-1])

        postings, lengths, docs = self._guard(read)
        if not docs:
            return []
        average = sum(int(v) for v in lengths.values()) / docs
        scores: dict[str, float] = {}
        for posting in postings:
            if not posting:
                continue
            idf = math.log((docs - len(posting) + 0.5) / (len(posting) + 0.5) + 1)
            for raw_id, raw_tf in posting.items():
                body_tf, tag_tf = (int(x) for x in _s(raw_tf).split())
                tf = body_tf + TAG_WEIGHT * tag_tf
                dl = int(lengths.get(raw_id, 0) or 0)
                item_id = _s(raw_id)
                scores[item_id] = scores.get(item_id, 0.0) + idf * tf * (K1 + 1) / (
                    tf + K1 * (1 - B + B * dl / average)
                )
        if not scores:
            return []
        wanted = self._m(session_id, "archive" if archived else "order")
        ids = list(scores)
        pipe_scores = self._guard(lambda: self._pipeline_zscores(wanted, ids))
        ranked = [(i, scores[i]) for i, present in zip(ids, pipe_scores, strict=True) if present is not None]
        ranked.sort(key=lambda pair: -pair[1])
        return ranked[:limit]

    def _pipeline_zscores(self, key: str, ids: list[str]) -> list[Any]:
        pipe = self._client.pipeline(transaction=False)
        for item_id in ids:
            pipe.zscore(key, item_id)
        return list(pipe.execute())

    def memory_usage(self, session_id: str) -> tuple[int, int, int, int]:
        def read() -> list[Any]:
            pipe = self._client.pipeline(transaction=False)
            pipe.hvals(self._m(session_id, "tokens"))
            pipe.zcard(self._m(session_id, "order"))
            pipe.scard(self._m(session_id, "pinned"))
            pipe.zcard(self._m(session_id, "archive"))
            return list(pipe.execute())

        tokens, live, pinned, archived = self._guard(read)
        return sum(int(t) for t in tokens), int(live), int(pinned), int(archived)

    def memory_export(self, session_id: str) -> list[IndexedItem]:
        """Items with their terms read back from the postings (term counts are what BM25 uses)."""

        def read_items() -> tuple[dict[Any, Any], dict[Any, Any]]:
            pipe = self._client.pipeline(transaction=False)
            pipe.hgetall(self._m(session_id, "items"))
            pipe.hgetall(self._m(session_id, "terms"))
            items, vocabulary = pipe.execute()
            return items, vocabulary

        raw_items, raw_vocabularies = self._guard(read_items)
        items = [item for raw in raw_items.values() if (item := _parse(raw)) is not None]
        vocabularies = {_s(k): _s(v) for k, v in raw_vocabularies.items()}
        wanted = [(item.id, term) for item in items for term in vocabularies.get(item.id, "").split()]
        counts: list[Any] = []
        for start in range(0, len(wanted), EXPORT_BATCH):
            counts += self._pipeline_postings(session_id, wanted[start : start + EXPORT_BATCH])
        body: dict[str, list[str]] = {}
        tags: dict[str, list[str]] = {}
        for (item_id, term), raw_tf in zip(wanted, counts, strict=True):
            if raw_tf is None:
                continue
            body_tf, tag_tf = (int(x) for x in _s(raw_tf).split())
            body.setdefault(item_id, []).extend([term] * body_tf)
            tags.setdefault(item_id, []).extend([term] * tag_tf)
        items.sort(key=lambda i: (i.created_at, i.id))
        return [
            IndexedItem(i, IndexTerms(tuple(body.get(i.id, ())), tuple(tags.get(i.id, ())))) for i in items
        ]

    def _pipeline_postings(self, session_id: str, wanted: list[tuple[str, str]]) -> list[Any]:
        def read() -> list[Any]:
            pipe = self._client.pipeline(transaction=False)
            for item_id, term in wanted:
                pipe.hget(self._m(session_id, f"t:{term}"), item_id)
            return list(pipe.execute())

        return self._guard(read)

    def memory_sessions(self) -> list[str]:
        found = self.conn.sessions_with("mem:items") + self.conn.sessions_with("mem:config")
        return sorted(set(found))

    def memory_config(self, session_id: str) -> dict[str, Any] | None:
        raw = self._guard(lambda: self._client.get(self._m(session_id, "config")))
        if raw is None:
            return None
        try:
            data = json.loads(raw)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def memory_set_config(self, session_id: str, config: dict[str, Any]) -> None:
        self._guard(lambda: self._client.set(self._m(session_id, "config"), json.dumps(config)))
