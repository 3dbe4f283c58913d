"""``memory_put`` on Redis as one atomic script call (memory_redis.py's keys): the item, its
access row, ``meta``, the ordered indexes, its postings and the running totals in ``stats``.

Before, a put WATCHed ``meta`` and ``stats``, read the old rows (a script call) and sent a MULTI:
three round trips, plus a retry whenever another writer got in between. A Lua script runs
atomically, so it reads the old rows and writes the new ones with no other writer in between and
no retry, in one round trip, on plain Redis >= 6 and on a cluster (every key is declared in KEYS
and carries the session's hash tag).

A script may only touch the keys it declares, and the posting lists an item is removed from when
it is replaced are known only from its stored ``terms`` row. The caller declares the posting
lists of the new terms; when a replaced item was indexed under a term not declared, the script
writes nothing and names the missing terms, and the caller calls again with them declared (a new
item, the common case, never needs that).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import orjson

from ..memory.model import rank_key
from .access import micros
from .parts import IndexedItem, Usage

#: content types: their ``recent:<type>`` keys are always declared (an item may change type)
CONTENT_TYPES = ("error", "decision", "code", "prose", "tool_output")
#: named keys, in KEYS order after the posting lists' position is fixed by the caller
NAMED = (
    "items",
    "access",
    "meta",
    "terms",
    "stats",
    "order",
    "archive",
    "rank",
    "pinned",
    "schema",
    "config",
)

#: KEYS: the NAMED keys, the ``recent:<type>`` keys, posting lists, keys to delete first (schema 1
#: conversion). ARGV: the memory key prefix (``ic:{<sid>}:mem:``), the schema, how many keys to
#: delete (the last KEYS), how many items, then per item: id, item JSON, access row, terms JSON,
#: created (a float as text), rank key (text), accessed micros, tokens, archived, pinned, content
#: type, dl, number of terms, then per term: term, body count, tag count. Reply: JSON
#: ``{"missing": [terms]}`` (nothing written) or ``{"seq": last seq, "usage": [used tokens,
#: live, pinned, archived], "config": the memory's configuration or false}`` (``memory_usage``
#: and ``memory_config`` as the write left them: ``memory_put`` returns them, a ``PutOutcome``,
#: for the store's auto-compaction check).
PUT = """
local prefix, declared = ARGV[1], {}
for i = 1, #KEYS do declared[KEYS[i]] = true end
local items_key, access_key, meta_key, terms_key, stats_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local order_key, archive_key, rank_key, pinned_key, schema_key = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local config_key = KEYS[11]
local drops, count = tonumber(ARGV[3]), tonumber(ARGV[4])
for i = #KEYS - drops + 1, #KEYS do redis.call('DEL', KEYS[i]) end

