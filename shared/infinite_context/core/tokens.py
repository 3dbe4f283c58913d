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

_PIECE = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]|\s+")
_EXACT_LIMIT = 400_000
CHARS_PER_TOKEN_FALLBACK = 3.6


def count_tokens(text: str) -> int:
    if not text:
        return 0
    if len(text) > _EXACT_LIMIT:
        return int(len(text) / CHARS_PER_TOKEN_FALLBACK) + 1
    total = 0
    for match in _PIECE.finditer(text):
        piece = match.group()
        first = piece[0]
        if first.isspace():
            # Runs of spaces (indentation) merge into a few tokens; a single space joins the word.
            total += (len(piece) - 1) // 4 if len(piece) > 1 else 0
        elif first.isalpha():
            total += 1 if len(piece) <= 6 else (len(piece) + 3) // 4
        elif first.isdigit():
            total += (len(piece) + 2) // 3
        else:
            total += 1
    return total


FAST_EXACT_BELOW = 8_000


def fast_count(text: str) -> int:
    """``count_tokens`` for short texts, a calibrated characters-per-token estimate for long ones
    (tool outputs in hot paths such as the transcript transform)."""
    if len(text) < FAST_EXACT_BELOW:
        return count_tokens(text)
    return int(len(text) / CHARS_PER_TOKEN_FALLBACK) + 1
