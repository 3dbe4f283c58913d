"""Endless mode's transform layer: heavy tool results replaced by observations, in memory.

``transform(messages)`` takes transcript message objects (parsed JSONL lines) and returns a
new list; the input objects are never modified (changed messages are copied, the rest are the
same objects). The N newest tool uses stay whole. Each replaced result says, in one line, its
original size and how to get it back. Stored observations (from the PostToolUse hook) are looked
up in one batch under a time limit; missing ones are built on the fly from the transcript.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

from ..models import Observation
from ..tokens import fast_count
from .observe import DEFAULT_MAX_TOKENS, build_observation
from .walk import ToolCall, ToolIndex, tool_calls

Lookup = Callable[[list[str]], dict[str, Observation]]
MARKER = "[endless-mode"


@dataclass
class TransformOptions:
    keep_recent: int = 0
    fallback: bool = True  # an observation that cannot be had keeps the original
    timeout_ms: int = 500
    max_tokens: int = DEFAULT_MAX_TOKENS
    #: tools whose results are never replaced (e.g. {"TodoWrite"})
    keep_tools: frozenset[str] = frozenset()


@dataclass
class ToolStats:
    results: int = 0
    replaced: int = 0
    tokens_before: int = 0
    tokens_after: int = 0


@dataclass
class TransformStats:
    per_tool: dict[str, ToolStats] = field(default_factory=dict)
    replaced: int = 0
    kept_recent: int = 0
    kept_small: int = 0
    fallbacks: int = 0
    from_store: int = 0
    built: int = 0
    elapsed_ms: float = 0.0
    #: tokens saved per replaced tool_use_id (for curves over the session)
    saved: dict[str, int] = field(default_factory=dict)

    @property
    def tokens_before(self) -> int:
        return sum(s.tokens_before for s in self.per_tool.values())

    @property
    def tokens_after(self) -> int:
        return sum(s.tokens_after for s in self.per_tool.values())


def replacement_text(obs: Observation, original_tokens: int) -> str:
    """One line saying what this is, how big the original was and how to get it back, then the
    observation. Kept short: it is paid for on every replaced result."""
    return f"{MARKER}: {original_tokens:,} tokens; `expand {obs.tool_use_id}`]\n{obs.text}"


def _lookup_with_timeout(lookup: Lookup | None, ids: list[str], timeout_ms: int) -> dict[str, Observation]:
    if lookup is None or not ids:
        return {}
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(lookup, ids)
    try:
        return future.result(timeout=timeout_ms / 1000)
    except (FutureTimeout, Exception):
        return {}
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def transform(
    messages: list[dict[str, Any]], lookup: Lookup | None = None, options: TransformOptions | None = None
) -> tuple[list[dict[str, Any]], TransformStats]:
    started = time.perf_counter()
    opts = options or TransformOptions()
    stats = TransformStats()
    uses = ToolIndex.of_lines(messages)  # all of them first: the newest N stay whole
    order = list(uses.uses)
    recent = set(order[-opts.keep_recent :]) if opts.keep_recent > 0 else set()
    by_line: dict[int, list[ToolCall]] = {}
    for found in tool_calls(enumerate(messages), index=uses):
        by_line.setdefault(found.line, []).append(found)

    candidates = [
        tid
        for calls in by_line.values()
        for tid in (c.result.tool_use_id for c in calls)
        if tid not in recent and uses.name(tid) not in opts.keep_tools
    ]
    stored = _lookup_with_timeout(lookup, candidates, opts.timeout_ms)

    out: list[dict[str, Any]] = []
    for number, msg in enumerate(messages):
        calls = by_line.get(number)
        if not calls:
            out.append(msg)
            continue
        pending = iter(calls)
        call: ToolCall | None = next(pending)
        new_content: list[Any] = []
        changed = False
        for block in msg["message"]["content"]:  # the results in order, other blocks as they are
            if call is None or block is not call.block:
                new_content.append(block)
                continue
            replaced = _replace(call, recent, stored, opts, stats)
            changed |= replaced is not block
            new_content.append(replaced)
            call = next(pending, None)
        if changed:
            copy = dict(msg)
            copy["message"] = {**msg["message"], "content": new_content}
            out.append(copy)
        else:
            out.append(msg)
    stats.elapsed_ms = (time.perf_counter() - started) * 1000
    return out, stats


def _replace(
    call: ToolCall,
    recent: set[str],
    stored: dict[str, Observation],
    opts: TransformOptions,
    stats: TransformStats,
) -> dict[str, Any]:
    block = call.block
    tid = call.result.tool_use_id
    name, tool_input = (call.use.name, call.use.input) if call.use else ("unknown", {})
    text = call.result.text()
    before = fast_count(text)
    tool = stats.per_tool.setdefault(name, ToolStats())
    tool.results += 1
    tool.tokens_before += before
    keep = block
    if tid in recent:
        stats.kept_recent += 1
    elif name in opts.keep_tools or text.startswith(MARKER):
        pass
    else:
        obs = stored.get(tid)
        if obs is not None:
            stats.from_store += 1
        else:
            try:
                obs = build_observation(
                    tid,
                    name,
                    tool_input,
                    text,
                    is_error=call.result.is_error,
                    max_tokens=opts.max_tokens,
                    original_tokens=before,
                )
                stats.built += 1
            except Exception:
                obs = None
                stats.fallbacks += 1
        if obs is not None:
            new_text = replacement_text(obs, before)
            after = fast_count(new_text)
            if after < before:
                keep = {**block, "content": new_text}
                stats.replaced += 1
                tool.replaced += 1
                tool.tokens_after += after
                stats.saved[tid] = before - after
                return keep
            stats.kept_small += 1
        elif not opts.fallback:
            keep = {**block, "content": f"{MARKER}: {name} output of {before:,} tokens omitted]"}
            after = fast_count(str(keep["content"]))
            tool.tokens_after += after
            stats.saved[tid] = before - after
            return keep
    tool.tokens_after += before
    return keep
