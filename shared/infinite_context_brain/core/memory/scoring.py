"""The retention score: ``(0.4*importance + 0.3*recency + 0.2*access - 0.1*size) * type weight``.

Each part is on a 0..1 scale: importance/10; recency halves every half-life of the item's content
type since it was last accessed (stored, so it survives restarts); access saturates
logarithmically; size is the item's share of a 2,000-token "large" item, capped at 1.

The score splits in two so ``recall`` can be served by indexes instead of reading every item:
``standing`` (importance, access, size: changes only when the item is written or touched) and
``freshness`` (the recency part, which decays with time but keeps, within one content type, the
order of ``accessed_at``). The store keeps one ordered index on ``rank_key`` (standing, plus
``PIN_RANK`` for pinned items so they come first) and one per content type on ``accessed_at``;
``top_by_retention`` (ranking.py) merges them with Fagin's threshold algorithm.
"""

from __future__ import annotations

from datetime import datetime

from ..models import utcnow
from .model import TYPE_WEIGHTS, MemoryItem, standing

#: the largest retention: (0.4 + 0.3 + 0.2) * the largest type multiplier
MAX_RETENTION = 0.9 * max(weight for weight, _ in TYPE_WEIGHTS.values())


def freshness_at(content_type: str, accessed_ts: float, now_ts: float) -> float:
    """The recency part of the retention score for an item last accessed at ``accessed_ts``."""
    multiplier, half_life = TYPE_WEIGHTS[content_type]
    return 0.3 * multiplier * float(0.5 ** (max(0.0, now_ts - accessed_ts) / half_life))


def retention(item: MemoryItem, now: datetime | None = None) -> float:
    now = now or utcnow()
    return standing(item) + freshness_at(item.content_type, item.accessed_at.timestamp(), now.timestamp())
