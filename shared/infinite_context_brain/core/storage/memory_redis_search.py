"""The Lua scripts of the Redis memory (memory_redis.py) and one session's index as
storage/search.py reads it, with the per-posting work on the server: a query costs two to four
round trips and a few small replies, whatever the number of items.

Reading posting lists and item rows from Python cost ~5 us per reply element in redis-py's
pure-Python parser (hiredis, a dependency since, parses in C, but a reply still becomes Python
objects one element at a time): a query whose terms each had a couple of hundred postings
(rare words at 100k items) fetched them with their scores, sent their ids back in an ``HMGET
meta`` and parsed the rows, ~2,400 elements and 9 ms, most of them archived items it then
dropped. Lua scripts (plain Redis >= 6, run by EVALSHA, every key named in KEYS and under the
session's hash tag, so they run on a cluster too) do that part next to the data and reply with
one JSON string (counts as numbers, totals and scores as text, exact): ``STATISTICS`` reads the
totals, the document frequencies and the postings of the rare terms, ``POSTINGS`` the capped
posting lists, both keeping the postings of live (or archived) items with their length, and
``COUNTS`` looks up the counts of given items. The BM25 arithmetic stays in storage/search.py,
shared with SQLite, so both rank alike. ``RANGE`` (pages, recall) and ``ROWS`` (what an update
or delete reads under WATCH) save a round trip each; ``PUT`` (memory_redis_put.py) is a whole put.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from . import search
from .memory_redis_put import PUT

if TYPE_CHECKING:
    from redis.commands.core import Script

    from .memory_redis import RedisMemory

#: ``read(meta key, posting list keys, last index per list (-1: all), "1" archived / "0" live /
#: "*" either)``: per list, [id, body count, tag count, item length] of its postings of those
#: items. A posting's score is seq * 65536 + body * 256 + tag (written by memory_redis_put.PUT),
#: exact in a double; HMGET runs in chunks (Lua's unpack limit).
READ = """
local function read(meta, keys, lasts, want)
  local lists, ids, seen = {}, {}, {}
  for i = 1, #keys do
    local entries = redis.call('ZREVRANGE', keys[i], 0, lasts[i], 'WITHSCORES')
    lists[i] = entries
    for j = 1, #entries, 2 do
      local id = entries[j]
      if not seen[id] then seen[id] = true; ids[#ids + 1] = id end
    end
  end
  local lengths = {}
  for first = 1, #ids, 1000 do
    local last = math.min(first + 999, #ids)
    local rows = redis.call('HMGET', meta, unpack(ids, first, last))
    for k = first, last do
      local row = rows[k - first + 1]
      if row then
        local dl, archived = string.match(row, '^%S+ (%S+) %S+ (%S+)')
        if want == '*' or archived == want then lengths[ids[k]] = tonumber(dl) end
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
  return out
end
"""

#: KEYS: stats, meta, items, access, then one posting list per query term; ARGV: "1"/"0"/"*"
#: (archived, live or all items), FULL_READ, MAX_TERMS, PREFETCH. Reply: JSON [docs, length, [df per
#: term], {term number: postings}, rows or false]. The postings of up to MAX_TERMS of the rarest
#: terms found in at most FULL_READ items come with the statistics: search.py reads such a term
#: whole, so a query made of rare words or identifiers costs one round trip instead of two. When
#: every term found was read so, and they name at most PREFETCH items (search.py then returns
#: all of them), their rows come too: [[id, item JSON or false, access row or false], ...],
#: which the query reads next (``memory_get``): one round trip less again.
STATISTICS = (
    READ
    + """
local stats = redis.call('HMGET', KEYS[1], 'docs', 'length')
local cards, small, found = {}, {}, 0
for i = 5, #KEYS do
  local n = redis.call('ZCARD', KEYS[i])
  cards[i - 4] = n
  if n > 0 then found = found + 1 end
  if n > 0 and n <= tonumber(ARGV[2]) then small[#small + 1] = i - 4 end
end
table.sort(small, function(a, b) return cards[a] < cards[b] or (cards[a] == cards[b] and a < b) end)
local keys, lasts, chosen = {}, {}, {}
for k = 1, math.min(#small, tonumber(ARGV[3])) do
  keys[k] = KEYS[small[k] + 4]; lasts[k] = -1; chosen[k] = small[k]
end
local read_rows, early = read(KEYS[2], keys, lasts, ARGV[1]), {}
for k = 1, #chosen do early[tostring(chosen[k])] = read_rows[k] end
local rows = false
if found > 0 and #chosen == found then
  local ids, seen = {}, {}
  for k = 1, #read_rows do
    for _, row in ipairs(read_rows[k]) do
      if not seen[row[1]] then seen[row[1]] = true; ids[#ids + 1] = row[1] end
    end
  end
  if #ids > 0 and #ids <= tonumber(ARGV[4]) then
    local items = redis.call('HMGET', KEYS[3], unpack(ids))
    local access = redis.call('HMGET', KEYS[4], unpack(ids))
    rows = {}
    for k = 1, #ids do rows[k] = {ids[k], items[k], access[k]} end
  end
end
return cjson.encode({stats[1] or '0', stats[2] or '0', cards, early, rows})
"""
)

#: KEYS: meta, then one posting list per term; ARGV: "1"/"0"/"*" (archived, live or all), the
#: index of the last posting to read per term (-1: all), COMPLETE, then the ids of candidates
#: already known (postings read with the statistics). Reply: JSON [postings per term, {term
#: number: [[id, body count, tag count], ...]}]: when there are at most COMPLETE candidates,
#: the counts of every candidate in every capped list are looked up too, which is what
#: search.py asks ``lookup`` next (its best COMPLETE candidates are then all of them).
POSTINGS = (
    READ
    + """
local n = #KEYS - 1
local keys, lasts = {}, {}
for i = 1, n do keys[i] = KEYS[i + 1]; lasts[i] = tonumber(ARGV[i + 1]) end
local lists = read(KEYS[1], keys, lasts, ARGV[1])
local candidates, seen = {}, {}
local function add(id) if not seen[id] then seen[id] = true; candidates[#candidates + 1] = id end end
for i = n + 3, #ARGV do add(ARGV[i]) end
for i = 1, n do for _, row in ipairs(lists[i]) do add(row[1]) end end
local counts = {}
if #candidates <= tonumber(ARGV[n + 2]) then
  for i = 1, n do
    if lasts[i] ~= -1 then
      local found, rows = {}, {}
      for _, row in ipairs(lists[i]) do found[row[1]] = true end
      for _, id in ipairs(candidates) do
        if not found[id] then
          local score = redis.call('ZSCORE', keys[i], id)
          if score then
            score = tonumber(score)
            rows[#rows + 1] = {id, math.floor(score / 256) % 256, score % 256}
          end
        end
      end
      counts[tostring(i)] = rows
    end
  end
end
return cjson.encode({lists, counts})
"""
)

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


#: KEYS: a sorted set of item ids (``rank``, ``recent:<type>``, ``order``, ``archive``), ``items``,
#: ``access``; ARGV: first and last index, newest (highest) first. Reply: JSON [[id, score as
#: text, item JSON or false, access row or false], ...]: one round trip instead of two.
RANGE = """
local entries = redis.call('ZREVRANGE', KEYS[1], ARGV[1], ARGV[2], 'WITHSCORES')
local out = {}
for first = 1, #entries / 2, 1000 do
  local last = math.min(first + 999, #entries / 2)
  local ids = {}
  for k = first, last do ids[#ids + 1] = entries[2 * k - 1] end
  local items = redis.call('HMGET', KEYS[2], unpack(ids))
  local access = redis.call('HMGET', KEYS[3], unpack(ids))
  for k = 1, #ids do
    out[#out + 1] = {ids[k], entries[2 * (first + k - 1)], items[k], access[k]}
  end
end
return cjson.encode(out)
"""


#: KEYS: ``meta``, ``terms``, ``stats``; ARGV: "1" to read ``terms`` too, then item ids. Reply:
#: JSON [[meta row or false per id], [terms row or false per id], seq]: what a write reads under
#: WATCH before its MULTI, in one round trip instead of three.
ROWS = """
local metas, terms = {}, {}
for first = 2, #ARGV, 1000 do
  local last = math.min(first + 999, #ARGV)
  local rows = redis.call('HMGET', KEYS[1], unpack(ARGV, first, last))
  for k = 1, #rows do metas[#metas + 1] = rows[k] end
  if ARGV[1] == '1' then
    rows = redis.call('HMGET', KEYS[2], unpack(ARGV, first, last))
    for k = 1, #rows do terms[#terms + 1] = rows[k] end
  end
end
return cjson.encode({metas, terms, redis.call('HGET', KEYS[3], 'seq') or '0'})
"""


class Scripts:
    """The scripts, registered once per client (the SHA is computed locally; a server that does
    not know it yet, e.g. after a restart or a failover, gets it loaded by redis-py)."""

    def __init__(self, client: Any) -> None:
        self.statistics: Script = client.register_script(STATISTICS)
        self.postings: Script = client.register_script(POSTINGS)
        self.counts: Script = client.register_script(COUNTS)
        self.range: Script = client.register_script(RANGE)
        self.rows: Script = client.register_script(ROWS)
        self.put: Script = client.register_script(PUT)

    @staticmethod
    def on_connection(pipe: Any, script: Script, keys: list[str], args: list[Any]) -> Any:
        """Run ``script`` at once on a pipeline's watching connection. Not ``script(client=pipe)``:
        redis-py then also checks the script with SCRIPT EXISTS before the MULTI, a round trip."""
        from redis.exceptions import NoScriptError

        try:
            return pipe.evalsha(script.sha, len(keys), *keys, *args)
        except NoScriptError:
            script.sha = pipe.script_load(script.script)
            return pipe.evalsha(script.sha, len(keys), *keys, *args)


def _lists(reply: Any) -> list[Any]:
    """The per-term lists of a script's reply (cjson encodes an empty table as ``{}``)."""
    decoded = orjson.loads(reply)
    return [rows if isinstance(rows, list) else [] for rows in (decoded or [])]


class Postings:
    """One session's index as storage/search.py reads it, for one query on live, archived or all
    items: the postings read with the statistics are kept for ``postings``."""

    def __init__(self, memory: RedisMemory, session_id: str, archived: bool | None, limit: int = 0) -> None:
        self.memory, self.sid, self.archived, self.limit = memory, session_id, archived, limit
        #: ``memory._m(session_id, name)`` is this prefix and the name
        self.prefix = memory._m(session_id, "")
        #: the rows of every candidate, when the statistics brought them (see STATISTICS)
        self.rows: dict[str, tuple[Any, Any]] | None = None
        self.early: dict[str, list[search.Posting]] = {}
        #: per capped term, the candidates whose counts were looked up with the postings
        self.completed: dict[str, tuple[set[str], dict[str, tuple[int, int]]]] = {}

    def _key(self, name: str) -> str:
        return self.prefix + name

    def statistics(self, terms: list[str]) -> tuple[int, int, dict[str, int]]:
        named = [self._key(n) for n in ("stats", "meta", "items", "access")]
        keys = [*named, *(self._key(f"t:{t}") for t in terms)]
        args: list[str | int] = [self._flag(self.archived), search.FULL_READ, search.MAX_TERMS, self.limit]
        reply = self.memory._guard(lambda: self.memory.scripts.statistics(keys=keys, args=args))
        docs, length, cards, early, rows = orjson.loads(reply)
        if isinstance(rows, list):
            self.rows = {str(i): (raw or None, access or None) for i, raw, access in rows}
        cards = cards if isinstance(cards, list) else []
        for number, rows in early.items() if isinstance(early, dict) else ():
            self.early[terms[int(number) - 1]] = _postings(rows)
        return int(docs), int(length), {t: int(c) for t, c in zip(terms, cards, strict=True)}

    @staticmethod
    def _flag(archived: bool | None) -> str:
        return "*" if archived is None else "1" if archived else "0"

    def postings(self, caps: dict[str, int | None], archived: bool | None) -> dict[str, list[search.Posting]]:
        found: dict[str, list[search.Posting]] = {t: [] for t in caps}
        terms = []
        for term, cap in caps.items():
            if cap is None and archived == self.archived and term in self.early:
                found[term] = self.early[term]  # read whole with the statistics
            elif cap is None or cap > 0:
                terms.append(term)
        if not terms:
            return found
        keys = [self._key("meta"), *(self._key(f"t:{t}") for t in terms)]
        lasts = [-1 if caps[t] is None else (caps[t] or 0) - 1 for t in terms]
        known = list(dict.fromkeys(row[0] for t in caps if t not in terms for row in found[t]))
        args: list[str | int] = [self._flag(archived), *lasts, search.COMPLETE, *known]
        reply = self.memory._guard(lambda: self.memory.scripts.postings(keys=keys, args=args))
        lists, counts = orjson.loads(reply)
        for term, rows in zip(terms, lists if isinstance(lists, list) else [], strict=True):
            found[term] = _postings(rows)
        candidates = {row[0] for rows in found.values() for row in rows}
        for number, rows in counts.items() if isinstance(counts, dict) else ():
            term = terms[int(number) - 1]
            looked = {str(i): (int(body), int(tag)) for i, body, tag in rows or []}
            self.completed[term] = (candidates, looked)
        return found

    def lookup(self, wanted: dict[str, list[str]]) -> dict[str, dict[str, tuple[int, int]]]:
        found: dict[str, dict[str, tuple[int, int]]] = {t: {} for t in wanted}
        terms = []
        for term, ids in wanted.items():
            done = self.completed.get(term)
            if done is not None and done[0].issuperset(ids):  # looked up with the postings
                found[term] = {i: done[1][i] for i in ids if i in done[1]}
            elif ids:
                terms.append(term)
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


def _postings(rows: Any) -> list[search.Posting]:
    if not isinstance(rows, list):  # cjson encodes an empty table as {}
        return []
    return [(str(i), int(body), int(tag), int(dl)) for i, body, tag, dl in rows]
