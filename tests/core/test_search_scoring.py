"""storage/search.py is plain BM25: on random indexes its scores and order are those of an
independent implementation (the ``rank_bm25`` package's BM25Okapi, k1 1.2, b 0.75) over the
same documents, for live, archived and all items. Terms stay in under half the documents, where
both use the same idf (rank_bm25 replaces a negative idf, ours floors it)."""

from __future__ import annotations

import random

import pytest
from rank_bm25 import BM25Okapi

from infinite_context_brain.core.storage import search
from infinite_context_brain.core.storage.search import Posting


class Index:
    """A session's index in memory: term -> {item id: (body count, tag count)}, newest last."""

    def __init__(self, rng: random.Random, items: int, vocabulary: list[str]) -> None:
        self.ids = [f"it{n:05d}" for n in range(items)]
        self.archived = {i for i in self.ids if rng.random() < 0.4}
        self.docs: dict[str, list[str]] = {}
        self.table: dict[str, dict[str, tuple[int, int]]] = {}
        for item_id in self.ids:
            words = rng.sample(vocabulary, rng.randint(1, 6))
            counts = {w: rng.choice([(1, 0), (2, 0), (1, 1), (0, 1), (3, 2)]) for w in words}
            filler = rng.randint(0, 40)  # words no query asks for: lengths differ
            self.docs[item_id] = [w for w, (b, t) in counts.items() for _ in range(b + t)] + [
                "filler"
            ] * filler
            for word, pair in counts.items():
                self.table.setdefault(word, {})[item_id] = pair

    def statistics(self, terms: list[str]) -> tuple[int, int, dict[str, int]]:
        total = sum(len(d) for d in self.docs.values())
        return len(self.ids), total, {t: len(self.table.get(t, {})) for t in terms}

    def postings(self, caps: dict[str, int | None], archived: bool | None) -> dict[str, list[Posting]]:
        out: dict[str, list[Posting]] = {}
        for term, cap in caps.items():
            newest = list(reversed(self.table.get(term, {}).items()))[:cap]
            out[term] = [
                (i, b, t, len(self.docs[i]))
                for i, (b, t) in newest
                if archived is None or (i in self.archived) == archived
            ]
        return out

    def lookup(self, wanted: dict[str, list[str]]) -> dict[str, dict[str, tuple[int, int]]]:
        return {
            t: {i: self.table[t][i] for i in ids if i in self.table.get(t, {})} for t, ids in wanted.items()
        }


@pytest.mark.parametrize("seed", range(8))
def test_search_is_plain_bm25(seed: int) -> None:
    rng = random.Random(seed)
    vocabulary = [f"w{n}" for n in range(rng.choice([40, 400]))]
    index = Index(rng, rng.choice([60, 300]), vocabulary)
    reference = BM25Okapi([index.docs[i] for i in index.ids], k1=search.K1, b=search.B)
    rare = [w for w in vocabulary if 0 < len(index.table.get(w, {})) < len(index.ids) / 2]
    compared = 0
    for _ in range(30):
        terms = rng.sample(rare, rng.randint(1, 3))
        scores = dict(zip(index.ids, reference.get_scores(terms), strict=True))
        for archived in (None, False, True):
            found = search.search(index, terms, 1000, archived)
            expected = sorted(
                (
                    (i, s)
                    for i, s in scores.items()
                    if s > 0 and (archived is None or (i in index.archived) == archived)
                ),
                key=lambda pair: (-pair[1], pair[0]),
            )
            assert [i for i, _ in found] == [i for i, _ in expected]
            assert [s for _, s in found] == pytest.approx([s for _, s in expected], rel=1e-9)
            compared += 1
    assert compared == 90