local function vocabulary(raw)
  local out = {}
  if not raw then return out end
  if string.sub(raw, 1, 1) == '{' then
    for term in pairs(cjson.decode(raw)) do out[#out + 1] = term end
  else
    for term in string.gmatch(raw, '%S+') do out[#out + 1] = term end
  end
  return out
end

-- the items, as [argv position of the id, position of its first term, number of terms]
local items, at = {}, 5
for n = 1, count do
  local terms = tonumber(ARGV[at + 12])
  items[n] = {at, at + 13, terms}
  at = at + 13 + 3 * terms
end

-- every posting list a replaced item leaves must be declared: else name them, write nothing
local missing, listed = {}, {}
for n = 1, count do
  local id = ARGV[items[n][1]]
  for _, term in ipairs(vocabulary(redis.call('HGET', terms_key, id))) do
    local key = prefix .. 't:' .. term
    if not declared[key] and not listed[key] then listed[key] = true; missing[#missing + 1] = term end
  end
end
if #missing > 0 then return cjson.encode({missing = missing}) end

local last = tonumber(redis.call('HGET', stats_key, 'seq') or '0')
local used, docs, length = 0, 0, 0
local pending, seen = {}, {}
local function flush()  -- postings are added per list (one ZADD each), after the removals
  for key, pairs_ in pairs(pending) do
    for first = 1, #pairs_, 1000 do
      redis.call('ZADD', key, unpack(pairs_, first, math.min(first + 999, #pairs_)))
    end
  end
  pending = {}
end
for n = 1, count do
  local a = items[n][1]
  local id, json, access, terms_json = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local created, rank, accessed, tokens = ARGV[a + 4], ARGV[a + 5], ARGV[a + 6], tonumber(ARGV[a + 7])
  local archived, pinned, ctype, dl = ARGV[a + 8], ARGV[a + 9], ARGV[a + 10], tonumber(ARGV[a + 11])
  if seen[id] then flush() end  -- the same id twice in one put: the first one's postings are in
  seen[id] = true
  local before = redis.call('HGET', meta_key, id)
  local seq = last + n
  if before then
    local old_seq, old_dl, old_tokens, old_archived, _, old_type =
      string.match(before, '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+)')
    seq = tonumber(old_seq)
    for _, term in ipairs(vocabulary(redis.call('HGET', terms_key, id))) do
      redis.call('ZREM', prefix .. 't:' .. term, id)
    end
    if old_type ~= ctype then redis.call('ZREM', prefix .. 'recent:' .. old_type, id) end
    if old_archived ~= '1' then used = used - tonumber(old_tokens) end
    length = length - tonumber(old_dl)
  else
    docs = docs + 1
  end
  local t = items[n][2]
  for k = 0, items[n][3] - 1 do
    local term, body, tag = ARGV[t + 3 * k], tonumber(ARGV[t + 3 * k + 1]), tonumber(ARGV[t + 3 * k + 2])
    local key = prefix .. 't:' .. term
    local list = pending[key]
    if not list then list = {}; pending[key] = list end
    -- the posting's score (read by memory_redis_search.py): counts capped at 255 to fit a byte
    list[#list + 1] = seq * 65536 + math.min(body, 255) * 256 + math.min(tag, 255)
    list[#list + 1] = id
  end
  redis.call('HSET', terms_key, id, terms_json)
  redis.call('HSET', access_key, id, access)
  redis.call('HSET', items_key, id, json)
  local row = table.concat({seq, dl, tokens, archived, pinned, ctype}, ' ')
  redis.call('HSET', meta_key, id, row)
  local recent = prefix .. 'recent:' .. ctype
  if archived == '1' then
    redis.call('ZREM', order_key, id)
    redis.call('ZADD', archive_key, created, id)
    redis.call('ZREM', rank_key, id)
    redis.call('ZREM', recent, id)
    redis.call('SREM', pinned_key, id)
  else
    redis.call('ZREM', archive_key, id)
    redis.call('ZADD', order_key, created, id)
    redis.call('ZADD', rank_key, rank, id)
    redis.call('ZADD', recent, accessed, id)
    if pinned == '1' then redis.call('SADD', pinned_key, id) else redis.call('SREM', pinned_key, id) end
    used = used + tokens
  end
  length = length + dl
end
flush()
redis.call('HINCRBY', stats_key, 'seq', count)
if used ~= 0 then redis.call('HINCRBY', stats_key, 'used', used) end
if docs ~= 0 then redis.call('HINCRBY', stats_key, 'docs', docs) end
if length ~= 0 then redis.call('HINCRBY', stats_key, 'length', length) end
redis.call('SET', schema_key, ARGV[2])
local usage = {
  redis.call('HGET', stats_key, 'used') or '0', redis.call('ZCARD', order_key),
  redis.call('SCARD', pinned_key), redis.call('ZCARD', archive_key),
}
return cjson.encode({seq = last + count, usage = usage, config = redis.call('GET', config_key)})
"""


class PutCall:
    """The keys and arguments of one PUT call for ``items`` (terms counted once, here)."""

    def __init__(self, key: Any, items: list[IndexedItem], schema: str, drop: frozenset[str]) -> None:
        #: ``key(name)`` is this prefix and the name (``ic:{<sid>}:mem:``)
        self.prefix: str = key("")
        self.schema = schema
        self.drop = sorted(drop)
        self.items = items
        self.terms: dict[str, None] = {}
        self.item_args: list[Any] = []
        for item, indexed in items:
            body, tags = Counter(indexed.body), Counter(indexed.tags)
            counts = {t: [body.get(t, 0), tags.get(t, 0)] for t in sorted(set(body) | set(tags))}
            self.terms.update(dict.fromkeys(counts))
            accessed = micros(item.accessed_at)
            self.item_args += [
                item.id,
                item.model_dump_json(),
                f"{accessed} {item.access_count}",
                json.dumps(counts),
                repr(item.created_at.timestamp()),
                repr(rank_key(item)),
                accessed,
                item.tokens,
                int(item.archived),
                int(item.pinned),
                item.content_type,
                sum(body.values()) + sum(tags.values()),
                len(counts),
            ]
            for term, (body_tf, tag_tf) in counts.items():
                self.item_args += [term, body_tf, tag_tf]

    def declare(self, terms: list[str]) -> None:
        """Posting lists a replaced item must leave (named by the script's reply)."""
        self.terms.update(dict.fromkeys(terms))

    def keys(self) -> list[str]:
        """Every key is the prefix and its name, as the script builds them (``key(name)`` for ~50
        names, a store's posting lists, cost ~25 µs a store)."""
        prefix = self.prefix
        named = [prefix + n for n in NAMED]
        recent = [f"{prefix}recent:{t}" for t in CONTENT_TYPES]
        return [*named, *recent, *(f"{prefix}t:{t}" for t in self.terms), *self.drop]

    def args(self) -> list[Any]:
        return [self.prefix, self.schema, len(self.drop), len(self.items), *self.item_args]


@dataclass(frozen=True)
class PutReply:
    #: terms that must be declared first (nothing was written)
    missing: list[str]
    #: ``memory_usage`` after the write (None: not in the reply)
    usage: Usage | None = None
    #: the memory's configuration as stored (None: none stored)
    config: str | None = None


def put_reply(reply: Any) -> PutReply:
    decoded = orjson.loads(reply)
    if not isinstance(decoded, dict):
        return PutReply([])
    missing = decoded.get("missing")
    if isinstance(missing, list) and missing:
        return PutReply([str(t) for t in missing])
    usage = decoded.get("usage")
    config = decoded.get("config")
    if isinstance(usage, list) and len(usage) == 4:
        used, live, pinned, archived = (int(v) for v in usage)
        return PutReply([], (used, live, pinned, archived), config if isinstance(config, str) else None)
    return PutReply([])
