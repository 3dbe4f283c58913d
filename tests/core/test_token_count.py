"""The one token estimate (``core/tokens.py``) every budget uses: nothing for nothing, about a
token per English word, code denser, and a huge text counted within bounds."""

from __future__ import annotations

from infinite_context_brain.core.tokens import count_tokens


def test_token_estimate_is_sane() -> None:
    assert count_tokens("") == 0
    assert 8 <= count_tokens("The quick brown fox jumps over the lazy dog.") <= 12
    code = "def checkpoint(self, context: str) -> CheckpointResult:\n    return self._merge(context)\n"
    assert 15 <= count_tokens(code) <= 35
    big = "word " * 200_000
    assert 150_000 <= count_tokens(big) <= 350_000
