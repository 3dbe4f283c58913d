"""Three-phase compaction, planned over the live items (pure: the caller stores the result).

1. Summary promotion, lowest retention first: an item with a summary shorter than its content
   counts the summary only; the full content stays on the item (``promoted``), restorable.
2. Deduplication: of two items with more than 70% word overlap (Jaccard), the lower-scored one
   goes to the archive. Pairs are found with prefix filtering (two sets with Jaccard >= t share a
   term among their first ``|s| - ceil(t*|s|) + 1`` rarest terms), so 1,000 items do not cost
   500,000 comparisons.
3. Eviction of the lowest scores to the archive until the target is met.
Pinned items are never touched; nothing is deleted.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from ..text import terms
from .model import MemoryItem
from .scoring import retention

DUPLICATE_OVERLAP = 0.7


@dataclass
class Plan:
    changed: dict[str, MemoryItem] = field(default_factory=dict)
    promoted: list[str] = field(default_factory=list)
    deduplicated: list[str] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)
    used_after: int = 0


def duplicates(items: list[MemoryItem], scores: dict[str, float]) -> Iterator[str]:
    """Ids to archive as duplicates, lowest score first: an item goes when it overlaps an item
    with a higher score that stays. Lazy, so compaction stops scanning once the target is met,
    and each item stops at its first higher-scored duplicate."""
    sets = {i.id: frozenset(terms(i.content)) for i in items}
    frequency: Counter[str] = Counter(t for s in sets.values() for t in s)
    prefixes: dict[str, list[str]] = {}
    index: dict[str, list[str]] = {}
    for item in items:
        mine = sets[item.id]
        ordered = sorted(mine, key=lambda t: (frequency[t], t))
        prefixes[item.id] = ordered[: len(mine) - math.ceil(DUPLICATE_OVERLAP * len(mine)) + 1]
        for term in prefixes[item.id]:
            index.setdefault(term, []).append(item.id)
    gone: set[str] = set()
    for item in sorted(items, key=lambda i: scores[i.id]):
        mine = sets[item.id]
        if not mine:
            continue
        seen: set[str] = {item.id}
        for term in prefixes[item.id]:
            hit = False
            for other in index[term]:
                if other in seen or other in gone or scores[other] < scores[item.id]:
                    continue
                seen.add(other)
                theirs = sets[other]
                small, large = sorted((len(mine), len(theirs)))
                if small < DUPLICATE_OVERLAP * large:
                    continue  # size filter: the overlap cannot reach the threshold
                if len(mine & theirs) / len(mine | theirs) > DUPLICATE_OVERLAP:
                    hit = True
                    break
            if hit:
                gone.add(item.id)
                yield item.id
                break


def plan(items: list[MemoryItem], target: int, count: Callable[[str], int], now: datetime) -> Plan:
    live = [i for i in items if not i.archived]
    used = sum(i.tokens for i in live)
    result = Plan()
    movable = [i for i in live if not i.pinned]
    scores = {i.id: retention(i, now) for i in movable}
    movable.sort(key=lambda i: scores[i.id])

    for item in movable:  # phase 1
        if used <= target:
            break
        if item.summary and not item.promoted:
            tokens = count(item.summary)
            if tokens < item.tokens:
                used -= item.tokens - tokens
                result.changed[item.id] = item.model_copy(update={"promoted": True, "tokens": tokens})
                result.promoted.append(item.id)

    if used > target:  # phase 2
        now_items = [result.changed.get(i.id, i) for i in movable]
        for item_id in duplicates(now_items, scores):
            if used <= target:
                break
            item = result.changed.get(item_id) or next(i for i in movable if i.id == item_id)
            used -= item.tokens
            result.changed[item_id] = item.model_copy(update={"archived": True})
            result.deduplicated.append(item_id)

    for item in movable:  # phase 3
        if used <= target:
            break
        if item.id in result.deduplicated:
            continue
        current = result.changed.get(item.id, item)
        used -= current.tokens
        result.changed[item.id] = current.model_copy(update={"archived": True})
        result.evicted.append(item.id)
    result.used_after = used
    return result
