"""compaction.duplicates as it was before it numbered the items (commit 165e6a8): the reference
test_compaction_duplicates.py compares the current scan with."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from itertools import chain

from infinite_context_brain.core.memory.compaction import DUPLICATE_OVERLAP, MAX_CHECKS, _analysed
from infinite_context_brain.core.memory.model import MemoryItem


def duplicates(items: list[MemoryItem], scores: dict[str, float]) -> Iterator[str]:
    """Ids to archive as duplicates, lowest score first: an item goes when it overlaps an item
    with a higher score that stays. Lazy, so compaction stops scanning once the target is met,
    and each item stops at its first higher-scored duplicate."""
    analysed = {i.id: _analysed(i) for i in items}
    sets = {i: found for i, (found, _) in analysed.items()}
    masks = {i: mask for i, (_, mask) in analysed.items()}
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
    sizes = {i: len(s) for i, s in sets.items()}
    for item in sorted(items, key=lambda i: scores[i.id]):
        this, size = item.id, sizes[item.id]
        if not size:
            continue
        low, high = DUPLICATE_OVERLAP * size, size / DUPLICATE_OVERLAP  # the size filter
        mask, score, seen, checks, hit = masks[this], scores[this], {this}, 0, False
        for term in prefixes[this]:
            for other in index[term]:
                if scores[other] < score:
                    break
                if other in seen or other in gone:
                    continue
                seen.add(other)
                checks += 1
                theirs = sizes[other]
                if low <= theirs <= high:
                    shared = (mask & masks[other]).bit_count()
                    if shared > DUPLICATE_OVERLAP * (size + theirs - shared):
                        hit = True
                        break
                if checks >= MAX_CHECKS:
                    break
            if hit or checks >= MAX_CHECKS:
                break
        if hit:
            gone.add(this)
            yield this
