"""storage/search.py scores candidates term by term (one pass over each term's postings) and picks
the best with a heap: on randomized indexes (capped and whole posting lists, archived items,
ties) it returns exactly what scoring each candidate over every term and sorting them all
returned before (the reference below is that code), the same ids in the same order with the
same float scores."""

from __future__ import annotations

import random

import pytest

from infinite_context_brain.core.storage import search
from infinite_context_brain.core.storage.search import (
    COMPLETE,
    FULL_READ,
    MAX_TERMS,
    NEGLIGIBLE_IDF,
    Posting,
    idf,
    term_score,
)


class Index:
    """A session's index in memory: term -> {item id: (body count, tag count)}, newest last."""

    def __init__(self, rng: random.Random, items: int, vocabulary: list[str]) -> None:
        self.ids = [f"it{n:05d}" for n in range(items)]
        self.archived = {i for i in self.ids if rng.random() < 0.4}
        self.lengths = {i: rng.randint(1, 120) for i in self.ids}
        self.table: dict[str, dict[str, tuple[int, int]]] = {}
        for item_id in self.ids:
            for term in rng.sample(vocabulary, rng.randint(1, min(12, len(vocabulary)))):
                body, tag = rng.choice([(1, 0), (2, 0), (1, 1), (0, 1), (3, 2), (1, 0)])
                self.table.setdefault(term, {})[item_id] = (body, tag)
        self.lookups = 0

    def statistics(self, terms: list[str]) -> tuple[int, int, dict[str, int]]:
        return len(self.ids), sum(self.lengths.values()), {t: len(self.table.get(t, {})) for t in terms}

    def postings(self, caps: dict[str, int | None], archived: bool) -> dict[str, list[Posting]]:
        out: dict[str, list[Posting]] = {}
        for term, cap in caps.items():
            newest = list(reversed(self.table.get(term, {}).items()))[:cap]
            out[term] = [
                (i, b, t, self.lengths[i]) for i, (b, t) in newest if (i in self.archived) == archived
            ]
        return out

    def lookup(self, wanted: dict[str, list[str]]) -> dict[str, dict[str, tuple[int, int]]]:
        self.lookups += 1
        return {
            t: {i: self.table[t][i] for i in ids if i in self.table.get(t, {})} for t, ids in wanted.items()
        }


def reference(source: Index, terms: list[str], limit: int, archived: bool) -> list[tuple[str, float]]:
    """search.search as it was: every candidate scored over every term, all of them sorted."""
    unique = list(dict.fromkeys(t for t in terms if t))
    if not unique:
        return []
    docs, total, frequency = source.statistics(unique)
    present = [t for t in unique if frequency.get(t, 0) > 0]
    if docs <= 0 or not present:
        return []
    avgdl = max(total / docs, 1e-9)
    weights = {t: idf(docs, frequency[t]) for t in present}
    present.sort(key=lambda t: (-weights[t], t))
    present = present[:MAX_TERMS]
    selective = [t for t in present if weights[t] >= NEGLIGIBLE_IDF]
    used = selective or present
    caps: dict[str, int | None] = {t: None if frequency[t] <= FULL_READ else FULL_READ for t in used}
    read = source.postings(caps, archived)
    counts: dict[str, dict[str, tuple[int, int]]] = {t: {} for t in used}
    lengths: dict[str, int] = {}
    for term in used:
        for item_id, body_tf, tag_tf, dl in read.get(term, []):
            counts[term][item_id] = (body_tf, tag_tf)
            lengths[item_id] = dl

    def score(item_id: str) -> float:
        total_score = 0.0
        for term in used:
            found = counts[term].get(item_id)
            if found is not None:
                total_score += term_score(weights[term], found[0], found[1], lengths[item_id], avgdl)
        return total_score

    capped = [t for t in used if caps[t] is not None]
    if capped:
        best = sorted(lengths, key=lambda i: (-score(i), i))[: max(COMPLETE, limit)]
        wanted = {t: [i for i in best if i not in counts[t]] for t in capped}
        for term, found in source.lookup({t: ids for t, ids in wanted.items() if ids}).items():
            counts[term].update(found)
        candidates = best
    else:
        candidates = list(lengths)
    return sorted(((i, score(i)) for i in candidates), key=lambda pair: (-pair[1], pair[0]))[:limit]


@pytest.mark.parametrize("seed", range(12))
def test_term_by_term_scoring_returns_exactly_what_per_item_scoring_did(seed: int) -> None:
    rng = random.Random(seed)
    vocabulary = [f"w{n}" for n in range(rng.choice([3, 8, 40, 400]))]
    index = Index(rng, rng.choice([5, 60, 700, 1500]), vocabulary)
    compared = 0
    for _ in range(40):
        terms = [rng.choice([*vocabulary, "absent"]) for _ in range(rng.randint(1, 5))]
        limit = rng.choice([1, 5, 10, 30, 90])
        for archived in (False, True):
            assert search.search(index, terms, limit, archived) == reference(index, terms, limit, archived)
            compared += 1
    assert compared == 80
