"""Telling whether two pieces of text speak of the same work, beyond word-for-word overlap.

``core.text.similarity`` compares exact content words, which is right for near-duplicates. A
completion and the blocker it fixes are worded differently ("the import crashes on rows with an
empty SKU" / "Fixed the crash on empty SKU rows"): here words are compared by a crude stem and
the overlap is measured against the shorter text.
"""

from __future__ import annotations

import re

from ..text import content_words, similarity

_SUFFIXES = ("ing", "ed", "es", "s", "er")
_MARKS = re.compile(r"[\w./\-#]*\d[\w./\-#]*")

DUPLICATE = 0.7


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def stems(text: str) -> set[str]:
    return {_stem(w) for w in content_words(text)}


def overlap(a: str, b: str) -> float:
    """Shared stems over the smaller text's stems (0..1)."""
    sa, sb = stems(a), stems(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / min(len(sa), len(sb))


def same(a: str, b: str) -> bool:
    """The same piece of work in other words: mostly the same words and the same numbers, ids
    and versions ("Closed spotter-dov.1" and "Closed spotter-dov.2" are two things)."""
    if a == b:
        return True
    return similarity(a, b) >= DUPLICATE and set(_MARKS.findall(a.lower())) == set(_MARKS.findall(b.lower()))


def settles_text(done: str, open_item: str) -> bool:
    """A completion ``done`` finishes ``open_item`` (a next step, a stated blocker): most of the
    smaller text's stems are shared, and at least two of them (one word says too little)."""
    shared = stems(done) & stems(open_item)
    return (len(shared) >= 2 and overlap(done, open_item) >= 0.5) or same(done, open_item)


def dedupe(items: list[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        if item and not any(same(item, kept) for kept in out):
            out.append(item)
    return out
