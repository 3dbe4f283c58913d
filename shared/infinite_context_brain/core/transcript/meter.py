"""Context meter: how full a Claude Code session's context window is, from the transcript.

The current context is the ``usage`` of the last main-chain (non-sidechain) assistant reply after
the last compact boundary: ``input + cache_creation + cache_read`` tokens. That is Claude Code's
own number, so it needs no estimate. The breakdown by category (tool results per tool, text,
thinking) is estimated with our token counter times ``CALIBRATION``, measured against the real
usage deltas in the fixtures (``benchmarks/transcript_bench.py`` prints the calibration error).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..tokens import fast_count
from .reader import (
    AssistantEntry,
    Entry,
    ReadStats,
    SystemEntry,
    TranscriptReader,
    UserEntry,
    merged_entries,
)
from .walk import ToolIndex
from .window import window_for

#: real tokens per counted token (usage deltas / our counts) on the fixtures
CALIBRATION = 1.14


@dataclass
class Compaction:
    """A compact boundary: Claude Code's own figure (``pre_tokens``) beside our meter's."""

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


def measure(path: Path | str, window_override: int | None = None) -> ContextMeter:
    return measure_entries(TranscriptReader(Path(path)), str(path), window_override)


def measure_entries(entries: Iterable[Entry], label: str, window_override: int | None = None) -> ContextMeter:
    """The meter over entries already being read (``transcript stats`` parses the file once)."""
    figures = RunningFigures()
    for entry in entries:
        figures.add(entry)
    return figures.meter(label, window_override)


class RunningFigures:
    """The meter's figures so far, one entry at a time: a full read and the incremental meter
    feed the same code, so they agree by construction."""

    def __init__(self) -> None:
        self.tools = ToolIndex()  # main-chain tool uses, so each result is counted under its tool
        self.current: int | None = None
        self.since_reply = 0  # tokens added after the last reply (its output, new tool results, prompts)
        self.model = ""
        self.peak = 0
        self.categories: dict[str, int] = {}
        self.compactions: list[Compaction] = []

    def _count(self, category: str, tokens: int) -> None:
        self.categories[category] = self.categories.get(category, 0) + int(tokens * CALIBRATION)

    def add(self, entry: Entry) -> None:
        if isinstance(entry, SystemEntry) and entry.subtype == "compact_boundary":
            at_boundary = self.current + self.since_reply if self.current is not None else None
            self.compactions.append(
                Compaction(entry.line, entry.compact_trigger, entry.compact_pre_tokens, at_boundary)
            )
            self.current = None
            self.since_reply = 0
            self.categories = {}
            return
        if isinstance(entry, AssistantEntry):
            if entry.is_sidechain:
                return
            self.tools.add_reply(entry)
            for use in entry.tool_uses:
                self._count("tool calls", fast_count(json.dumps(use.input)))
            if entry.usage.context_tokens:
                self.current = entry.usage.context_tokens
                self.since_reply = entry.usage.output_tokens
                self.peak = max(self.peak, self.current)
                self.model = entry.model or self.model
            for text in entry.texts:
                self._count("text", fast_count(text))
            for thought in entry.thinking:
                self._count("thinking", fast_count(thought))
        elif isinstance(entry, UserEntry) and not entry.is_sidechain:
            for result in entry.tool_results:
                tokens = fast_count(result.text())
                self.since_reply += tokens
                self._count(f"tool:{self.tools.name(result.tool_use_id)}", tokens)
            for text in entry.texts:
                self.since_reply += fast_count(text)
                self._count("compact summary" if entry.is_compact_summary else "text", fast_count(text))

    def meter(self, label: str, window_override: int | None = None) -> ContextMeter:
        return ContextMeter(
            transcript=label,
            context_tokens=self.current,
            context_window=window_for(self.model, self.peak, window_override),
            model=self.model,
            by_category=dict(sorted(self.categories.items(), key=lambda kv: -kv[1])),
            compactions=list(self.compactions),
        )


class IncrementalMeter:
    """A live transcript's meter that reads only the bytes appended since the last ``update``.

    Claude Code appends to its transcripts, so a byte cursor (just past the last complete line)
    plus the running figures give the same meter as a full read. The cursor starts over when the
    file is another one (device/inode), shrank, or no longer has a line end just before the
    cursor (rewritten in place). A last line without its newline is left for the next update:
    Claude Code may still be writing it.
    """

    def __init__(self, path: Path | str, window_override: int | None = None) -> None:
        self.path = Path(path)
        self.window_override = window_override
        self._restart(None)

    def _restart(self, identity: tuple[int, int] | None) -> None:
        self.identity = identity
        self.cursor = 0  # byte offset just past the last complete line read
        self.stats = ReadStats()  # lines read so far: entry line numbers continue from there
        self.figures = RunningFigures()
        self._replies: dict[str, AssistantEntry] = {}  # replies whose split lines may still come

    def _same_file(self, identity: tuple[int, int], size: int) -> bool:
        if identity != self.identity or size < self.cursor:
            return False
        if self.cursor in (0, size):  # nothing new to read: no need to look
            return True
        with open(self.path, "rb") as handle:
            handle.seek(self.cursor - 1)
            return handle.read(1) == b"\n"

    def update(self) -> bool:
        """Read what was appended; True if any line was read (or the file started over)."""
        info = os.stat(self.path)
        identity = (info.st_dev, info.st_ino)
        restarted = not self._same_file(identity, info.st_size)
        if restarted:
            self._restart(identity)
        if info.st_size == self.cursor:
            return restarted
        reader = TranscriptReader(self.path, start=self.cursor, complete_lines_only=True)
        before = self.stats.lines
        rows = ((before + number, obj) for number, _raw, obj in reader.raw_lines())
        for entry in merged_entries(rows, self.stats, self._replies):
            self.figures.add(entry)
        self.stats.lines += reader.stats.lines
        self.stats.malformed += reader.stats.malformed
        read = reader.end > self.cursor
        self.cursor = reader.end
        return restarted or read

    def meter(self) -> ContextMeter:
        return self.figures.meter(str(self.path), self.window_override)
