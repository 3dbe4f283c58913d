"""A fixed index workload (test_memory_sqlite_schema.py): 700 items,
some archived, common words in more than ``search.FULL_READ`` items (the capped path) and rare
ones, searched live and archived. ``python -m tests.core.memory_golden`` prints the rankings."""

from __future__ import annotations

import json
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from infinite_context_brain.core.memory.model import MemoryItem
from infinite_context_brain.core.storage.parts import IndexedItem, IndexTerms, MemoryIndex

COMMON = "cache redis deploy queue parse token schema index budget retry worker".split()
RARE = [f"rare{n}" for n in range(120)]
QUERIES = [
    "cache",
    "redis queue",
    "rare7",
    "rare3 rare99 deploy",
    "token budget index",
    "rare42 worker",
    "zebra",
]
ARCHIVED = {n for n in range(700) if n % 3 != 0}  # two in three: as after compactions
SESSION = "golden"


def workload() -> list[IndexedItem]:
    rng = random.Random(19)
    base = datetime(2026, 1, 1, tzinfo=UTC)
    found = []
    for n in range(700):
        body = [rng.choice(COMMON) for _ in range(rng.randint(3, 30))] + rng.sample(RARE, 3)
        tags = [rng.choice(COMMON)] if n % 4 == 0 else []
        item = MemoryItem(
            id=f"g{n:04d}", content=" ".join(body), tokens=len(body), created_at=base + timedelta(minutes=n)
        )
        found.append(IndexedItem(item, IndexTerms(tuple(body), tuple(tags))))
    return found


def fill(index: MemoryIndex) -> None:
    items = workload()
    for start in range(0, len(items), 50):  # stores of several sizes, then compaction's archiving
        index.memory_put(SESSION, items[start : start + 50])
    index.memory_put(SESSION, [items[5]])  # one item stored again
    archived = [i.item.model_copy(update={"archived": True}) for i in items if int(i.item.id[1:]) in ARCHIVED]
    index.memory_update(SESSION, archived)


def rankings(index: MemoryIndex) -> dict[str, list[list[object]]]:
    return {
        f"{query} | {'archived' if archived else 'live'}": [
            [i, round(s, 9)] for i, s in index.memory_search(SESSION, query.split(), 20, archived)
        ]
        for query in QUERIES
        for archived in (False, True)
    }


if __name__ == "__main__":
    from infinite_context_brain.core.config import load_settings
    from infinite_context_brain.core.storage import open_store

    with open_store(load_settings(store_url=f"sqlite:///{Path(sys.argv[1]).resolve()}")) as store:
        fill(store)
        print(json.dumps(rankings(store), indent=1))
