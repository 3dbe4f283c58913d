"""How working memory orders items: ``query`` (text first) and ``recall`` (retention).

**query.** Text relevance decides; retention breaks ties and boosts within a bounded factor::

    score = bm25 * (1 + BOOST * k),   k = 1 for a pinned item, else clamp(retention / MAX_RETENTION, 0, 1)

``bm25`` is the session's BM25 (storage/search.py: k1 1.2, b 0.75, the 5x tag boost, camelCase
and snake_case split into words); ``retention`` is scoring.py's score (importance, recency,
access, size, content type). With ``BOOST = 0.25`` an item can pass another only if its text
relevance is at least 80% of the other's: the seed's terms still count, but no longer swamp
what the words say. Equal scores are ordered by item id, so every backend returns one order.
The reported ``score`` is this value divided by the best hit's bm25 (so 0..1.25), ``relevance``
is bm25 / best bm25, ``retention`` the retention score. Without query words (tags only), items
are ordered by retention.

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

BOOST = 0.25
CONTENT_TYPES: tuple[str, ...] = get_args(ContentType)
FIRST_BATCH = 16


def boost(item: MemoryItem, kept: float) -> float:
    """The factor retention multiplies text relevance by: 1 .. 1 + BOOST."""
    share = 1.0 if item.pinned else min(1.0, max(0.0, kept / MAX_RETENTION))
    return 1.0 + BOOST * share


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
