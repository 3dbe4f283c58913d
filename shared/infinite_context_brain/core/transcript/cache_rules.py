"""The provider's prompt-cache rules, as Anthropic documents them, in one model.

What a Messages API request is billed for its input (multiples of the base input price):

* A request is a list of blocks in cache order: ``tools``, ``system``, then every content block of
  ``messages``. A block with ``cache_control`` is a *breakpoint*; a request may carry at most
  ``MAX_BREAKPOINTS``, and a 1-hour one may not follow a 5-minute one (the API refuses either).
* An entry is written only at a breakpoint, for the prefix up to and including that block (when
  the prefix is at least ``MIN_CACHEABLE_TOKENS``), with the breakpoint's lifetime: 5 minutes, or
  1 hour with ``"ttl": "1h"``. Reading an entry refreshes its lifetime at no cost.
* For each breakpoint the provider looks for an entry at that block and at the block boundaries
  before it, up to ``LOOKBACK_BLOCKS`` back; the longest prefix found among all breakpoints is
  read (``A``). Content further back than that from every breakpoint is never found.
* Billing (the documented three positions): ``A`` tokens read at ``PRICE_READ``; from ``A`` to
  the last 1-hour breakpoint after it (``B``) written at the 1-hour price; from ``B`` to the last
  breakpoint (``C``) at the 5-minute price; everything after ``C`` as plain input.
* Entries are compared byte for byte without the ``cache_control`` markers themselves.

Not modelled: per-model minimums other than 1,024 tokens, and the thinking blocks the provider
drops when a non-tool-result user turn follows them (Claude Code asks to keep them all).

``PromptCache`` bills a sequence of requests by these rules (the benchmark, and the tests of the
rules); ``LOOKBACK_BLOCKS``, the prices and the lifetimes also drive the live transform's choices.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import orjson

PRICE_READ = 0.1
PRICE_WRITE_5M = 1.25
PRICE_WRITE_1H = 2.0
TTL_5M = 300.0
TTL_1H = 3600.0
LOOKBACK_BLOCKS = 20
MAX_BREAKPOINTS = 4
MIN_CACHEABLE_TOKENS = 1024
#: the ``cache_control.ttl`` of a 1-hour breakpoint
LONG_TTL = "1h"


def marker_ttl(marker: Any) -> float:
    """The lifetime a ``cache_control`` marker asks for, in seconds."""
    return TTL_1H if isinstance(marker, dict) and marker.get("ttl") == LONG_TTL else TTL_5M


def block_markers(block: Any) -> list[Any]:
    """A block's cache markers: its own, then those of its content blocks (a tool_result's)."""
    if not isinstance(block, dict):
        return []
    found = [block["cache_control"]] if "cache_control" in block else []
    content = block.get("content")
    if isinstance(content, list):
        found += [b["cache_control"] for b in content if isinstance(b, dict) and "cache_control" in b]
    return found


def without_markers(value: Any) -> Any:
    """A copy without ``cache_control`` keys: what the provider's prefix cache compares."""
    if isinstance(value, dict):
        return {k: without_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_markers(v) for v in value]
    return value


@dataclass(frozen=True)
class Block:
    """One block of a request as the cache sees it."""

    key: bytes  # its content without markers (with its place: section, message index, role)
    tokens: int
    ttl: float | None = None  # a breakpoint's lifetime; None: no breakpoint


def request_blocks(body: dict[str, Any], tokens: Callable[[bytes], int]) -> list[Block]:
    """The blocks of a request body in cache order (tools, system, messages); ``tokens`` sizes a
    block from its bytes."""

    def of(section: str, index: int, role: Any, block: Any) -> Block:
        markers = block_markers(block)
        key = orjson.dumps([section, index, role, without_markers(block)])
        return Block(key, tokens(key), marker_ttl(markers[-1]) if markers else None)

    blocks: list[Block] = []
    for i, tool in enumerate(body.get("tools") or []):
        blocks.append(of("tools", i, None, tool))
    system = body.get("system")
    for i, part in enumerate(system if isinstance(system, list) else [system] if system else []):
        blocks.append(of("system", i, None, part))
    for i, message in enumerate(body.get("messages") or []):
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        for part in content if isinstance(content, list) else [content]:
            blocks.append(of("messages", i, message.get("role"), part))
    return blocks


@dataclass
class Bill:
    """One request's input tokens by how they were billed."""

    read: int = 0
    write_5m: int = 0
    write_1h: int = 0
    plain: int = 0
    #: the request was refused (e.g. more than four breakpoints): nothing billed, nothing cached
    refused: str | None = None

    @property
    def cost(self) -> float:
        """In base-input-price tokens."""
        return (
            PRICE_READ * self.read
            + PRICE_WRITE_5M * self.write_5m
            + PRICE_WRITE_1H * self.write_1h
            + self.plain
        )

    @property
    def tokens(self) -> int:
        return self.read + self.write_5m + self.write_1h + self.plain

    def add(self, other: Bill) -> None:
        self.read += other.read
        self.write_5m += other.write_5m
        self.write_1h += other.write_1h
        self.plain += other.plain


@dataclass
class PromptCache:
    """One organisation's cache: entries by prefix digest, each with its expiry and lifetime."""

    entries: dict[bytes, tuple[float, float]] = field(default_factory=dict)

    def send(self, blocks: list[Block], now: float) -> Bill:
        """Bill a request sent at ``now`` (seconds) and update the entries as the provider does."""
        marks = [i for i, b in enumerate(blocks) if b.ttl is not None]
        if len(marks) > MAX_BREAKPOINTS:
            return Bill(refused=f"{len(marks)} cache_control blocks (at most {MAX_BREAKPOINTS})")
        lifetimes = [blocks[m].ttl or TTL_5M for m in marks]
        if any(a < b for a, b in pairwise(lifetimes)):
            return Bill(refused="a 1-hour cache_control block after a 5-minute one")
        digests: list[bytes] = []
        sums: list[int] = []
        state = hashlib.blake2b(digest_size=16)
        total = 0
        for block in blocks:
            state.update(hashlib.blake2b(block.key, digest_size=16).digest())
            digests.append(state.copy().digest())
            total += block.tokens
            sums.append(total)
        hit = -1
        for mark in marks:
            for j in range(mark, max(-1, mark - LOOKBACK_BLOCKS - 1), -1):
                entry = self.entries.get(digests[j])
                if entry is not None and entry[0] >= now:
                    self.entries[digests[j]] = (now + entry[1], entry[1])  # a read refreshes it
                    hit = max(hit, j)
                    break
        read = sums[hit] if hit >= 0 else 0
        if not marks:
            return Bill(read=0, plain=total)
        last = marks[-1]
        long_marks = [m for m in marks if m > hit and blocks[m].ttl == TTL_1H]
        one_hour_end = sums[long_marks[-1]] if long_marks else read
        for mark in marks:
            if mark > hit and sums[mark] >= MIN_CACHEABLE_TOKENS:
                ttl = blocks[mark].ttl or TTL_5M
                self.entries[digests[mark]] = (now + ttl, ttl)
        end = max(sums[last], read)
        return Bill(
            read=read,
            write_1h=max(0, one_hour_end - read),
            write_5m=max(0, end - max(one_hour_end, read)),
            plain=total - end,
        )
