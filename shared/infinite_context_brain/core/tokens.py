"""Offline token estimate.

Exact Claude counts need the provider's ``count_tokens`` API and stock tiktoken downloads its
vocabulary, so neither works offline. This estimate counts word pieces the way BPE vocabularies
split them (short words are one token, long words about one per four characters, each
punctuation mark one, digits in groups of three), which tracks real tokenizers far better than
``len(text) / 4`` on code and JSON. ``CHARS_PER_TOKEN_FALLBACK`` is used past ``_EXACT_LIMIT``
characters, where scanning would cost more than the precision is worth.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .text import runs_table

_EXACT_LIMIT = 400_000
#: characters per counted token on long tool outputs (3.07 measured on the Claude Code fixtures)
CHARS_PER_TOKEN_FALLBACK = 3.1
# The text splits into pieces: letter runs, digit runs, single other characters, whitespace runs.
# Counting each kind with one C-level regex pass is ~5x faster than walking the pieces in Python.
_LETTERS = re.compile(r"[A-Za-z]+")
_DIGITS = re.compile(r"\d+")
_OTHER = re.compile(r"[^\sA-Za-z\d]")
_INDENT = re.compile(r"\s{5,}")  # shorter whitespace runs cost nothing


class _Cost(dict[int, int]):
    """Tokens of a run by its length, filled on first use: ``sum(map(cost.__getitem__,
    map(len, runs)))`` stays in C (a Python loop over a note's ~100 runs cost ~5 µs)."""

    def __init__(self, rule: Callable[[int], int]) -> None:
        super().__init__()
        self._rule = rule

    def __missing__(self, size: int) -> int:
        self[size] = cost = self._rule(size)
        return cost


_LETTER_RUN = _Cost(lambda n: 1 if n <= 6 else (n + 3) // 4)
_DIGIT_RUN = _Cost(lambda n: (n + 2) // 3)
_SPACE_RUN = _Cost(lambda n: (n - 1) // 4)  # 0 up to 4: as if only runs of 5 or more counted


# An ASCII text (most notes) is counted with ``bytes.translate`` and ``split``, C passes that
# skip the regex engine's work at every position: ~4x faster on a 500-character note (~65 ->
# ~17 µs on the test machine), the same counts (``tests/core/test_memory_text_fast.py``
# compares the two on every ASCII character). ``\s`` there is ``str.isspace``: \x1c-\x1f too.
_ASCII_LETTERS = runs_table(str.isalpha, "a")
_ASCII_DIGITS = runs_table(str.isdigit, "0")
_ASCII_SPACES = runs_table(str.isspace, "w")
_NOT_OTHER = bytes(c for c in range(128) if chr(c).isalnum() or chr(c).isspace())


def count_tokens(text: str) -> int:
    """Letter runs: 1 token up to 6 letters, else one per 4; digits: one per 3; every other
    non-space character: 1; whitespace runs: one per 4 after the first character."""
    if not text:
        return 0
    if len(text) > _EXACT_LIMIT:
        return int(len(text) / CHARS_PER_TOKEN_FALLBACK) + 1
    if text.isascii():
        return _count_ascii(text.encode("ascii"))
    total = sum(map(_LETTER_RUN.__getitem__, map(len, _LETTERS.findall(text))))
    total += sum(map(_DIGIT_RUN.__getitem__, map(len, _DIGITS.findall(text))))
    total += len(_OTHER.findall(text))
    total += sum((len(ws) - 1) // 4 for ws in _INDENT.findall(text))
    return total


def _count_ascii(raw: bytes) -> int:
    """``count_tokens`` of an ASCII text, from its bytes."""
    total = sum(map(_LETTER_RUN.__getitem__, map(len, raw.translate(_ASCII_LETTERS).split())))
    total += sum(map(_DIGIT_RUN.__getitem__, map(len, raw.translate(_ASCII_DIGITS).split())))
    total += len(raw.translate(None, _NOT_OTHER))
    spaces = raw.translate(_ASCII_SPACES)
    if b"wwwww" in spaces:  # a run of five or more
        total += sum(map(_SPACE_RUN.__getitem__, map(len, spaces.split())))
    return total


FAST_EXACT_BELOW = 1_000


def fast_count(text: str) -> int:
    """``count_tokens`` for short texts, a calibrated characters-per-token estimate for long ones
    (tool outputs in hot paths such as the transcript transform: the exact scan costs ~70 ms/MB,
    and on outputs past 1,000 characters the ratio lands within ~2% of it in aggregate)."""
    if len(text) < FAST_EXACT_BELOW:
        return count_tokens(text)
    return int(len(text) / CHARS_PER_TOKEN_FALLBACK) + 1
