"""Context meter: how full a Claude Code session's context window is, from the transcript.

The current context is the ``usage`` of the last main-chain (non-sidechain) assistant reply after
the last compact boundary: ``input + cache_creation + cache_read`` tokens. That is Claude Code's
own number, so it needs no estimate. The breakdown by category (tool results per tool, text,
thinking) is estimated with our token counter times ``CALIBRATION``, measured against the real
usage deltas in the fixtures (``benchmarks/transcript_bench.py`` prints the calibration error).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..tokens import fast_count
from .reader import AssistantEntry, Entry, SystemEntry, TranscriptReader, UserEntry

DEFAULT_WINDOW = 200_000
EXTENDED_WINDOW = 1_000_000
#: real tokens per counted token (usage deltas / our counts) on the fixtures
CALIBRATION = 1.14


@dataclass
class Compaction:
    line: int
    trigger: str | None
    pre_tokens: int | None
    measured: int | None  # our meter just before the boundary


@dataclass
class ContextMeter:
    transcript: str
    context_tokens: int | None
    context_window: int
    model: str
    by_category: dict[str, int] = field(default_factory=dict)
    compactions: list[Compaction] = field(default_factory=list)

    @property
    def percent(self) -> float | None:
        if self.context_tokens is None:
            return None
        return 100.0 * self.context_tokens / self.context_window


def window_for(model: str, peak_tokens: int, override: int | None = None) -> int:
    if override:
        return override
    if "[1m]" in model or model.endswith("-1m") or peak_tokens > DEFAULT_WINDOW:
        return EXTENDED_WINDOW
    return DEFAULT_WINDOW


def measure(path: Path | str, window_override: int | None = None) -> ContextMeter:
    return measure_entries(TranscriptReader(Path(path)), str(path), window_override)


def measure_entries(entries: Iterable[Entry], label: str, window_override: int | None = None) -> ContextMeter:
    """The meter over entries already being read (``transcript stats`` parses the file once)."""
    names: dict[str, str] = {}
    recent_replies: list[AssistantEntry] = []
    current: int | None = None
    since_reply = 0  # tokens added after the last reply (its output, new tool results, prompts)
    model = ""
    peak = 0
    categories: dict[str, int] = {}
    compactions: list[Compaction] = []

    def add(category: str, tokens: int) -> None:
        categories[category] = categories.get(category, 0) + int(tokens * CALIBRATION)

    def tool_name(tool_use_id: str) -> str:
        # A reply's later tool_use lines are folded into an entry already seen; look there.
        if tool_use_id not in names:
            for reply in reversed(recent_replies):
                for use in reply.tool_uses:
                    names.setdefault(use.id, use.name)
        return names.get(tool_use_id, "unknown")

    for entry in entries:
        if isinstance(entry, SystemEntry) and entry.subtype == "compact_boundary":
            at_boundary = current + since_reply if current is not None else None
            compactions.append(
                Compaction(entry.line, entry.compact_trigger, entry.compact_pre_tokens, at_boundary)
            )
            current = None
            since_reply = 0
            categories = {}
            continue
        if isinstance(entry, AssistantEntry):
            if entry.is_sidechain:
                continue
            recent_replies.append(entry)
            del recent_replies[:-64]
            for use in entry.tool_uses:
                names[use.id] = use.name
                add("tool calls", fast_count(json.dumps(use.input)))
            if entry.usage.context_tokens:
                current = entry.usage.context_tokens
                since_reply = entry.usage.output_tokens
                peak = max(peak, current)
                model = entry.model or model
            for text in entry.texts:
                add("text", fast_count(text))
            for thought in entry.thinking:
                add("thinking", fast_count(thought))
        elif isinstance(entry, UserEntry) and not entry.is_sidechain:
            for result in entry.tool_results:
                tokens = fast_count(result.text())
                since_reply += tokens
                add(f"tool:{tool_name(result.tool_use_id)}", tokens)
            for text in entry.texts:
                since_reply += fast_count(text)
                add("compact summary" if entry.is_compact_summary else "text", fast_count(text))
    return ContextMeter(
        transcript=label,
        context_tokens=current,
        context_window=window_for(model, peak, window_override),
        model=model,
        by_category=dict(sorted(categories.items(), key=lambda kv: -kv[1])),
        compactions=compactions,
    )
