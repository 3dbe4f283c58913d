"""The Redis memory part: items, a per-session inverted index and running totals, all under the
session's hash tag (plain Redis >= 6: hashes, sets, sorted sets and Lua scripts, no modules).

Keys (``ic:{<session>}:mem:...``):

=================  ======  ===================================================================
``items``          HASH    id -> item JSON
``access``         HASH    id -> "accessed_at_micros access_count" (authority over the JSON's)
``meta``           HASH    id -> "seq dl tokens archived pinned content_type"
``terms``          HASH    id -> JSON {term: [body count, tag count]} (removal, ``store copy``)
``t:<term>``       ZSET    posting list: id -> seq * 65536 + body count * 256 + tag count
                           (counts capped at 255); newest first by ``seq``, df = ZCARD
``order``          ZSET    live id -> created_at;  ``archive``: archived id -> created_at
``pinned``         SET     live pinned ids
``rank``           ZSET    live id -> retention standing, pins first (``recall``)
``recent:<type>``  ZSET    live id of that content type -> accessed_at micros (``recall``)
``stats``          HASH    used (live tokens), docs, length (indexed words), seq
``config``         STRING  the memory configuration;  ``schema``: "2"
=================  ======  ===================================================================

A put (new or replaced items) is one atomic script call (memory_redis_put.py) that reads the old
rows and ``seq`` and writes the item, its postings and the deltas of ``stats``; updates and
deletes WATCH ``meta`` and ``stats``, read the old rows (one script call) and apply their deltas
in one MULTI. Usage is one HGET and counts are ZCARD/SCARD. Search reads ZCARDs and capped
ZREVRANGEs in scripts that filter and compact the postings on the server
(memory_redis_search.py); storage/search.py bounds the work and computes BM25 exactly as on
SQLite. Pages and recall's ranked reads are one script call each. Access bookkeeping is written
to ``access``/``rank``/``recent`` only (ZADD XX, so a deleted or archived item is never put
back). Sessions written by schema 1 (hash posting lists) are converted on first use (``_ready``).
"""

from __future__ import annotations

import json
import threading
from functools import partial
from typing import Any

import orjson

from ..errors import ConflictError
from ..memory.model import MemoryItem, rank_key
from . import search
from .access import micros
from .memory_redis_put import PutCall, put_reply
from .memory_redis_rows import Batch, Meta, meta_row, parse, vocabulary
from .memory_redis_search import Postings, Scripts
from .parts import IndexedItem, IndexTerms, PutOutcome, Usage, stored_config
from .redis_conn import RedisConnection, text

WATCH_ATTEMPTS = 20
SCHEMA = "2"
READ_CHUNK = 1000
#: sessions whose key prefix is kept (one process serves a few)
PREFIXES = 1000


