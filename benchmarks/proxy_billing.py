"""What a replayed session's requests are billed for their input, three ways (``proxy_bench``):

* **The provider's rules** (``core.transcript.cache_rules.PromptCache``): entries only at
  breakpoints, the 20-block lookback, each request at its own time against the 5-minute / 1-hour
  lifetimes, at most four breakpoints.
* **The old model** (what this benchmark used before, kept beside the rules until it is dropped):
  a request reads from the cache every block it shares with what the previous request cached, at
  any block boundary, whatever the time between them.
* **The provider's server-side context editing** (``clear_tool_uses_20250919``), simulated on the
  requests as Claude Code sends them, then billed by the rules: once a request passes ``trigger``
  input tokens, the results of all but the last ``keep`` tool uses become a placeholder. Without
  ``clear_at_least`` that happens on every such request, so the cleared set grows each time. With
  it, a clearing is applied only when it clears at least that many tokens more than the one in
  force, which stays until then (the docs: clear enough "to make the cache invalidation
  worthwhile"; "subsequent requests can reuse the newly cached prefix"): how the server keeps its
  clearing between steps is not documented, this is the reading that lets the cache work.

Tokens are estimated the same way on every side: bytes / 3.1 x 1.14 (the context meter's
calibration) per block, tool results by the core's counter; ``tools`` and ``system`` together are
a fixed ``OVERHEAD_TOKENS`` (Claude Code 2.1 sends ~18-21k).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from infinite_context_brain.core.tokens import fast_count
from infinite_context_brain.core.transcript.cache_rules import (
    PRICE_READ,
    PRICE_WRITE_5M,
    Bill,
    Block,
    PromptCache,
    block_markers,
    request_blocks,
    without_markers,
)
from infinite_context_brain.core.transcript.reader import content_text

OVERHEAD_TOKENS = 18_000
CALIBRATION = 1.14
PLACEHOLDER = "[cleared]"


def block_tokens(key: bytes) -> int:
    return int(len(key) / 3.1 * CALIBRATION)


def blocks_of(body: dict[str, Any]) -> list[Block]:
    """The request's blocks for the rules, ``tools`` and ``system`` sized as ``OVERHEAD_TOKENS``."""
    blocks = request_blocks(body, block_tokens)
    head = len(body.get("tools") or []) + len(body.get("system") or [])
    for i in range(head):
        blocks[i] = Block(blocks[i].key, 0, blocks[i].ttl)
    if head:
        blocks[head - 1] = Block(blocks[head - 1].key, OVERHEAD_TOKENS, blocks[head - 1].ttl)
    return blocks


def bill_by_rules(bodies: list[bytes], times: list[float]) -> tuple[Bill, int]:
    """The session's input billed by the provider's rules; and how many requests it would refuse."""
    cache = PromptCache()
    total = Bill()
    refused = 0
    for at, raw in zip(times, bodies, strict=True):
        bill = cache.send(blocks_of(orjson.loads(raw)), at)
        refused += bill.refused is not None
        total.add(bill)
    return total, refused


def bill_old_model(bodies: list[bytes]) -> Bill:
    """The model this benchmark used before: any block shared with what the previous request
    cached is read, at any distance and any age."""
    total = Bill()
    previous: list[bytes] = []
    cached_before = 0
    for number, raw in enumerate(bodies):
        body = orjson.loads(raw)
        blocks: list[bytes] = []
        cached = 0
        for i, message in enumerate(body.get("messages") or []):
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else [content]:
                blocks.append(orjson.dumps([i, message.get("role"), without_markers(block)]))
                if block_markers(block):
                    cached = len(blocks)
        sizes = [block_tokens(b) for b in blocks]
        shared = 0
        for a, b in zip(previous[:cached_before], blocks, strict=False):
            if a != b:
                break
            shared += 1
        shared = min(shared, cached)
        head = Bill(write_5m=OVERHEAD_TOKENS) if number == 0 else Bill(read=OVERHEAD_TOKENS)
        total.add(head)
        total.add(
            Bill(
                read=sum(sizes[:shared]),
                write_5m=sum(sizes[shared:cached]),
                plain=sum(sizes[max(shared, cached) :]),
            )
        )
        previous, cached_before = blocks, cached
    return total


@dataclass
class Clearing:
    """The server-side context editing of one conversation."""

    trigger: int = 100_000
    keep: int = 3
    clear_at_least: int | None = None
    cleared: set[str] = field(default_factory=set)

    def edit(self, raw: bytes) -> bytes:
        body = orjson.loads(raw)
        blocks = blocks_of(body)
        if sum(b.tokens for b in blocks) <= self.trigger:
            return raw
        results = {
            b["tool_use_id"]: b
            for m in body["messages"]
            if m.get("role") == "user" and isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        }
        uses = [
            b["id"]
            for m in body["messages"]
            if m.get("role") == "assistant" and isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
        wanted = {tid for tid in uses[: max(0, len(uses) - self.keep)] if tid in results}
        if self.clear_at_least is None:
            self.cleared = wanted
        else:
            more = sum(fast_count(content_text(results[t].get("content"))) for t in wanted - self.cleared)
            if more >= self.clear_at_least:
                self.cleared = wanted
        for tid in self.cleared:
            block = results.get(tid)
            if block is not None:
                marker = block_markers(block)
                block["content"] = PLACEHOLDER
                if marker:
                    block["cache_control"] = marker[-1]
        return orjson.dumps(body)


def context_edited(bodies: list[bytes], clear_at_least: int | None = None) -> list[bytes]:
    clearing = Clearing(clear_at_least=clear_at_least)
    return [clearing.edit(raw) for raw in bodies]


def tool_tokens(raw: bytes) -> int:
    return sum(
        fast_count(content_text(b.get("content")))
        for m in orjson.loads(raw).get("messages") or []
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    )


def price_note() -> str:
    return f"read {PRICE_READ}, write {PRICE_WRITE_5M} (5 min) / 2.0 (1 h), plain 1"
