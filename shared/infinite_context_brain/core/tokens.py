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

_EXACT_LIMIT = 400_000
#: characters per counted token on long tool outputs (3.07 measured on the Claude Code fixtures)
CHARS_PER_TOKEN_FALLBACK = 3.1
# The text splits into pieces: letter runs, digit runs, single other characters, whitespace runs.
_LETTERS = re.compile(r"[A-Za-z]+")
_DIGITS = re.compile(r"\d+")
_OTHER = re.compile(r"[^\sA-Za-z\d]")
_INDENT = re.compile(r"\s{5,}")  # shorter whitespace runs cost nothing


def count_tokens(text: str) -> int:
    """Letter runs: 1 token up to 6 letters, else one per 4; digits: one per 3; every other
    non-space character: 1; whitespace runs: one per 4 after the first character."""
    if len(text) > _EXACT_LIMIT:
        return int(len(text) / CHARS_PER_TOKEN_FALLBACK) + 1
    total = sum(1 if len(w) <= 6 else (len(w) + 3) // 4 for w in _LETTERS.findall(text))
    total += sum((len(d) + 2) // 3 for d in _DIGITS.findall(text))
    total += len(_OTHER.findall(text))
    total += sum((len(ws) - 1) // 4 for ws in _INDENT.findall(text))
    return total


FAST_EXACT_BELOW = 1_000


def fast_count(text: str) -> int:
    """``count_tokens`` for short texts, a calibrated characters-per-token estimate for long ones
    (tool outputs in hot paths such as the transcript transform: on outputs past 1,000
    characters the ratio lands close to the scan in aggregate; benchmarks/transcript_bench.py)."""
    if len(text) < FAST_EXACT_BELOW:
        return count_tokens(text)
    return int(len(text) / CHARS_PER_TOKEN_FALLBACK) + 1
