"""How working memory orders items: ``query`` (text decides) and ``recall`` (retention).

**query.** BM25 orders the results; everything else moves an item within a bounded factor::

    score = bm25 * factor,   factor = 1 + RETENTION_BOOST * r + TAG_BOOST * t   (1 .. MAX_FACTOR)

* ``bm25``: plain BM25 over the session's items, live and archived alike (storage/search.py:
  k1 1.2, b 0.75; an item's words are its content, summary and tags, each counted once;
  camelCase and snake_case identifiers split into words);
* ``r``, retention: 1 for a pinned item, 0 for an archived one, else the retention score
  (scoring.py: importance, recency, access, size, content type) over its largest value, 0..1;
* ``t``, tags: the share of the query's words that are words of the item's tags, 0..1.

With ``RETENTION_BOOST = 0.2`` and ``TAG_BOOST = 0.1`` an item can pass another only if its BM25
is at least 1 / 1.3 (77%) of the other's, so the item whose rare words were asked for comes
first: importance, recency, pins and tags order items the text finds about equally relevant.
Equal scores are ordered by item id, so every backend returns one order. The reported ``score``
is this value divided by the best hit's bm25 (0 .. 1.3), ``relevance`` is bm25 / best bm25,
``retention`` the retention score. Archived items are found too (marked archived: ``update``
with ``restore`` brings one back); ``archived=True`` searches the archive only. Without query
words (tags only), items are ordered by retention, archived ones last.

**recall.** Pinned items first, then by retention, read through the store's indexes with
Fagin's threshold algorithm (``top_by_retention``): retention is ``standing`` (indexed as
``rank``) plus ``freshness``, which for unseen items of one content type is at most the value at
the last ``accessed_at`` read from that type's index. Reading stops once the limit-th best item
seen beats that bound, usually after one batch per index, whatever the number of items.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING, get_args

from .model import PIN_RANK, ContentType, MemoryItem
from .scoring import MAX_RETENTION, freshness_at, retention

if TYPE_CHECKING:
    from ..storage.parts import MemoryIndex

RETENTION_BOOST = 0.2
TAG_BOOST = 0.1
MAX_FACTOR = 1.0 + RETENTION_BOOST + TAG_BOOST
CONTENT_TYPES: tuple[str, ...] = get_args(ContentType)
FIRST_BATCH = 16


def factor(item: MemoryItem, kept: float, tag_share: float) -> float:
    """What text relevance is multiplied by (1 .. MAX_FACTOR): ``kept`` is the item's retention
    score, ``tag_share`` the share of the query's words found in its tags."""
    if item.archived:
        r = 0.0
    elif item.pinned:
        r = 1.0
    else:
        r = min(1.0, max(0.0, kept / MAX_RETENTION))
    return 1.0 + RETENTION_BOOST * r + TAG_BOOST * min(1.0, max(0.0, tag_share))


def top_by_retention(store: MemoryIndex, session_id: str, limit: int, now: datetime) -> list[MemoryItem]:
    """The ``limit`` live items with the highest retention, pinned items first."""
    now_ts = now.timestamp()
    seen: dict[str, tuple[float, MemoryItem]] = {}
    orders = ["rank", *CONTENT_TYPES]
    offset = dict.fromkeys(orders, 0)
    last: dict[str, float] = {}
    done: set[str] = set()
    batch = max(limit, FIRST_BATCH)
    while True:
        for order in orders:
            if order in done:
                continue
            rows = store.memory_ranked(session_id, order, offset[order], batch)
            offset[order] += batch
            if len(rows) < batch:
                done.add(order)
            for item, key in rows:
                if item.id not in seen:
                    seen[item.id] = (retention(item, now) + (PIN_RANK if item.pinned else 0.0), item)
                last[order] = key
        if "rank" in done or all(t in done for t in CONTENT_TYPES):
            break  # every live item was read
        fresh = max(freshness_at(t, last[t] / 1e6, now_ts) for t in CONTENT_TYPES if t not in done)
        threshold = last.get("rank", math.inf) + fresh
        best = sorted((value for value, _ in seen.values()), reverse=True)[:limit]
        if len(best) >= limit and best[-1] >= threshold:
            break
        batch *= 2
    ranked = sorted(seen.values(), key=lambda pair: (-pair[0], pair[1].id))
    return [item for _, item in ranked[:limit]]
