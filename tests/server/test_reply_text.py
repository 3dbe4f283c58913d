"""Reply lines and previews squeeze only a prefix of an item when that settles the answer
(issue 19): the same text as squeezing the whole item."""

from __future__ import annotations

import random

from infinite_context_brain.server.text import squeeze


def squeeze_whole(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def test_squeeze_reads_a_prefix_with_the_same_result() -> None:
    rng = random.Random(19)
    alphabet = "ab xyz\n\t\u2003  "  # whitespace runs of every kind, some long
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 700)))
        for limit in (1, 2, 160, 200):
            assert squeeze(text, limit) == squeeze_whole(text, limit), (text, limit)
    assert squeeze(" " * 5_000 + "tail", 160) == "tail"
