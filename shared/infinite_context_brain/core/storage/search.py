"""BM25 over one session's items, with the same statistics and the same arithmetic on every
backend, and bounded work per query.

Both memory backends keep their own inverted index per session (SQLite tables, Redis sorted
sets) and hand this module what it asks for through ``PostingSource``; the ranking is computed
here, once, so SQLite and Redis rank the same data the same way, and the statistics (document
count, average length, document frequencies) are those of the session only: another project's
items never change this project's ranking.

Scoring (FTS5's bm25, which the seed's design names): for each query term ``t`` found in an item,
``idf(t) * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))`` with ``tf = body_tf + tag_tf``
(a tag's words count as words of the item, once: tags move an item within memory/ranking.py's
bounded factor, not inside BM25), ``dl`` the item's indexed words (body and tags), ``avgdl`` the session's
average, ``idf(t) = max(1e-6, ln((N - n + 0.5) / (n + 0.5)))`` (N items in the session, n of them
containing ``t``; live and archived items both count).

Bounded work: a term found in more than ``FULL_READ`` items is read only for its ``FULL_READ``
newest items; the ``COMPLETE`` best candidates then get that term's counts by direct lookup, so
they are scored exactly. A term with a near-zero idf (in about half the items or more) is not
read at all when the query has a selective term, since it cannot change the order. When no term
is that common, the result is exact.

Candidates are scored term by term, adding each term's part in one fixed order, so an item's
score is the same float whichever backend supplied the postings; only the best are sorted (a
heap), not every candidate of a common word.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from typing import Protocol

K1, B = 1.2, 0.75
IDF_FLOOR = 1e-6
#: a term whose idf is below this is skipped when a more selective term is in the query
NEGLIGIBLE_IDF = 0.1
#: postings read per term at most (the newest ones)
FULL_READ = 256
#: candidates whose counts for a capped term are looked up directly
COMPLETE = 50
#: query terms used at most (the most selective ones)
MAX_TERMS = 32

#: (item id, body term count, tag term count, item length)
Posting = tuple[str, int, int, int]


class PostingSource(Protocol):
    """What a backend exposes of one session's index."""

    def statistics(self, terms: list[str]) -> tuple[int, int, dict[str, int]]:
        """(items in the session, their total length, document frequency of each term)."""
        ...

    def postings(self, caps: dict[str, int | None], archived: bool | None) -> dict[str, list[Posting]]:
        """Per term, the postings of live (False), archived (True) or all (None) items, newest
        first, at most ``cap`` (None: all) read from the index before that filter."""
        ...

    def lookup(self, wanted: dict[str, list[str]]) -> dict[str, dict[str, tuple[int, int]]]:
        """Per term, (body count, tag count) for the given item ids that contain it."""
        ...


def idf(docs: int, df: int) -> float:
    return max(IDF_FLOOR, math.log((docs - df + 0.5) / (df + 0.5)))


def term_score(weight: float, body_tf: int, tag_tf: int, dl: int, avgdl: float) -> float:
    tf = body_tf + tag_tf
    return weight * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))


def search(
    source: PostingSource, terms: list[str], limit: int, archived: bool | None
) -> list[tuple[str, float]]:
    """(item id, BM25 score), best first (ties by id), at most ``limit``."""
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

    def scores(ids: Iterable[str]) -> dict[str, float]:
        """BM25 of ``ids``, term by term in ``used`` order: each item's sum is formed in the same
        order (from 0.0) as a per-item loop over ``used``, so the floats are identical, at one
        pass over each term's postings instead of a dict lookup per item and term."""
        wanted = dict.fromkeys(ids, 0.0)
        for term in used:
            weight, found = weights[term], counts[term]
            if len(found) <= len(wanted):
                pairs: Iterable[tuple[str, tuple[int, int]]] = (
                    (i, tf) for i, tf in found.items() if i in wanted
                )
            else:
                pairs = ((i, found[i]) for i in wanted if i in found)
            for item_id, (body_tf, tag_tf) in pairs:
                wanted[item_id] += term_score(weight, body_tf, tag_tf, lengths[item_id], avgdl)
        return wanted

    def best(scored: dict[str, float], count: int) -> list[tuple[str, float]]:
        return heapq.nsmallest(count, scored.items(), key=lambda pair: (-pair[1], pair[0]))

    capped = [t for t in used if caps[t] is not None]
    candidates: Iterable[str] = lengths
    if capped:  # complete the capped terms' counts for the best candidates
        candidates = [i for i, _ in best(scores(lengths), max(COMPLETE, limit))]
        wanted = {t: [i for i in candidates if i not in counts[t]] for t in capped}
        for term, found in source.lookup({t: ids for t, ids in wanted.items() if ids}).items():
            counts[term].update(found)
    return best(scores(candidates), limit)
