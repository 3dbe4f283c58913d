"""The retention score: ``(0.4*importance + 0.3*recency + 0.2*access - 0.1*size) * type weight``.

Each part is on a 0..1 scale: importance/10; recency halves every half-life of the item's content
type since it was last accessed (stored, so it survives restarts); access saturates
logarithmically; size is the item's share of a 2,000-token "large" item, capped at 1.
"""

from __future__ import annotations

import math
from datetime import datetime

from ..models import utcnow
from .model import MemoryItem
from .text import TYPE_WEIGHTS

LARGE_ITEM_TOKENS = 2_000


def recency(item: MemoryItem, now: datetime | None = None) -> float:
    half_life = TYPE_WEIGHTS[item.content_type][1]
    age = max(0.0, ((now or utcnow()) - item.accessed_at).total_seconds())
    return float(0.5 ** (age / half_life))


def retention(item: MemoryItem, now: datetime | None = None) -> float:
    multiplier = TYPE_WEIGHTS[item.content_type][0]
    access = min(1.0, math.log1p(item.access_count) / math.log1p(20))
    size = min(1.0, item.tokens / LARGE_ITEM_TOKENS)
    base = 0.4 * item.importance / 10 + 0.3 * recency(item, now) + 0.2 * access - 0.1 * size
    return base * multiplier
