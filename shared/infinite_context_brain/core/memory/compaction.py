"""Three-phase compaction, planned over the live items (pure: the caller stores the result).

1. Summary promotion, lowest retention first: an item with a summary shorter than its content
   counts the summary only; the full content stays on the item (``promoted``), restorable.
2. Deduplication: of two items with more than 70% word overlap (Jaccard), the lower-scored one
   goes to the archive. Pairs are found with prefix filtering (two sets with Jaccard >= t share a
   term among their first ``|s| - ceil(t*|s|) + 1`` rarest terms), so 1,000 items do not cost
   500,000 comparisons; candidates come rarest shared term first, and an item stops after
   ``MAX_CHECKS`` of them (a near-copy shares the rare terms, so it comes early; one that is
   missed is only evicted in phase 3 instead, which loses nothing either). Word sets are bit
   masks, so a check is one AND and a popcount.
3. Eviction of the lowest scores to the archive until the target is met.
Pinned items are never touched; nothing is deleted.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from itertools import chain

from ..text import SEARCH_STOP_WORDS
from .model import MemoryItem
from .scoring import retention

DUPLICATE_OVERLAP = 0.7
#: overlap checks per item at most (bounds phase 2 when items share a common vocabulary)
MAX_CHECKS = 32


_WORD = re.compile(r"[a-z0-9]{2,}")


def words(text: str) -> frozenset[str]:
    """The words two items are compared by: lowercase letter/digit runs without stop words (no
    identifier splitting: a near-copy has the same identifiers)."""
    return frozenset(_WORD.findall(text.lower())) - SEARCH_STOP_WORDS


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
    sets = {i.id: words(i.content) for i in items}
    bits: dict[str, int] = {}
    masks = {i: sum(1 << bits.setdefault(w, len(bits)) for w in found) for i, found in sets.items()}
    frequency: Counter[str] = Counter(chain.from_iterable(sets.values()))
    # one global order of terms, rarest first (ties by the term): prefixes must agree on it
    order = {t: n for n, t in enumerate(sorted(frequency, key=lambda t: (frequency[t], t)))}
    prefixes: dict[str, list[str]] = {}
    index: dict[str, list[str]] = {}
    for item in items:
        mine = sets[item.id]
        ordered = sorted(mine, key=order.__getitem__)
        prefixes[item.id] = ordered[: len(mine) - math.ceil(DUPLICATE_OVERLAP * len(mine)) + 1]
        for term in prefixes[item.id]:
            index.setdefault(term, []).append(item.id)
    for ids in index.values():
        ids.sort(key=lambda i: -scores[i])  # higher scores first: a scan stops at lower ones
    gone: set[str] = set()
    for item in sorted(items, key=lambda i: scores[i.id]):
        if sets[item.id] and _has_copy(item.id, prefixes[item.id], gone, index, sets, masks, scores):
            gone.add(item.id)
            yield item.id


def _has_copy(
    this: str,
    prefix: list[str],
    gone: set[str],
    index: dict[str, list[str]],
    sets: dict[str, frozenset[str]],
    masks: dict[str, int],
    scores: dict[str, float],
) -> bool:
    """Whether one of the first ``MAX_CHECKS`` items that share a prefix term with ``this``,
    score at least as high and are not gone, overlaps it by more than ``DUPLICATE_OVERLAP``."""
    size, mask, score = len(sets[this]), masks[this], scores[this]
    low, high = DUPLICATE_OVERLAP * size, size / DUPLICATE_OVERLAP  # the size filter
    seen, left = {this}, MAX_CHECKS
    for term in prefix:
        for other in index[term]:
            if scores[other] < score:
                break
            if other in seen or other in gone:
                continue
            seen.add(other)
            theirs = len(sets[other])
            if low <= theirs <= high:
                shared = (mask & masks[other]).bit_count()
                if shared > DUPLICATE_OVERLAP * (size + theirs - shared):
                    return True
            left -= 1
            if not left:
                return False
    return False


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
        by_id = {i.id: i for i in now_items}  # not a scan of ``movable`` per duplicate
        for item_id in duplicates(now_items, scores):
            if used <= target:
                break
            item = by_id[item_id]
            used -= item.tokens
            result.changed[item_id] = item.model_copy(update={"archived": True})
            result.deduplicated.append(item_id)

    copies = set(result.deduplicated)  # not a scan of the list per item
    for item in movable:  # phase 3
        if used <= target:
            break
        if item.id in copies:
            continue
        current = result.changed.get(item.id, item)
        used -= current.tokens
        result.changed[item.id] = current.model_copy(update={"archived": True})
        result.evicted.append(item.id)
    result.used_after = used
    return result
