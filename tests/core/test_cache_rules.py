"""The provider's prompt-cache rules (``cache_rules.PromptCache``) on hand-made requests: an
entry only where a breakpoint was, the 20-block lookback, the lifetime (5 minutes, 1 hour, a read
refreshes it), at most four breakpoints, the documented billing positions for mixed lifetimes."""

from __future__ import annotations

from typing import Any

from infinite_context_brain.core.transcript.cache_rules import (
    LOOKBACK_BLOCKS,
    MIN_CACHEABLE_TOKENS,
    Bill,
    Block,
    PromptCache,
    request_blocks,
)

TOKENS = 100  # every hand-made block
MARK = {"type": "ephemeral"}
MARK_1H = {"type": "ephemeral", "ttl": "1h"}


def body(blocks: int, marks: dict[int, dict[str, Any]], changed: int | None = None) -> dict[str, Any]:
    """A request of a system prompt (2,000 tokens) and ``blocks`` user text blocks; ``marks``: a
    breakpoint on block i; ``changed``: block i says something else."""
    content: list[dict[str, Any]] = []
    for i in range(blocks):
        block: dict[str, Any] = {"type": "text", "text": f"block {i}" + (" (edited)" if i == changed else "")}
        if i in marks:
            block["cache_control"] = marks[i]
        content.append(block)
    return {
        "system": [{"type": "text", "text": "system", "cache_control": MARK}],
        "messages": [{"role": "user", "content": content}],
    }


def blocks_of(request: dict[str, Any]) -> list[Block]:
    found = request_blocks(request, lambda _key: TOKENS)
    system = found[0]
    return [Block(system.key, 2_000, system.ttl), *found[1:]]


def send(cache: PromptCache, request: dict[str, Any], at: float) -> Bill:
    return cache.send(blocks_of(request), at)


def test_a_request_extending_the_last_one_reads_what_it_cached() -> None:
    cache = PromptCache()
    first = send(cache, body(10, {9: MARK}), 0)
    assert (first.read, first.write_5m, first.plain) == (0, 2_000 + 10 * TOKENS, 0)
    second = send(cache, body(12, {11: MARK}), 10)
    assert (second.read, second.write_5m) == (2_000 + 10 * TOKENS, 2 * TOKENS)
    assert second.cost == 0.1 * second.read + 1.25 * second.write_5m


def test_entries_exist_only_at_breakpoints() -> None:
    """Block 5 was sent but never marked: a request that changes block 6 finds nothing there, only
    the system prompt's entry."""
    cache = PromptCache()
    send(cache, body(10, {9: MARK}), 0)
    edited = send(cache, body(10, {9: MARK}, changed=6), 10)
    assert edited.read == 2_000 and edited.write_5m == 10 * TOKENS


def test_a_held_breakpoint_keeps_the_prefix_before_a_change() -> None:
    cache = PromptCache()
    send(cache, body(10, {4: MARK, 9: MARK}), 0)
    edited = send(cache, body(10, {4: MARK, 9: MARK}, changed=6), 10)
    assert edited.read == 2_000 + 5 * TOKENS and edited.write_5m == 5 * TOKENS


def test_the_lookback_reaches_twenty_blocks_and_no_further() -> None:
    cache = PromptCache()
    send(cache, body(10, {9: MARK}), 0)
    near = send(cache, body(10 + LOOKBACK_BLOCKS, {9 + LOOKBACK_BLOCKS: MARK}), 1)
    assert near.read == 2_000 + 10 * TOKENS  # the entry 20 blocks back is found
    cache = PromptCache()
    send(cache, body(10, {9: MARK}), 0)
    far = send(cache, body(11 + LOOKBACK_BLOCKS, {10 + LOOKBACK_BLOCKS: MARK}), 1)
    assert far.read == 2_000 and far.write_5m == (11 + LOOKBACK_BLOCKS) * TOKENS  # 21 back: a miss


def test_entries_expire_after_their_lifetime_and_a_read_refreshes_them() -> None:
    cache = PromptCache()
    send(cache, body(10, {9: MARK}), 0)
    assert send(cache, body(10, {9: MARK}), 299).read == 2_000 + 10 * TOKENS  # read: refreshed at 299
    assert send(cache, body(10, {9: MARK}), 598).read == 2_000 + 10 * TOKENS
    expired = send(cache, body(10, {9: MARK}), 598 + 301)
    assert expired.read == 0 and expired.write_5m == 2_000 + 10 * TOKENS
    cache = PromptCache()
    system_hour = body(10, {9: MARK_1H})
    system_hour["system"][0]["cache_control"] = MARK_1H
    send(cache, system_hour, 0)
    assert send(cache, system_hour, 3000).read == 2_000 + 10 * TOKENS  # 50 minutes: alive
    assert send(cache, system_hour, 3000 + 3601).read == 0


def test_more_than_four_breakpoints_or_a_longer_lifetime_after_a_shorter_is_refused() -> None:
    cache = PromptCache()
    four = send(cache, body(10, {2: MARK, 5: MARK, 9: MARK}), 0)
    assert four.refused is None and four.tokens == 2_000 + 10 * TOKENS
    five = send(cache, body(10, {2: MARK, 5: MARK, 7: MARK, 9: MARK}), 1)
    assert five.refused and five.cost == 0
    assert send(cache, body(10, {9: MARK}), 2).read == 2_000 + 10 * TOKENS  # the refused one cached nothing
    assert send(cache, body(10, {9: MARK_1H}), 3).refused  # 1 hour after the system's 5 minutes


def test_mixed_lifetimes_bill_at_the_documented_positions() -> None:
    """A: the longest hit; B: the last 1-hour breakpoint after it; C: the last breakpoint. A is
    read, A..B written at the 1-hour price, B..C at the 5-minute price, the rest plain."""
    cache = PromptCache()
    request = body(10, {4: MARK_1H, 7: MARK})
    request["system"][0]["cache_control"] = MARK_1H
    bill = send(cache, request, 0)
    assert (bill.read, bill.write_1h, bill.write_5m, bill.plain) == (
        0,
        2_000 + 5 * TOKENS,
        3 * TOKENS,
        2 * TOKENS,
    )
    assert bill.cost == 2.0 * bill.write_1h + 1.25 * bill.write_5m + bill.plain


def test_a_prefix_below_the_minimum_is_not_cached() -> None:
    cache = PromptCache()
    tiny = [Block(b"a", MIN_CACHEABLE_TOKENS - 1, 300.0)]
    send_first = cache.send(tiny, 0)
    assert send_first.write_5m == MIN_CACHEABLE_TOKENS - 1  # billed as a write, yet kept nowhere
    assert cache.send(tiny, 1).read == 0


def test_markers_are_not_part_of_what_is_compared() -> None:
    cache = PromptCache()
    send(cache, body(10, {9: MARK}), 0)
    moved = body(12, {9: MARK_1H, 11: MARK})  # the same block, another marker
    moved["system"][0]["cache_control"] = MARK_1H
    assert send(cache, moved, 1).read == 2_000 + 10 * TOKENS
