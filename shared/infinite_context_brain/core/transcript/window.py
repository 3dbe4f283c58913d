"""The context window a Claude Code session has, from its model's name and the largest context
seen (standard library only: the Stop hook's fast path reads it)."""

from __future__ import annotations

DEFAULT_WINDOW = 200_000
EXTENDED_WINDOW = 1_000_000


def window_for(model: str, peak_tokens: int, override: int | None = None) -> int:
    if override:
        return override
    if "[1m]" in model or model.endswith("-1m") or peak_tokens > DEFAULT_WINDOW:
        return EXTENDED_WINDOW
    return DEFAULT_WINDOW
