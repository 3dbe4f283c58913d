"""Streaming reader of Claude Code transcript JSONL files.

Facts it relies on (no official schema exists; they hold for Claude Code 2.1.x):
* one JSON object a line; ``type`` is user / assistant / system / progress / summary /
  file-history-snapshot / queue-operation, and new types appear: unknown ones are counted and
  skipped, malformed lines are counted, never fatal;
* an assistant reply is split over several lines (one per content block) that repeat the same
  ``message.id`` and ``usage``; the reader merges them into one ``AssistantEntry``;
* ``tool_use`` blocks sit in assistant lines, ``tool_result`` blocks in user lines;
* compaction writes a ``system``/``compact_boundary`` line then a ``user`` line with
  ``isCompactSummary``; sidechain lines (``isSidechain``) belong to subagents;
* a prompt typed while the assistant works is delivered mid-turn and recorded only as a
  ``queue-operation`` ``enqueue`` line (newer versions add a ``queued_command`` attachment): it
  is read as a (queued) user entry;
* very large tool results may live in ``<transcript stem>/tool-results/<tool_use_id>.txt``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .window import CONTEXT_PARTS, count_of

KNOWN_SKIPPED = {"progress", "file-history-snapshot", "queue-operation"}
RECENT_REPLIES = 64


@dataclass
class ToolUse:
    id: str
    name: str
    input: dict[str, Any]


@dataclass
class ToolResult:
    tool_use_id: str
    content: Any  # str or a list of content blocks, as written
    is_error: bool = False
    extra: dict[str, Any] | None = None  # Claude Code's toolUseResult object

    def text(self) -> str:
        return content_text(self.content)


@dataclass
class Usage:
    input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int = 0

    @property
    def context_tokens(self) -> int:
        return sum(getattr(self, part) for part in CONTEXT_PARTS)


@dataclass
class AssistantEntry:
    line: int
    uuid: str
    message_id: str
    model: str
    is_sidechain: bool
    usage: Usage
    texts: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    tool_uses: list[ToolUse] = field(default_factory=list)
    timestamp: str = ""
    cwd: str = ""
    git_branch: str = ""
    #: the session's name (Claude Code names its plan file after it: ``~/.claude/plans/<slug>.md``)
    slug: str = ""
    kind: str = "assistant"


@dataclass
class UserEntry:
    line: int
    uuid: str
    is_sidechain: bool
    texts: list[str] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    is_compact_summary: bool = False
    is_meta: bool = False
    timestamp: str = ""
    cwd: str = ""
    git_branch: str = ""
    #: typed while the assistant was busy: Claude Code records it only as a queue operation
    queued: bool = False
    kind: str = "user"


@dataclass
class SystemEntry:
    line: int
    uuid: str
    subtype: str
    compact_trigger: str | None = None
    compact_pre_tokens: int | None = None
    timestamp: str = ""
    kind: str = "system"


@dataclass
class SummaryEntry:
    line: int
    summary: str
    kind: str = "summary"


Entry = AssistantEntry | UserEntry | SystemEntry | SummaryEntry


@dataclass
class ReadStats:
    lines: int = 0
    malformed: int = 0
    unknown_types: dict[str, int] = field(default_factory=dict)
    skipped: int = 0


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
                elif block.get("type") == "image":
                    parts.append("[image]")
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return "" if content is None else str(content)


def usage_from(raw: Any) -> Usage:
    """A message's ``usage`` object (missing or odd fields read as 0)."""
    if not isinstance(raw, dict):
        return Usage()
    return Usage(
        count_of(raw.get("input_tokens")),
        count_of(raw.get("cache_creation_input_tokens")),
        count_of(raw.get("cache_read_input_tokens")),
        count_of(raw.get("output_tokens")),
    )


def _object(value: Any) -> dict[str, Any]:
    # Valid JSON of an unexpected shape ("message": "text" or null) reads as empty, never fatal.
    return value if isinstance(value, dict) else {}


def tool_use_from(block: dict[str, Any]) -> ToolUse:
    """A ``tool_use`` content block (of an assistant line)."""
    return ToolUse(str(block.get("id")), str(block.get("name")), _object(block.get("input")))


def tool_result_from(block: dict[str, Any], extra: dict[str, Any] | None = None) -> ToolResult:
    """A ``tool_result`` content block (of a user line); ``extra``: the line's ``toolUseResult``."""
    return ToolResult(str(block.get("tool_use_id")), block.get("content"), bool(block.get("is_error")), extra)


