"""compaction.duplicates numbers the items and scans lists of small ints: on randomized items
(near-copies, shared vocabularies, tied scores, empty texts, any input order) it finds exactly
the duplicates, in exactly the order, that the scan over item ids found before (the reference is
that code, kept in tests/core/compaction_reference.py)."""

from __future__ import annotations

import random

import pytest

from infinite_context_brain.core.memory import compaction
from infinite_context_brain.core.memory.model import MemoryItem

from .compaction_reference import duplicates as reference


def corpus(rng: random.Random) -> tuple[list[MemoryItem], dict[str, float]]:
    vocabulary = [f"word{n}" for n in range(rng.choice([15, 60, 400]))]
    items: list[MemoryItem] = []
    for n in range(rng.choice([2, 40, 300, 900])):
        if items and rng.random() < 0.3:  # a near-copy of an earlier item
            words = items[rng.randrange(len(items))].content.split()
            words = [w if rng.random() < 0.9 else rng.choice(vocabulary) for w in words]
        else:
            words = rng.sample(vocabulary, rng.randint(0, min(40, len(vocabulary))))
        items.append(MemoryItem(id=f"d{n:04d}", content=" ".join(words) or "a"))
    scores = {i.id: float(rng.choice([1, 2, 3])) if rng.random() < 0.5 else rng.random() for i in items}
    rng.shuffle(items)
    return items, scores


@pytest.mark.parametrize("seed", range(16))
def test_numbered_scan_finds_the_same_duplicates_in_the_same_order(seed: int) -> None:
    items, scores = corpus(random.Random(seed))
    found = list(compaction.duplicates(items, scores))
    assert found == list(reference(items, scores))
    ordered = sorted(items, key=lambda i: scores[i.id])  # as plan() passes them
    assert list(compaction.duplicates(ordered, scores)) == list(reference(ordered, scores))
