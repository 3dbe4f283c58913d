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


_FIX_CUE = re.compile(
    r"\b(?:fixed|resolved|solved|sorted|works?|worked|pass(?:es|ed)?|passing|green|gone)\b", re.I
)
#: words too common in failures to tell one from another
GENERIC = frozenset(
    "test tests error errors bug bugs issue issues build fail fails failing failed fix fixed work works "
    "thing things problem code run runs now".split()
)
SHORT_FIX_STEMS = 5
# Words that say a problem stopped, whatever else the claim says ("CircularDependencyError gone
# after pointing accounts.0057 at the squashed migration", "Defender no longer flags it").
_GONE_CUE = re.compile(
    r"\b(?:gone|no longer|any ?more|no more|no \w+s|resolved|solved|sorted|unblocked|fixed|again)\b", re.I
)


def fixes_blocker(done: str, check: str) -> bool:
    """A completion settles a blocker: ``settles_text``, or a short fix statement naming one
    distinctive word of it ("Fixed the NOSCRIPT thing" for "EVALSHA fails with NOSCRIPT",
    "sensor passes now" for "March runs fail on the fx_rates sensor")."""
    if settles_text(done, check):
        return True
    for claim in re.split(r"\s+[-–—]\s+|[,;:]\s+", re.sub(r"\([^)]*\)", "", done)):
        # one claim at a time, asides left out ("Fixed the NOSCRIPT thing - we now load ...")
        if settles_text(claim, check):
            return True
        words = stems(claim)

        if not distinctive_overlap(claim, check):
            continue
        if _GONE_CUE.search(claim) or (_FIX_CUE.search(claim) and len(words) <= SHORT_FIX_STEMS):
            return True
    return False


def distinctive_overlap(a: str, b: str) -> bool:
    """``a`` and ``b`` share a word (by stem) more telling than "test" or "error" ("worker" is
    telling though its stem is "work")."""
    shared = stems(a) & stems(b)
    return any(_stem(w) in shared for w in content_words(f"{a} {b}") if w not in GENERIC)


def dedupe(items: list[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        if item and not any(same(item, kept) for kept in out):
            out.append(item)
    return out
