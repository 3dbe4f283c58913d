"""One session's Redis index as storage/search.py reads it, with the per-posting work on the
server: a query costs three or four round trips and a few small replies, whatever the number of
items.

Reading posting lists and item rows from Python cost ~5 us per reply element in redis-py's
parser (hiredis is not a dependency): a query whose terms each had a couple of hundred postings
(rare words at 100k items) fetched them with their scores, sent their ids back in an ``HMGET
meta`` and parsed the rows, ~2,400 elements and 9 ms, most of them archived items it then
dropped. Two Lua scripts (plain Redis >= 6, run by EVALSHA, every key named in KEYS and under
the session's hash tag, so they run on a cluster too) do that part next to the data and reply
with one JSON string: ``POSTINGS`` reads the capped posting lists, keeps the postings of live
(or archived) items with their length, and ``COUNTS`` looks up the counts of given items. The
BM25 arithmetic stays in storage/search.py, shared with SQLite, so both rank alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from . import search

if TYPE_CHECKING:
    from redis.commands.core import Script

    from .memory_redis import RedisMemory

#: KEYS: meta, then one posting list per term; ARGV: "1" for archived items ("0": live), then
#: the index of the last posting to read per term (-1: all). Reply: JSON, per term a list of
#: [id, body count, tag count, item length]. A posting's score is seq * 65536 + body * 256 +
#: tag (memory_redis_rows.posting), exact in a double; HMGET runs in chunks (Lua's unpack limit).
POSTINGS = """
local lists, ids, seen = {}, {}, {}
for i = 2, #KEYS do
  local entries = redis.call('ZREVRANGE', KEYS[i], 0, tonumber(ARGV[i]), 'WITHSCORES')
  lists[i - 1] = entries
  for j = 1, #entries, 2 do
    local id = entries[j]
    if not seen[id] then seen[id] = true; ids[#ids + 1] = id end
  end
end
local lengths = {}
for first = 1, #ids, 1000 do
  local last = math.min(first + 999, #ids)
  local rows = redis.call('HMGET', KEYS[1], unpack(ids, first, last))
  for k = first, last do
    local row = rows[k - first + 1]
    if row then
      local dl, archived = string.match(row, '^%S+ (%S+) %S+ (%S+)')
      if archived == ARGV[1] then lengths[ids[k]] = tonumber(dl) end
    end
  end
end
local out = {}
for t = 1, #lists do
  local rows, entries = {}, lists[t]
  for j = 1, #entries, 2 do
    local dl = lengths[entries[j]]
    if dl then
      local score = tonumber(entries[j + 1])
      rows[#rows + 1] = {entries[j], math.floor(score / 256) % 256, score % 256, dl}
    end
  end
  out[t] = rows
end
return cjson.encode(out)
"""

#: KEYS: one posting list per term; ARGV: per term, how many ids follow, then the ids. Reply:
#: JSON, per term a list of [id, body count, tag count] for the ids found in it.
COUNTS = """
local out, at = {}, 1
for t = 1, #KEYS do
  local rows = {}
  local count = tonumber(ARGV[at])
  for k = at + 1, at + count do
    local score = redis.call('ZSCORE', KEYS[t], ARGV[k])
    if score then
      score = tonumber(score)
      rows[#rows + 1] = {ARGV[k], math.floor(score / 256) % 256, score % 256}
    end
  end
  out[t] = rows
  at = at + count + 1
end
return cjson.encode(out)
"""


class Scripts:
    """The scripts, registered once per client (the SHA is computed locally; a server that does
    not know it yet, e.g. after a restart or a failover, gets it loaded by redis-py)."""

    def __init__(self, client: Any) -> None:
        self.postings: Script = client.register_script(POSTINGS)
        self.counts: Script = client.register_script(COUNTS)


def _lists(reply: Any) -> list[Any]:
    """The per-term lists of a script's reply (cjson encodes an empty table as ``{}``)."""
    decoded = orjson.loads(reply)
    return [rows if isinstance(rows, list) else [] for rows in (decoded or [])]


class Postings:
    """One session's index as storage/search.py reads it."""

    def __init__(self, memory: RedisMemory, session_id: str) -> None:
        self.memory, self.sid = memory, session_id

    def _key(self, name: str) -> str:
        return self.memory._m(self.sid, name)

    def statistics(self, terms: list[str]) -> tuple[int, int, dict[str, int]]:
        m = self.memory

        def read() -> list[Any]:
            pipe = m._client.pipeline(transaction=False)
            pipe.hmget(self._key("stats"), ["docs", "length"])
            for term in terms:
                pipe.zcard(self._key(f"t:{term}"))
            return list(pipe.execute())

        (docs, length), *cards = m._guard(read)
        return int(docs or 0), int(length or 0), {t: int(c) for t, c in zip(terms, cards, strict=True)}

    def postings(self, caps: dict[str, int | None], archived: bool) -> dict[str, list[search.Posting]]:
        found: dict[str, list[search.Posting]] = {t: [] for t in caps}
        terms = [t for t, cap in caps.items() if cap is None or cap > 0]
        if not terms:
            return found
        keys = [self._key("meta"), *(self._key(f"t:{t}") for t in terms)]
        args = ["1" if archived else "0", *(-1 if caps[t] is None else (caps[t] or 0) - 1 for t in terms)]
        reply = self.memory._guard(lambda: self.memory.scripts.postings(keys=keys, args=args))
        for term, rows in zip(terms, _lists(reply), strict=True):
            found[term] = [(str(i), int(body), int(tag), int(dl)) for i, body, tag, dl in rows]
        return found

    def lookup(self, wanted: dict[str, list[str]]) -> dict[str, dict[str, tuple[int, int]]]:
        terms = [t for t, ids in wanted.items() if ids]
        found: dict[str, dict[str, tuple[int, int]]] = {t: {} for t in wanted}
        if not terms:
            return found
        args: list[Any] = []
        for term in terms:
            args += [len(wanted[term]), *wanted[term]]
        keys = [self._key(f"t:{t}") for t in terms]
        reply = self.memory._guard(lambda: self.memory.scripts.counts(keys=keys, args=args))
        for term, rows in zip(terms, _lists(reply), strict=True):
            found[term] = {str(i): (int(body), int(tag)) for i, body, tag in rows}
        return found
