"""The words of a text: one vocabulary for finding (working memory's BM25 search) and for
comparing (the offline merger telling whether two sentences say the same thing).

Both drop ``FUNCTION_WORDS``. They differ on purpose, and only here:

* search splits identifiers the way people query them: ``parseHTTPResponse`` and
  ``parse_http_response`` both index as ``parse http response`` (plus the whole identifier), so
  a query for "http response" finds either; it also drops ``but has have its``;
* comparing reads plain lowercase words and also drops ``PHRASING_WORDS``, the words that say
  how a sentence is put rather than what it is about: "Should we use Redis?" and "We will use
  Redis" are about the same thing.

Search terms are stored with each item (the index), so ``terms`` must not change lightly: an
existing index would no longer match the queries.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import chain
from typing import Generic, TypeVar

_IDENTIFIER = re.compile(r"[A-Za-z0-9]+(?:[_'][A-Za-z0-9]+)*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_LOWER_WORD = re.compile(r"[a-z0-9]+")

#: words that carry no topic, left out of search terms and of comparisons alike
FUNCTION_WORDS = frozenset(
    "a an and are as at be by for from i in is it of on or that the this to was we were will with".split()
)
SEARCH_STOP_WORDS = FUNCTION_WORDS | {"but", "has", "have", "its"}
#: how a sentence is put (modal verbs, question words, yes/no): not what it is about
PHRASING_WORDS = frozenset(
    (
        "been our my into now then so use using should do does did would can could not no yes "
        "which what whether how who when where why"
    ).split()
)
COMPARE_STOP_WORDS = FUNCTION_WORDS | PHRASING_WORDS


def runs_table(keep: Callable[[str], bool], mark: str | None = None) -> bytes:
    """A ``bytes.translate`` table that cuts an ASCII text into runs: the characters ``keep``
    accepts stay (or all become ``mark``), every other byte becomes a space, so ``split`` then
    gives the runs, in C."""
    return bytes((c if mark is None else ord(mark)) if c < 128 and keep(chr(c)) else 32 for c in range(256))


#: the runs of identifier characters (``terms``)
_RUN_CHARS = runs_table(lambda c: c.isalnum() or c in "_'")
K = TypeVar("K", bound=str | bytes)
V = TypeVar("V")


class Memo(dict[K, V], Generic[K, V]):
    """``memo[key]`` is ``work(key)``, worked out on first use and kept for next time when
    ``key`` is at most ``longest`` long; ``size`` kept, the memo starts again (bounded memory
    whatever the input). Looked up in C (``map(memo.__getitem__, keys)``): cheaper than a
    Python call a key."""

    def __init__(self, work: Callable[[K], V], size: int, longest: int) -> None:
        super().__init__()
        self.work, self.size, self.longest = work, size, longest

    def __missing__(self, key: K) -> V:
        found = self.work(key)
        if len(key) <= self.longest:
            if len(self) >= self.size:
                self.clear()
            self[key] = found
        return found


#: distinct words whose terms ``_WORD_TERMS`` keeps (~4 MB at most), of at most WORD_KEPT_CHARS
#: characters each (a base64 blob in a tool output is one long word)
WORDS_KEPT = 20_000
WORD_KEPT_CHARS = 64
#: the terms of one word (an identifier, or the ASCII bytes of a run of identifier characters):
#: a note's words repeat (a vocabulary)
_WORD_TERMS: Memo[str | bytes, tuple[str, ...]] = Memo(
    lambda word: tuple(_word_terms(word if isinstance(word, str) else word.decode("ascii"))),
    WORDS_KEPT,
    WORD_KEPT_CHARS,
)


def terms(text: str) -> list[str]:
    """Search terms: lowercase words, identifiers split on camelCase and snake_case (the whole
    identifier kept too), stop words and one-character words dropped.

    Word by word (each word's terms depend on it alone), from ``_WORD_TERMS``; an ASCII text's
    words are found by ``bytes.translate`` + ``split`` (the runs of identifier characters: no
    identifier spans two, and ``_word_terms`` reads each run as the pattern would), ~2.5x faster
    than the pattern and a Python loop on a 500-character note, the same list
    (``tests/core/test_memory_text_fast.py`` compares them)."""
    if text.isascii():
        runs: list[str] | list[bytes] = text.encode("ascii").translate(_RUN_CHARS).split()
    else:
        runs = _IDENTIFIER.findall(text)
    return list(chain.from_iterable(map(_WORD_TERMS.__getitem__, runs)))


def _word_terms(text: str) -> list[str]:
    """``terms`` as a loop over the identifiers of ``text``: what ``_WORD_TERMS`` keeps for one."""
    out: list[str] = []
    for word in _IDENTIFIER.findall(text):
        if "_" not in word and (word.islower() or word.isdigit() or word[1:].islower()):
            out.append(word.lower())  # the common case: nothing to split
            continue
        parts = [p for chunk in word.split("_") for p in _CAMEL.findall(chunk)]
        lowered = word.lower()
        if len(parts) > 1:
            out.append(lowered.replace("_", ""))
            out += [p.lower() for p in parts]
        else:
            out.append(lowered)
    return [t for t in out if t not in SEARCH_STOP_WORDS and len(t) > 1]


def content_words(text: str) -> set[str]:
    """The words a sentence is about: lowercase letter/digit runs, stop and phrasing words and
    one-character words dropped."""
    return {w for w in _LOWER_WORD.findall(text.lower()) if w not in COMPARE_STOP_WORDS and len(w) > 1}


def similarity(a: str, b: str) -> float:
    """Jaccard overlap of content words (0..1); 0 when either has none."""
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)