class RedisMemory:
    def __init__(self, conn: RedisConnection) -> None:
        self.conn = conn
        self._client = conn.client
        self._guard = conn.guard
        self._checked: set[str] = set()
        self._prefixes: dict[str, str] = {}
        self.scripts = Scripts(conn.client)
        #: per thread, read with a search: (session, rows) for the query's ``memory_get`` right
        #: after; used once
        self._prefetched = threading.local()

    def _m(self, session_id: str, name: str) -> str:
        """The key ``mem:<name>`` of a session. Its prefix is built once per session: a write of
        many items names ~7 keys per item (a compaction archiving 1,000 items: 7,000 keys), and
        escaping the session id into its hash tag each time was a fifth of that write's time."""
        prefix = self._prefixes.get(session_id)
        if prefix is None:
            if len(self._prefixes) >= PREFIXES:
                self._prefixes.clear()
            prefix = self._prefixes[session_id] = self.conn.key(session_id, "mem:")
        return prefix + name

    # ---- writes -------------------------------------------------------------------------------
    def _transaction(self, session_id: str, ids: list[str], queue: Any, with_terms: bool = True) -> None:
        """Run ``queue(pipe, old_meta, old_terms, seq)`` in a MULTI that fails if ``meta`` or
        ``stats`` changed since the old rows and the last ``seq`` were read (another writer):
        then read again and retry. The rows are read by one script call (ROWS)."""
        import redis

        keys = [self._m(session_id, n) for n in ("meta", "terms", "stats")]

        def write() -> None:
            for _ in range(WATCH_ATTEMPTS):
                with self._client.pipeline(transaction=True) as pipe:
                    try:
                        pipe.watch(keys[0], keys[2])
                        metas, terms, seq = self._rows(pipe, keys, ids, with_terms)
                        old = {i: Meta(v) for i, v in zip(ids, metas or [], strict=False) if v}
                        old_terms = {i: vocabulary(v) for i, v in zip(ids, terms or [], strict=False) if v}
                        pipe.multi()
                        batch = Batch()
                        queue(batch, old, old_terms, int(seq or 0))
                        batch.emit(pipe)
                        pipe.set(self._m(session_id, "schema"), SCHEMA)
                        pipe.execute()
                        return
                    except redis.WatchError:
                        continue
            raise ConflictError(
                f"the working memory of session {session_id} kept changing", fix="retry the write"
            )

        self._guard(write)

    def _rows(self, pipe: Any, keys: list[str], ids: list[str], with_terms: bool) -> tuple[Any, Any, Any]:
        """The old ``meta`` and ``terms`` rows of ``ids`` and the last ``seq``, read on the watching
        connection: one ROWS script call, or three commands on a cluster (redis-py's cluster
        pipeline refuses scripts)."""
        if not self.conn.cluster:
            args = ["1" if with_terms else "0", *ids]
            return tuple(orjson.loads(self.scripts.on_connection(pipe, self.scripts.rows, keys, args)))
        metas = pipe.hmget(keys[0], ids) if ids else []
        terms = pipe.hmget(keys[1], ids) if ids and with_terms else []
        return metas, terms, pipe.hget(keys[2], "seq")

    def memory_put(self, session_id: str, items: list[IndexedItem]) -> PutOutcome:
        self._forget_prefetched()
        self._ready(session_id)
        done = self._put(session_id, items) if items else None
        if done is None:  # nothing written, or a reply without the figures
            return PutOutcome(self.memory_usage(session_id), self.memory_config(session_id))
        return done

    def _put(
        self, session_id: str, items: list[IndexedItem], drop: frozenset[str] = frozenset()
    ) -> PutOutcome | None:
        """One PUT script call (memory_redis_put.py); again with more posting lists declared when
        a replaced item was indexed under terms the new version does not have."""
        call = PutCall(partial(self._m, session_id), items, SCHEMA, drop)
        for _ in range(WATCH_ATTEMPTS):
            reply = self._guard(partial(self.scripts.put, keys=call.keys(), args=call.args()))
            done = put_reply(reply)
            if not done.missing:  # with what memory_usage and memory_config would read now
                return None if done.usage is None else PutOutcome(done.usage, stored_config(done.config))
            call.declare(done.missing)
        raise ConflictError(
            f"the working memory of session {session_id} kept changing", fix="retry the write"
        )

    def memory_update(self, session_id: str, items: list[MemoryItem]) -> None:
        if not items:
            return
        self._forget_prefetched()
        self._ready(session_id)

        def queue(pipe: Batch, old: dict[str, Meta], _terms: dict[str, Any], _seq: int) -> None:
            used = 0
            for item in items:
                before = old.get(item.id)
                if before is None:
                    continue  # deleted meanwhile: an update does not bring it back
                self._queue_item(pipe, session_id, item, before, before.seq, before.dl)
                used += (0 if item.archived else item.tokens) - before.live_tokens
            self._queue_stats(pipe, session_id, used=used)

        self._transaction(session_id, [i.id for i in items], queue, with_terms=False)

    def _queue_item(
        self,
        pipe: Batch,
        sid: str,
        item: MemoryItem,
        before: Meta | None,
        seq: int,
        dl: int,
    ) -> None:
        pipe.hset(self._m(sid, "items"), item.id, item.model_dump_json())
        pipe.hset(self._m(sid, "meta"), item.id, meta_row(seq, dl, item))
        created = item.created_at.timestamp()
        if before is not None and before.content_type != item.content_type:
            pipe.zrem(self._m(sid, f"recent:{before.content_type}"), item.id)
        if item.archived:
            pipe.zrem(self._m(sid, "order"), item.id)
            pipe.zadd(self._m(sid, "archive"), {item.id: created})
            pipe.zrem(self._m(sid, "rank"), item.id)
            pipe.zrem(self._m(sid, f"recent:{item.content_type}"), item.id)
            pipe.srem(self._m(sid, "pinned"), item.id)
            return
        pipe.zrem(self._m(sid, "archive"), item.id)
        pipe.zadd(self._m(sid, "order"), {item.id: created})
        pipe.zadd(self._m(sid, "rank"), {item.id: rank_key(item)})
        pipe.zadd(self._m(sid, f"recent:{item.content_type}"), {item.id: micros(item.accessed_at)})
        if item.pinned:
            pipe.sadd(self._m(sid, "pinned"), item.id)
        else:
            pipe.srem(self._m(sid, "pinned"), item.id)

    def _queue_stats(self, pipe: Batch, sid: str, **deltas: int) -> None:
        for name, delta in deltas.items():
            pipe.hincrby(self._m(sid, "stats"), name, delta)

    def memory_accessed(self, session_id: str, items: list[MemoryItem]) -> None:
        self._forget_prefetched()

        def write() -> None:
            batch = Batch()
            for item in items:
                accessed = micros(item.accessed_at)
                batch.hset(self._m(session_id, "access"), item.id, f"{accessed} {item.access_count}")
                batch.zadd(self._m(session_id, "rank"), {item.id: rank_key(item)}, xx=True)
                batch.zadd(self._m(session_id, f"recent:{item.content_type}"), {item.id: accessed}, xx=True)
            pipe = self._client.pipeline(transaction=True)
            batch.emit(pipe)
            pipe.execute()

        if items:
            self._guard(write)

    def memory_delete(self, session_id: str, ids: list[str]) -> int:
        self._forget_prefetched()
        self._ready(session_id)
        deleted: list[int] = []

        def queue(pipe: Batch, old: dict[str, Meta], old_terms: dict[str, Any], _seq: int) -> None:
            deleted[:] = [len(old)]
            used = length = 0
            for item_id, before in old.items():
                for term in old_terms.get(item_id, {}):
                    pipe.zrem(self._m(session_id, f"t:{term}"), item_id)
                for name in ("items", "access", "meta", "terms"):
                    pipe.hdel(self._m(session_id, name), item_id)
                for name in ("order", "archive", "rank", f"recent:{before.content_type}"):
                    pipe.zrem(self._m(session_id, name), item_id)
                pipe.srem(self._m(session_id, "pinned"), item_id)
                used -= before.live_tokens
                length -= before.dl
            self._queue_stats(pipe, session_id, used=used, docs=-len(old), length=length)

        self._transaction(session_id, ids, queue)
        return deleted[0] if deleted else 0

    # ---- reads --------------------------------------------------------------------------------
    def _items(self, session_id: str, ids: list[str]) -> list[MemoryItem]:
        found: list[MemoryItem] = []
        for start in range(0, len(ids), READ_CHUNK):
            chunk = ids[start : start + READ_CHUNK]

            def read(chunk: list[str] = chunk) -> list[Any]:
                pipe = self._client.pipeline(transaction=False)
                pipe.hmget(self._m(session_id, "items"), chunk)
                pipe.hmget(self._m(session_id, "access"), chunk)
                return list(pipe.execute())

            raws, accesses = self._guard(read)
            found += [i for raw, acc in zip(raws, accesses, strict=True) if (i := parse(raw, acc))]
        return found

    def memory_get(self, session_id: str, ids: list[str]) -> dict[str, MemoryItem]:
        self._ready(session_id)
        rows = self._take_rows(session_id)  # a query's get right after its search
        if rows is not None and all(i in rows for i in ids):
            return {i: item for i in ids if (item := parse(*rows[i])) is not None}
        return {i.id: i for i in self._items(session_id, ids)} if ids else {}

    def _take_rows(self, session_id: str) -> dict[str, tuple[Any, Any]] | None:
        """The items this thread's last search read with its statistics, if it searched
        ``session_id``; once. The call right after (the query's ``memory_get``) uses them instead
        of asking Redis again; they are as current as what they came with, and any write of this
        store drops them."""
        taken = getattr(self._prefetched, "rows", None)
        self._prefetched.rows = None
        return taken[1] if taken is not None and taken[0] == session_id else None

    def _forget_prefetched(self) -> None:
        self._prefetched = threading.local()  # every thread's: a write makes them stale

    def memory_all(self, session_id: str, archived: bool | None = False) -> list[MemoryItem]:
        self._ready(session_id)
        if archived is None:

            def read() -> list[Any]:
                pipe = self._client.pipeline(transaction=False)
                pipe.hgetall(self._m(session_id, "items"))
                pipe.hgetall(self._m(session_id, "access"))
                return list(pipe.execute())

            raws, accesses = self._guard(read)
            access = {text(k): v for k, v in accesses.items()}
            return [i for k, raw in raws.items() if (i := parse(raw, access.get(text(k))))]
        key = self._m(session_id, "archive" if archived else "order")
        ids = [text(i) for i in self._guard(lambda: self._client.zrange(key, 0, -1))]
        return self._items(session_id, ids)

    def memory_page(self, session_id: str, archived: bool, offset: int, limit: int) -> list[MemoryItem]:
        self._ready(session_id)
        key = "archive" if archived else "order"
        return [item for item, _ in self._range(session_id, key, offset, limit)]

    def memory_ranked(
        self, session_id: str, order: str, offset: int, limit: int
    ) -> list[tuple[MemoryItem, float]]:
        self._ready(session_id)
        return self._range(session_id, "rank" if order == "rank" else f"recent:{order}", offset, limit)

    def _range(self, session_id: str, index: str, offset: int, limit: int) -> list[tuple[MemoryItem, float]]:
        """Items ``offset`` .. ``offset + limit - 1`` of a sorted index, highest first, with their
        index values (one script call: memory_redis_search.RANGE)."""
        if limit <= 0:
            return []
        keys = [self._m(session_id, n) for n in (index, "items", "access")]
        args = [offset, offset + limit - 1]
        reply = self._guard(lambda: self.scripts.range(keys=keys, args=args))
        found: list[tuple[MemoryItem, float]] = []
        for _, value, raw, access in orjson.loads(reply) or []:
            item = parse(raw or None, access or None)
            if item is not None:
                found.append((item, float(value)))
        return found

    def memory_search(
        self, session_id: str, terms: list[str], limit: int, archived: bool | None
    ) -> list[tuple[str, float]]:
        self._ready(session_id)
        postings = Postings(self, session_id, archived, limit)
        found = search.search(postings, terms, limit, archived)
        if postings.rows is not None:  # read with the statistics: the query's memory_get next
            self._prefetched.rows = (session_id, postings.rows)
        return found

    def memory_usage(self, session_id: str) -> Usage:
        self._ready(session_id)

        def read() -> list[Any]:
            pipe = self._client.pipeline(transaction=False)
            pipe.hget(self._m(session_id, "stats"), "used")
            pipe.zcard(self._m(session_id, "order"))
            pipe.scard(self._m(session_id, "pinned"))
            pipe.zcard(self._m(session_id, "archive"))
            return list(pipe.execute())

        used, live, pinned, archived = self._guard(read)
        return int(used or 0), int(live), int(pinned), int(archived)

    def memory_export(self, session_id: str) -> list[IndexedItem]:
        """Items with the term counts stored for them (what BM25 uses)."""
        self._ready(session_id)
        items = self.memory_all(session_id, archived=None)
        raw_terms = self._guard(lambda: self._client.hgetall(self._m(session_id, "terms")))
        counts = {text(k): json.loads(v) for k, v in raw_terms.items()}
        items.sort(key=lambda i: (i.created_at, i.id))
        out = []
        for item in items:
            found = counts.get(item.id, {})
            body = tuple(t for t, (b, _) in sorted(found.items()) for _ in range(b))
            tags = tuple(t for t, (_, g) in sorted(found.items()) for _ in range(g))
            out.append(IndexedItem(item, IndexTerms(body, tags)))
        return out

    def memory_sessions(self) -> list[str]:
        found = self.conn.sessions_with("mem:items") + self.conn.sessions_with("mem:config")
        return sorted(set(found))

    def memory_config(self, session_id: str) -> dict[str, Any] | None:
        return stored_config(self._guard(lambda: self._client.get(self._m(session_id, "config"))))

    def memory_set_config(self, session_id: str, config: dict[str, Any]) -> None:
        self._forget_prefetched()
        self._guard(lambda: self._client.set(self._m(session_id, "config"), json.dumps(config)))

    # ---- schema 1 -> 2 ------------------------------------------------------------------------
    def _ready(self, session_id: str) -> None:
        """Convert a session written by schema 1 (hash posting lists, a ``tokens`` hash, usage
        summed on every call) once; its items and their index terms are kept."""
        if session_id in self._checked:
            return

        def check() -> tuple[Any, Any]:
            pipe = self._client.pipeline(transaction=False)
            pipe.get(self._m(session_id, "schema"))
            pipe.exists(self._m(session_id, "items"))
            schema, has_items = pipe.execute()
            return schema, has_items

        schema, has_items = self._guard(check)
        if schema is not None and text(schema) == SCHEMA:
            pass
        elif has_items and (
            schema is not None  # "converting": an earlier conversion did not finish
            or self._guard(lambda: self._client.set(self._m(session_id, "schema"), "converting", nx=True))
        ):
            self._convert(session_id)
        self._checked.add(session_id)

    def _convert(self, session_id: str) -> None:
        raw_items = self._guard(lambda: self._client.hgetall(self._m(session_id, "items")))
        raw_terms = self._guard(lambda: self._client.hgetall(self._m(session_id, "terms")))
        items = [item for raw in raw_items.values() if (item := parse(raw)) is not None]
        vocabularies = {text(k): text(v).split() for k, v in raw_terms.items()}
        wanted = [(item.id, term) for item in items for term in vocabularies.get(item.id, [])]

        def read_counts(pairs: list[tuple[str, str]]) -> list[Any]:
            pipe = self._client.pipeline(transaction=False)
            for item_id, term in pairs:
                pipe.hget(self._m(session_id, f"t:{term}"), item_id)
            return list(pipe.execute())

        counts: list[Any] = []
        for start in range(0, len(wanted), READ_CHUNK):
            chunk = wanted[start : start + READ_CHUNK]
            counts += self._guard(partial(read_counts, chunk))
        body: dict[str, list[str]] = {}
        tags: dict[str, list[str]] = {}
        for (item_id, term), raw_tf in zip(wanted, counts, strict=True):
            if raw_tf is not None:
                body_tf, tag_tf = (int(x) for x in text(raw_tf).split())
                body.setdefault(item_id, []).extend([term] * body_tf)
                tags.setdefault(item_id, []).extend([term] * tag_tf)
        old_keys = {self._m(session_id, f"t:{t}") for words in vocabularies.values() for t in words}
        old_keys |= {self._m(session_id, n) for n in ("terms", "tokens", "dl", "pinned")}
        items.sort(key=lambda i: (i.created_at, i.id))
        converted = [
            IndexedItem(i, IndexTerms(tuple(body.get(i.id, ())), tuple(tags.get(i.id, ())))) for i in items
        ]
        self._put(session_id, converted, drop=frozenset(old_keys))  # one MULTI: all or nothing
