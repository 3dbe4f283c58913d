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
    and each item stops at its first higher-scored duplicate. Items are numbered in the order
    they are checked (lowest score first, as ``sorted`` leaves ties): the scan then works on
    lists and small ints, and "a higher score" is "a higher number, or a tie"."""
    checked = sorted(items, key=lambda i: scores[i.id])
    sets = [words(i.content) for i in checked]
    bits: dict[str, int] = {}
    masks = []
    for found in sets:
        mask = 0
        for word in found:
            mask |= 1 << bits.setdefault(word, len(bits))
        masks.append(mask)
    sizes = [len(found) for found in sets]
    ranks = [scores[i.id] for i in checked]
    frequency: Counter[str] = Counter(chain.from_iterable(sets))
    # One global order of terms, rarest first, ties by the term (prefixes must agree on it); terms
    # are replaced by their place in it, so an item's terms are put in order by sorting small ints
    # (two plain sorts here, not a key function per term: the second keeps the first's ties).
    number = {t: n for n, t in enumerate(sorted(sorted(frequency), key=frequency.__getitem__))}
    prefixes = []
    for mine in sets:
        ordered = sorted(map(number.__getitem__, mine))
        prefixes.append(ordered[: len(mine) - math.ceil(DUPLICATE_OVERLAP * len(mine)) + 1])
    # "a higher score, or a tie" as a number: at least the first number with this one's score
    least = list(range(len(ranks)))
    for n in range(1, len(ranks)):
        if ranks[n] == ranks[n - 1]:
            least[n] = least[n - 1]
    # Each term's items, higher scores first (a scan stops at lower ones), ties in the given
    # order (which the stable sorts keep as ascending numbers): appended in that order, so one
    # sort of the numbers replaces a sort per term.
    index: dict[int, list[int]] = {}
    for n in sorted(range(len(checked)), key=ranks.__getitem__, reverse=True):
        for term in prefixes[n]:
            if term in index:
                index[term].append(n)
            else:
                index[term] = [n]
    gone: set[int] = set()
    for this, size in enumerate(sizes):
        if size and _has_copy(this, prefixes[this], least[this], gone, index, sizes, masks):
            gone.add(this)
            yield checked[this].id


def _has_copy(
    this: int,
    prefix: list[int],
    floor: int,
    gone: set[int],
    index: dict[int, list[int]],
    sizes: list[int],
    masks: list[int],
) -> bool:
    """Whether one of the first ``MAX_CHECKS`` items that share a prefix term with item ``this``,
    score at least as high (number ``floor`` on) and are not gone, overlaps it (duplicates())."""
    size, mask, overlap = sizes[this], masks[this], DUPLICATE_OVERLAP
    low, high = overlap * size, size / overlap  # the size filter
    seen, left = {this}, MAX_CHECKS
    for term in prefix:
        for other in index[term]:
            if other < floor:  # a lower score
                break
            if other in seen or other in gone:
                continue
            seen.add(other)
            theirs = sizes[other]
            if low <= theirs <= high:
                shared = (mask & masks[other]).bit_count()
                if shared > overlap * (size + theirs - shared):
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
