"""The one walk over a transcript's tool calls: each ``tool_result`` paired with the
``tool_use`` it answers, by ``tool_use_id``.

Tool uses sit in assistant lines, their results in later user lines; sidechain lines
(``isSidechain``) are a subagent's own calls, which the meter and the context curve leave out.
Code that must hand back the very objects it read (the transform, ``compress``, ``expand``) walks
raw line objects with ``tool_calls``; the meter walks typed entries. Both pair through one
``ToolIndex``, so a result finds its use the same way everywhere.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from .reader import (
    RECENT_REPLIES,
    AssistantEntry,
    ToolResult,
    ToolUse,
    message_blocks,
    tool_result_from,
    tool_use_from,
)

#: which lines a walk looks at: the main chain, the subagents' sidechains, or both
Chain = Literal["main", "sidechain", "all"]


def on_chain(obj: dict[str, Any], chain: Chain) -> bool:
    if chain == "all":
        return True
    return bool(obj.get("isSidechain")) == (chain == "sidechain")


def tool_uses_in(obj: dict[str, Any]) -> list[ToolUse]:
    """The tool uses of a raw line ([] unless it is an assistant line)."""
    if obj.get("type") != "assistant":
        return []
    return [tool_use_from(b) for b in message_blocks(obj) if b.get("type") == "tool_use"]


def tool_results_in(obj: dict[str, Any]) -> list[tuple[dict[str, Any], ToolResult]]:
    """The tool results of a raw line, each with its raw block ([] unless it is a user line)."""
    if obj.get("type") != "user":
        return []
    extra = obj.get("toolUseResult")
    extra = extra if isinstance(extra, dict) else None
    return [(b, tool_result_from(b, extra)) for b in message_blocks(obj) if b.get("type") == "tool_result"]


class ToolIndex:
    """Tool uses by id, in the order they were first made.

    Typed entries need one more step: the reader yields a reply at its first line and folds its
    later lines (more parallel tool uses) into that same entry afterwards, so a miss looks
    through the last replies seen again."""

    def __init__(self) -> None:
        self.uses: dict[str, ToolUse] = {}
        self._replies: deque[AssistantEntry] = deque(maxlen=RECENT_REPLIES)

    @classmethod
    def of_lines(cls, objects: Iterable[dict[str, Any]], chain: Chain = "all") -> ToolIndex:
        index = cls()
        for obj in objects:
            if on_chain(obj, chain):
                index.add_line(obj)
        return index

    def add(self, use: ToolUse) -> None:
        self.uses[use.id] = use

    def add_line(self, obj: dict[str, Any]) -> list[ToolUse]:
        """Index a raw line's tool uses; returns them."""
        uses = tool_uses_in(obj)
        for use in uses:
            self.add(use)
        return uses

    def add_reply(self, entry: AssistantEntry) -> None:
        """Index a typed reply's tool uses, and keep it for the ones folded into it later."""
        self._replies.append(entry)
        for use in entry.tool_uses:
            self.add(use)

    def get(self, tool_use_id: str) -> ToolUse | None:
        if tool_use_id not in self.uses:
            for reply in reversed(self._replies):
                for use in reply.tool_uses:
                    self.uses.setdefault(use.id, use)
        return self.uses.get(tool_use_id)

    def name(self, tool_use_id: str, default: str = "unknown") -> str:
        use = self.get(tool_use_id)
        return default if use is None else use.name


@dataclass
class ToolCall:
    """A tool result and the use it answers (None when that use was not in what was walked)."""

    line: int
    sidechain: bool
    block: dict[str, Any]  # the raw tool_result block, for code that rewrites it
    result: ToolResult
    use: ToolUse | None


def tool_calls(
    rows: Iterable[tuple[int, dict[str, Any]]], chain: Chain = "all", index: ToolIndex | None = None
) -> Iterator[ToolCall]:
    """Every tool result of the raw lines given (line number, object), in order, paired with the
    use made before it. Pass ``index`` to see the uses after the walk (or to start from uses
    already known, e.g. all of a file's, when a later use matters)."""
    index = ToolIndex() if index is None else index
    for line, obj in rows:
        if not on_chain(obj, chain):
            continue
        index.add_line(obj)
        sidechain = bool(obj.get("isSidechain"))
        for block, result in tool_results_in(obj):
            yield ToolCall(line, sidechain, block, result, index.get(result.tool_use_id))
