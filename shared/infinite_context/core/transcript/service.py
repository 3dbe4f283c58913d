"""Transcript operations the adapters call (CLI ``transcript ...``, MCP ``expand`` /
``context_meter``, the PostToolUse hook): one function each, on top of a ProjectBrain."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel, Field

from ..errors import InvalidInput, NotFound
from ..models import Observation
from .locate import live_transcript
from .meter import ContextMeter, measure
from .observe import build_observation, response_text
from .reader import TranscriptReader, content_text, sidecar_path
from .transform import TransformOptions, TransformStats, transform

if TYPE_CHECKING:
    from ..brain import ProjectBrain

EXPAND_PAGE_CHARS = 20_000


class ExpandResult(BaseModel):
    tool_use_id: str
    tool_name: str | None
    text: str
    offset: int
    total_chars: int
    next_offset: int | None


class ToolSaving(BaseModel):
    tool: str
    results: int
    replaced: int
    tokens_before: int
    tokens_after: int


class TranscriptStats(BaseModel):
    transcript: str
    context_tokens: int | None
    context_window: int
    model: str
    by_category: dict[str, int]
    compactions: list[dict[str, Any]]
    tool_tokens_before: int
    tool_tokens_after: int
    replaced: int
    fallbacks: int
    transform_ms: float
    per_tool: list[ToolSaving] = Field(default_factory=list)
    malformed_lines: int = 0


class CompressReport(BaseModel):
    source: str
    output: str
    lines: int
    lines_changed: int
    tool_tokens_before: int
    tool_tokens_after: int


def options_from(brain: ProjectBrain | None) -> TransformOptions:
    if brain is None:
        return TransformOptions()
    s = brain.settings
    return TransformOptions(
        keep_recent=s.transform_keep_recent,
        fallback=s.transform_fallback,
        timeout_ms=s.transform_timeout,
        max_tokens=s.observation_max_tokens,
        keep_tools=frozenset(t.strip() for t in s.transform_keep_tools.split(",") if t.strip()),
    )


def resolve_transcript(brain: ProjectBrain | None, path: Path | str | None) -> Path:
    if path is not None:
        found = Path(path).expanduser()
        if not found.is_file():
            raise InvalidInput(
                "transcript", f"{found} is not a file", fix="pass a Claude Code .jsonl transcript"
            )
        return found
    if brain is None:
        raise InvalidInput("transcript", "no transcript given", fix="pass FILE or --project DIR")
    live = live_transcript(brain.project.root)
    if live is None:
        raise NotFound(
            f"no Claude Code transcript found for {brain.project.root}",
            fix="pass the .jsonl file, or set CLAUDE_CONFIG_DIR if Claude Code keeps its data elsewhere",
        )
    return live


# ---- hook --------------------------------------------------------------------------------------
def observe_hook_payload(brain: ProjectBrain, payload: dict[str, Any]) -> Observation:
    tool_use_id = payload.get("tool_use_id")
    tool_name = payload.get("tool_name")
    if not isinstance(tool_use_id, str) or not tool_use_id:
        raise InvalidInput(
            "tool_use_id", "missing from the hook payload", fix="configure this as a PostToolUse hook"
        )
    if not isinstance(tool_name, str) or not tool_name:
        raise InvalidInput(
            "tool_name", "missing from the hook payload", fix="configure this as a PostToolUse hook"
        )
    response = payload.get("tool_response")
    is_error = isinstance(response, dict) and bool(response.get("is_error") or response.get("error"))
    obs = build_observation(
        tool_use_id,
        tool_name,
        payload.get("tool_input") if isinstance(payload.get("tool_input"), dict) else {},
        response_text(response),
        is_error=is_error,
        extra=response if isinstance(response, dict) else None,
        max_tokens=brain.settings.observation_max_tokens,
        source="hook",
    )
    brain.store.put_observation(brain.session_id, obs)
    return obs


# ---- expand ------------------------------------------------------------------------------------
def expand(
    brain: ProjectBrain | None, tool_use_id: str, transcript: Path | str | None = None, offset: int = 0
) -> ExpandResult:
    if not tool_use_id or not isinstance(tool_use_id, str):
        raise InvalidInput("tool_use_id", "is empty", fix="pass an id such as toolu_01ABC...")
    if offset < 0:
        raise InvalidInput("offset", "must be >= 0", fix="omit it or pass next_offset from the last page")
    path = resolve_transcript(brain, transcript)
    name: str | None = None
    original: str | None = None
    for _number, _raw, obj in TranscriptReader(path).raw_lines():
        if obj is None:
            continue
        content = (obj.get("message") or {}).get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and block.get("id") == tool_use_id:
                name = str(block.get("name"))
            elif block.get("type") == "tool_result" and block.get("tool_use_id") == tool_use_id:
                original = content_text(block.get("content"))
        if original is not None:
            break
    sidecar = sidecar_path(path, tool_use_id)
    if sidecar.is_file():  # the full output Claude Code moved aside
        original = sidecar.read_text(encoding="utf-8", errors="replace")
    if original is None:
        raise NotFound(
            f"no tool result {tool_use_id} in {path}", fix="check the id (toolu_...) and the transcript"
        )
    page = original[offset : offset + EXPAND_PAGE_CHARS]
    end = offset + len(page)
    return ExpandResult(
        tool_use_id=tool_use_id,
        tool_name=name,
        text=page,
        offset=offset,
        total_chars=len(original),
        next_offset=end if end < len(original) else None,
    )


# ---- stats / compress --------------------------------------------------------------------------
def _lookup(brain: ProjectBrain | None) -> Any:
    if brain is None:
        return None
    return lambda ids: brain.store.get_observations(brain.session_id, ids)


def load_messages(path: Path) -> tuple[list[dict[str, Any]], int]:
    reader = TranscriptReader(path)
    messages = [obj for _n, _raw, obj in reader.raw_lines() if obj is not None]
    return messages, reader.stats.malformed


def context_meter(brain: ProjectBrain | None, transcript: Path | str | None = None) -> ContextMeter:
    path = resolve_transcript(brain, transcript)
    return measure(path, brain.settings.context_window if brain else None)


def transcript_stats(brain: ProjectBrain | None, transcript: Path | str | None = None) -> TranscriptStats:
    path = resolve_transcript(brain, transcript)
    meter = context_meter(brain, path)
    messages, malformed = load_messages(path)
    _, stats = transform(messages, _lookup(brain), options_from(brain))
    return _stats_model(meter, stats, malformed)


def _stats_model(meter: ContextMeter, stats: TransformStats, malformed: int) -> TranscriptStats:
    return TranscriptStats(
        transcript=meter.transcript,
        context_tokens=meter.context_tokens,
        context_window=meter.context_window,
        model=meter.model,
        by_category=meter.by_category,
        compactions=[c.__dict__ for c in meter.compactions],
        tool_tokens_before=stats.tokens_before,
        tool_tokens_after=stats.tokens_after,
        replaced=stats.replaced,
        fallbacks=stats.fallbacks,
        transform_ms=round(stats.elapsed_ms, 2),
        per_tool=[
            ToolSaving(
                tool=k,
                results=v.results,
                replaced=v.replaced,
                tokens_before=v.tokens_before,
                tokens_after=v.tokens_after,
            )
            for k, v in sorted(stats.per_tool.items(), key=lambda kv: -kv[1].tokens_before)
        ],
        malformed_lines=malformed,
    )


def compress(brain: ProjectBrain | None, source: Path | str, output: Path | str) -> CompressReport:
    """Write a copy of ``source`` whose tool results are observations; every other line is
    byte-identical and the uuid chain untouched, so the copy is a session Claude Code can resume.
    The source is only read."""
    src = Path(source)
    out = Path(output)
    if not src.is_file():
        raise InvalidInput("source", f"{src} is not a file", fix="pass a Claude Code .jsonl transcript")
    if out.resolve() == src.resolve():
        raise InvalidInput("output", "is the source file", fix="write the compressed copy to another path")
    reader = TranscriptReader(src)
    raw_lines: list[bytes] = []
    objects: list[dict[str, Any] | None] = []
    for _n, raw, obj in reader.raw_lines():
        raw_lines.append(raw)
        objects.append(obj)
    present = [o for o in objects if o is not None]
    new_messages, stats = transform(present, _lookup(brain), options_from(brain))
    changed = 0
    tmp = out.with_name(f".{out.name}.{os.getpid()}.{int(time.time())}.tmp")
    with open(tmp, "wb") as handle:
        produced = iter(new_messages)
        for raw, obj in zip(raw_lines, objects, strict=True):
            if obj is None:
                handle.write(raw)
                continue
            new = next(produced)
            if new is obj:
                handle.write(raw)
            else:
                changed += 1
                ending = b"\n" if raw.endswith(b"\n") else b""
                handle.write(orjson.dumps(new) + ending)
    tmp.replace(out)
    return CompressReport(
        source=str(src),
        output=str(out),
        lines=len(raw_lines),
        lines_changed=changed,
        tool_tokens_before=stats.tokens_before,
        tool_tokens_after=stats.tokens_after,
    )