def message_blocks(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The content blocks of a raw line's message ([] when the content is a string or odd)."""
    content = _object(obj.get("message")).get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _parse(number: int, obj: dict[str, Any]) -> Entry | None:
    kind = obj.get("type")
    if kind == "assistant":
        message = _object(obj.get("message"))
        entry = AssistantEntry(
            line=number,
            uuid=str(obj.get("uuid", "")),
            message_id=str(message.get("id") or obj.get("uuid", "")),
            model=str(message.get("model", "")),
            is_sidechain=bool(obj.get("isSidechain")),
            usage=usage_from(message.get("usage")),
            timestamp=str(obj.get("timestamp", "")),
            cwd=str(obj.get("cwd") or ""),
            git_branch=str(obj.get("gitBranch") or ""),
            slug=obj["slug"] if isinstance(obj.get("slug"), str) else "",
        )
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                entry.texts.append(str(block.get("text", "")))
            elif btype == "thinking":
                entry.thinking.append(str(block.get("thinking", "")))
            elif btype == "tool_use":
                entry.tool_uses.append(tool_use_from(block))
        return entry
    if kind == "user":
        message = _object(obj.get("message"))
        content = message.get("content")
        user = UserEntry(
            line=number,
            uuid=str(obj.get("uuid", "")),
            is_sidechain=bool(obj.get("isSidechain")),
            is_compact_summary=bool(obj.get("isCompactSummary")),
            is_meta=bool(obj.get("isMeta")),
            timestamp=str(obj.get("timestamp", "")),
            cwd=str(obj.get("cwd", "")),
            git_branch=str(obj.get("gitBranch") or ""),
        )
        if isinstance(content, str):
            user.texts.append(content)
        elif isinstance(content, list):
            extra = obj.get("toolUseResult") if isinstance(obj.get("toolUseResult"), dict) else None
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_result":
                    user.tool_results.append(tool_result_from(block, extra))
                elif block.get("type") == "text":
                    user.texts.append(str(block.get("text", "")))
        return user
    if kind == "system":
        meta = _object(obj.get("compactMetadata"))
        return SystemEntry(
            line=number,
            uuid=str(obj.get("uuid", "")),
            subtype=str(obj.get("subtype", "")),
            compact_trigger=meta["trigger"] if isinstance(meta.get("trigger"), str) else None,
            compact_pre_tokens=count_of(meta.get("preTokens")) or None,
            timestamp=str(obj.get("timestamp", "")),
        )
    if kind == "summary":
        return SummaryEntry(line=number, summary=str(obj.get("summary", "")))
    queued = _queued_prompt(obj)
    if queued is not None:
        return UserEntry(
            line=number,
            uuid=str(obj.get("uuid", "")),
            is_sidechain=bool(obj.get("isSidechain")),
            texts=[queued],
            timestamp=str(obj.get("timestamp", "")),
            cwd=str(obj.get("cwd") or ""),
            git_branch=str(obj.get("gitBranch") or ""),
            queued=True,
        )
    return None


def _queued_prompt(obj: dict[str, Any]) -> str | None:
    """A prompt the person typed while the assistant worked: a ``queue-operation`` enqueue (2.1.x)
    or a ``queued_command`` attachment of a human (newer versions write both, same words; the
    digest does not count a request twice in a row). Task notifications queue the same way."""
    kind = obj.get("type")
    if kind == "queue-operation" and obj.get("operation") == "enqueue":
        content = obj.get("content")
        return content if isinstance(content, str) else None
    if kind == "attachment":
        attachment = _object(obj.get("attachment"))
        origin = _object(attachment.get("origin")).get("kind")
        if (
            attachment.get("type") == "queued_command"
            and attachment.get("commandMode", "prompt") == "prompt"
            and origin in (None, "human")
            and isinstance(attachment.get("prompt"), str)
        ):
            return str(attachment["prompt"])
    return None


class TranscriptReader:
    """Iterate a transcript's entries (assistant replies merged); ``stats`` fills as it goes."""

    def __init__(self, path: Path, start: int = 0, complete_lines_only: bool = False) -> None:
        """``start``: byte offset to read from (a cursor); ``complete_lines_only``: stop before a
        last line without its newline (Claude Code may be writing it)."""
        self.path = Path(path)
        self.stats = ReadStats()
        self.start = start
        self.complete_lines_only = complete_lines_only
        #: byte offset just past the last line read: the next cursor
        self.end = start

    def raw_lines(self) -> Iterator[tuple[int, bytes, dict[str, Any] | None]]:
        """(line number, original bytes, parsed object or None if malformed)."""
        with open(self.path, "rb") as handle:
            handle.seek(self.start)
            for number, raw in enumerate(handle, 1):
                if self.complete_lines_only and not raw.endswith(b"\n"):
                    break
                self.end += len(raw)
                self.stats.lines += 1
                if not raw.strip():
                    yield number, raw, None
                    continue
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    self.stats.malformed += 1
                    yield number, raw, None
                    continue
                yield number, raw, obj if isinstance(obj, dict) else None

    def __iter__(self) -> Iterator[Entry]:
        return merged_entries(((n, obj) for n, _raw, obj in self.raw_lines()), self.stats)


def merged_entries(
    rows: Iterable[tuple[int, dict[str, Any] | None]],
    stats: ReadStats,
    recent: dict[str, AssistantEntry] | None = None,
) -> Iterator[Entry]:
    """Typed entries from parsed lines (line number, object or None), assistant replies merged.

    Parallel tool calls interleave a reply's lines with tool results, so lines are merged by
    message.id, not adjacency: a later line folds into the entry already yielded (kept in a
    small recent-ids map, so memory stays flat on huge files). Pass ``recent`` to keep that map
    across reads of one file (an incremental reader resuming at a byte cursor)."""
    recent = {} if recent is None else recent
    for number, obj in rows:
        if obj is None:
            continue
        entry = _parse(number, obj)
        if entry is None:
            kind = str(obj.get("type"))
            if kind in KNOWN_SKIPPED:
                stats.skipped += 1
            else:
                stats.unknown_types[kind] = stats.unknown_types.get(kind, 0) + 1
            continue
        if isinstance(entry, AssistantEntry):
            known = recent.get(entry.message_id)
            if known is not None:
                known.texts += entry.texts
                known.thinking += entry.thinking
                known.tool_uses += entry.tool_uses
                known.usage = entry.usage  # every split line repeats it; keep the last
                continue
            recent[entry.message_id] = entry
            if len(recent) > RECENT_REPLIES:
                recent.pop(next(iter(recent)))
        yield entry


def sidecar_path(transcript: Path, tool_use_id: str) -> Path:
    return transcript.with_suffix("") / "tool-results" / f"{tool_use_id}.txt"


def subagent_files(transcript: Path) -> list[Path]:
    folder = transcript.with_suffix("") / "subagents"
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
