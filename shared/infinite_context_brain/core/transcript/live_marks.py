"""Cache breakpoints in a Messages API request: find, hold, move (the live transform's part).

A *spot* names one content block of ``messages`` by its place and what is in it, so a spot kept
from one request is found again in the next (Claude Code resends the history unchanged) and is
dropped when the client rewrote that history. Breakpoints are only ever put on user blocks that
can carry one (never on assistant blocks: their thinking signatures stay as sent).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from .cache_rules import LONG_TTL, MAX_BREAKPOINTS, block_markers

#: block types that can carry a cache breakpoint (not thinking, not empty text)
CACHEABLE = frozenset({"text", "tool_result", "image", "document", "search_result"})


@dataclass(frozen=True)
class Spot:
    message: int
    index: int
    print: bytes  # what the block holds: a tool_result's id, else a digest of its text


def fingerprint(block: dict[str, Any]) -> bytes:
    if block.get("type") == "tool_result":
        return str(block.get("tool_use_id")).encode()
    text = block.get("text")
    return hashlib.blake2b(str(text).encode(), digest_size=8).digest()


def block_at(messages: list[Any], spot: Spot) -> dict[str, Any] | None:
    """The block a spot names in this request, or None when it is not there any more."""
    if not 0 <= spot.message < len(messages):
        return None
    message = messages[spot.message]
    if not isinstance(message, dict) or message.get("role") != "user":
        return None
    content = message.get("content")
    if not isinstance(content, list) or not 0 <= spot.index < len(content):
        return None
    block = content[spot.index]
    return block if isinstance(block, dict) and fingerprint(block) == spot.print else None


def _cacheable(block: Any) -> bool:
    return (
        isinstance(block, dict)
        and block.get("type") in CACHEABLE
        and (block.get("type") != "text" or bool(block.get("text")))
    )


def user_spot_before(messages: list[Any], message: int, index: int) -> Spot | None:
    """The last user block that can carry a breakpoint before block ``index`` of ``message``."""
    for m in range(message, -1, -1):
        item = messages[m]
        if (
            not isinstance(item, dict)
            or item.get("role") != "user"
            or not isinstance(item.get("content"), list)
        ):
            continue
        content = item["content"]
        start = index - 1 if m == message else len(content) - 1
        for i in range(start, -1, -1):
            if _cacheable(content[i]):
                return Spot(m, i, fingerprint(content[i]))
    return None


def count_markers(body: dict[str, Any]) -> int:
    """Breakpoints the client put anywhere in the request (tools, system, messages)."""
    return len(_all_markers(body))


def last_message_mark(messages: list[Any]) -> Spot | None:
    """Where the last breakpoint among the messages sits (None: none there, or on an assistant
    block, which this module never moves)."""
    for m in range(len(messages) - 1, -1, -1):
        item = messages[m]
        if not isinstance(item, dict) or not isinstance(item.get("content"), list):
            continue
        for i in range(len(item["content"]) - 1, -1, -1):
            block = item["content"][i]
            if block_markers(block):
                if item.get("role") != "user" or not isinstance(block, dict):
                    return None
                return Spot(m, i, fingerprint(block))
    return None


def _all_markers(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every block of the request that carries a breakpoint, in cache order."""
    carriers: list[dict[str, Any]] = []

    def visit(block: Any) -> None:
        if not isinstance(block, dict):
            return
        if "cache_control" in block:
            carriers.append(block)
        content = block.get("content")
        if isinstance(content, list):
            carriers.extend(b for b in content if isinstance(b, dict) and "cache_control" in b)

    for tool in body.get("tools") or []:
        visit(tool)
    system = body.get("system")
    for part in system if isinstance(system, list) else []:
        visit(part)
    for message in body.get("messages") or []:
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            for block in message["content"]:
                visit(block)
    return carriers


def lengthen(body: dict[str, Any]) -> bool:
    """Ask for the 1-hour lifetime on every breakpoint of the request (all of them, since a longer
    lifetime may not follow a shorter one). False, changing nothing, when there are none or the
    client gave any of them a lifetime itself (its choice stands)."""
    carriers = _all_markers(body)
    markers = [c["cache_control"] for c in carriers]
    if not markers or any(
        not isinstance(m, dict) or m.get("type") != "ephemeral" or "ttl" in m for m in markers
    ):
        return False
    for carrier in carriers:
        carrier["cache_control"] = {**carrier["cache_control"], "ttl": LONG_TTL}
    return True


def spare(body: dict[str, Any]) -> int:
    """Breakpoints the request may still take; 0 when the client sent none (it asked for no
    caching, and gets none)."""
    used = count_markers(body)
    return MAX_BREAKPOINTS - used if used else 0


def _take_markers(block: dict[str, Any]) -> Any:
    """Remove the block's markers (its own and its content blocks'); returns the last one."""
    found = block_markers(block)
    block.pop("cache_control", None)
    content = block.get("content")
    if isinstance(content, list):
        for inner in content:
            if isinstance(inner, dict):
                inner.pop("cache_control", None)
    return found[-1] if found else None


def move_last_mark(messages: list[Any], to: Spot) -> bool:
    """Move the client's last message breakpoint back onto ``to``: what follows is sent as plain
    input (billed once) instead of being written to the cache. False when the last breakpoint is
    not on a user block after ``to``, or a breakpoint sits between them (moving it past one could
    put a shorter lifetime before a longer one)."""
    last = last_message_mark(messages)
    target = block_at(messages, to)
    if last is None or target is None or (last.message, last.index) <= (to.message, to.index):
        return False
    for m in range(to.message, last.message + 1):
        content = messages[m].get("content") if isinstance(messages[m], dict) else None
        if not isinstance(content, list):
            continue
        lo = to.index + 1 if m == to.message else 0
        hi = last.index if m == last.message else len(content)
        if any(block_markers(b) for b in content[lo:hi]):
            return False
    source = block_at(messages, last)
    if source is None or block_markers(target):
        return False
    target["cache_control"] = _take_markers(source)
    return True


def add_mark(messages: list[Any], at: Spot, like: Any) -> bool:
    """Put a breakpoint (a copy of marker ``like``) on the block ``at`` names; False when it is
    gone or holds one already."""
    target = block_at(messages, at)
    if target is None or block_markers(target) or like is None:
        return False
    target["cache_control"] = dict(like) if isinstance(like, dict) else like
    return True


def marker_after(messages: list[Any], at: Spot) -> Any:
    """The first breakpoint marker after ``at`` among the messages (the one a new breakpoint
    copies, so lifetimes never grow along the request)."""
    for m in range(at.message, len(messages)):
        item = messages[m]
        if not isinstance(item, dict) or not isinstance(item.get("content"), list):
            continue
        start = at.index + 1 if m == at.message else 0
        for block in item["content"][start:]:
            found = block_markers(block)
            if found:
                return found[0]
    return None
