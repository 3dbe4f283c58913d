"""How full a Claude Code session's context is: the tokens of an answer's ``usage`` and the window
they fill, from its model's name and the largest context seen (standard library only: the hooks'
fast path reads it)."""

from __future__ import annotations

DEFAULT_WINDOW = 200_000
EXTENDED_WINDOW = 1_000_000
#: the ``usage`` fields an answer's context is the sum of (its own output is not in it)
CONTEXT_PARTS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def count_of(value: object) -> int:
    """A token count as written, or 0 when it is none (a string, a list, a float, < 0, absurd)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**53:
        return 0
    return value


def context_tokens(usage: object) -> int:
    """The context an answer's ``usage`` object reports (0 when it is none)."""
    return sum(count_of(usage.get(part)) for part in CONTEXT_PARTS) if isinstance(usage, dict) else 0


def window_for(model: str, peak_tokens: int, override: int | None = None) -> int:
    if override:
        return override
    if "[1m]" in model or model.endswith("-1m") or peak_tokens > DEFAULT_WINDOW:
        return EXTENDED_WINDOW
    return DEFAULT_WINDOW
