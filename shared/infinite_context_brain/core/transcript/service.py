"""Transcript operations the adapters call (CLI ``transcript ...``, MCP ``expand`` /
``context_meter``): one function each. They read a transcript file and take Settings and a
lookup of the observations the PostToolUse hook stored (``record.py``), when there are some.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel, Field

from ..config import load_settings
from ..errors import InvalidInput, NotFound
from ..storage import default_sqlite_path, open_store
from .live import originals_session
from .locate import all_transcripts, live_transcript, transcripts_dir
from .meter import CALIBRATION, Compaction, ContextMeter, measure, measure_entries
from .reader import (
    KNOWN_SKIPPED,
    ReadStats,
    TranscriptReader,
    merged_entries,
    sidecar_path,
    usage_from,
)
from .transform import Lookup, TransformOptions, TransformStats, transform
from .walk import ToolIndex, on_chain, tool_calls, tool_results_in

if TYPE_CHECKING:
    from ..brain import ProjectBrain
    from ..config import Settings

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


class CurvePoint(BaseModel):
    line: int
    tokens: int  # context after this reply, as Claude Code measured it
    endless_tokens: int  # the same with endless mode's observations in place of tool results


class TranscriptStats(BaseModel):
    transcript: str
    context_tokens: int | None
    context_window: int
    model: str
    by_category: dict[str, int]
    compactions: list[Compaction]
    tool_tokens_before: int
    tool_tokens_after: int
    replaced: int
    fallbacks: int
    transform_ms: float
    per_tool: list[ToolSaving] = Field(default_factory=list)
    malformed_lines: int = 0
    curve: list[CurvePoint] = Field(default_factory=list)

    @property
    def reduction(self) -> float:
        """Share of tool-output tokens endless mode removes (0..1)."""
        if not self.tool_tokens_before:
            return 0.0
        return 1 - self.tool_tokens_after / self.tool_tokens_before


class CompressReport(BaseModel):
    source: str
    output: str
    lines: int
    lines_changed: int
    tool_tokens_before: int
    tool_tokens_after: int


def options_from(settings: Settings | None) -> TransformOptions:
    if settings is None:
        return TransformOptions()
    return TransformOptions(
        keep_recent=settings.transform_keep_recent,
        fallback=settings.transform_fallback,
        timeout_ms=settings.transform_timeout,
        max_tokens=settings.observation_max_tokens,
        keep_tools=settings.kept_tools(),
    )


def store_lookup(brain: ProjectBrain | None) -> Lookup | None:
    """Batched lookup of the observations the PostToolUse hook stored for this project."""
    if brain is None:
        return None
    return lambda ids: brain.store.observations.get_observations(brain.session_id, ids)


def resolve_transcript(transcript: Path | str | None, project_root: Path | str | None) -> Path:
    """The given file, else the project's live transcript (newest in Claude Code's folder)."""
    if transcript is not None:
        found = Path(transcript).expanduser()
        if not found.is_file():
            raise InvalidInput(
                "transcript", f"{found} is not a file", fix="pass a Claude Code .jsonl transcript"
            )
        return found
    if project_root is None:
        raise InvalidInput("transcript", "no transcript given", fix="pass FILE or --project DIR")
    live = live_transcript(project_root)
    if live is None:
        raise NotFound(
            f"no Claude Code transcript found for {project_root} (looked in {transcripts_dir(project_root)})",
            fix="pass the .jsonl file, or set CLAUDE_CONFIG_DIR if Claude Code keeps its data elsewhere",
        )
    return live


#: the entry types Claude Code writes (``reader.py`` reads the first four and skips the rest)
ENTRY_TYPES = frozenset({"user", "assistant", "system", "summary"}) | KNOWN_SKIPPED


def _is_entry_type(value: object) -> bool:
    """A line's ``type`` names an entry Claude Code writes (any JSON value may stand there)."""
    return isinstance(value, str) and value in ENTRY_TYPES


def require_transcript(
    path: Path, lines: Iterable[tuple[bytes, dict[str, Any] | None]], field: str = "transcript"
) -> None:
    """Refuse a file that holds something but no Claude Code entry (a README, another tool's JSON
    lines): its figures would all be zero and say nothing. An empty file is a session not yet
    written to. ``lines``: every line as read and as parsed (None: not a JSON object)."""
    found = written = False
    for raw, obj in lines:
        found = found or (obj is not None and _is_entry_type(obj.get("type")))
        written = written or bool(raw.strip())
    if written and not found:
        raise InvalidInput(
            field,
            f"{path} is not a Claude Code transcript (no line of it is a Claude Code entry)",
            fix="pass a session's .jsonl file, from ~/.claude/projects/<project folder>/",
        )


def transform_messages(
    messages: list[dict[str, Any]], settings: Settings, brain: ProjectBrain | None = None
) -> tuple[list[dict[str, Any]], TransformStats]:
    """The seed's TransformLayer entry point: the messages unchanged unless endless mode is on
    (``INFINITE_CONTEXT_ENDLESS_MODE``), else a new list with heavy tool results replaced."""
    if not settings.endless_mode:
        return list(messages), TransformStats()
    return transform(messages, store_lookup(brain), options_from(settings))


# ---- expand ------------------------------------------------------------------------------------
def _find_result(path: Path, tool_use_id: str) -> tuple[str | None, str | None]:
    """(tool name, result text) of one tool use; either is None when the file lacks it."""
    uses = ToolIndex()
    rows = ((n, obj) for n, _raw, obj in TranscriptReader(path).raw_lines() if obj is not None)
    for call in tool_calls(rows, index=uses):
        if call.result.tool_use_id == tool_use_id:
            return (call.use.name if call.use else None), call.result.text()
    use = uses.get(tool_use_id)
    return (use.name if use else None), None


#: a tool use's id as Claude Code (``toolu_...``) and OpenAI-style clients (``call_...``) write it:
#: letters, digits, ``_`` and ``-`` only, so an id can never name a path (no ``/``, ``..``)
TOOL_USE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def check_tool_use_id(tool_use_id: object) -> str:
    if not isinstance(tool_use_id, str) or not tool_use_id.strip():
        raise InvalidInput("tool_use_id", "is empty", fix="pass an id such as toolu_01ABC...")
    if not TOOL_USE_ID.fullmatch(tool_use_id):
        shown = tool_use_id if len(tool_use_id) <= 40 else tool_use_id[:37] + "..."
        raise InvalidInput(
            "tool_use_id",
            f"{shown!r} is not a tool use id (letters, digits, _ and - only, at most 128)",
            fix="pass the id from an [endless-mode ...] line, such as toolu_01ABC...",
        )
    return tool_use_id


def _sidecar_text(transcript: Path, tool_use_id: str) -> str | None:
    """The sidecar file of a tool result, read only when it is a regular file inside this
    transcript's own folder (a symlink out of it is not followed)."""
    sidecar = sidecar_path(transcript, tool_use_id)
    folder = transcript.with_suffix("")
    try:
        if sidecar.is_symlink() or not sidecar.is_file():
            return None
        sidecar.resolve().relative_to(folder.resolve())
    except (OSError, ValueError):
        return None
    return sidecar.read_text(encoding="utf-8", errors="replace")


def expand(
    tool_use_id: str,
    transcript: Path | str | None = None,
    project_root: Path | str | None = None,
    offset: int = 0,
) -> ExpandResult:
    """The original output of one tool use, a page (20,000 characters) at a time. Without a
    transcript, the project's transcripts are searched newest first, then the originals the live
    proxy kept for this user's Claude Code sessions of that project (never another project's, nor
    another user's in a shared store)."""
    check_tool_use_id(tool_use_id)
    if offset < 0:
        raise InvalidInput("offset", "must be >= 0", fix="omit it or pass next_offset from the last page")
    if transcript is not None:
        given = resolve_transcript(transcript, None)
        require_transcript(given, ((raw, obj) for _n, raw, obj in TranscriptReader(given).raw_lines()))
        candidates = [given]
    else:
        candidates = all_transcripts(project_root) if project_root is not None else []
        if not candidates:
            resolve_transcript(None, project_root)  # raises the clear "no transcript" error
    name: str | None = None
    for path in candidates:
        name, original = _find_result(path, tool_use_id)
        moved = _sidecar_text(path, tool_use_id)  # the full output Claude Code moved aside
        if moved is not None:
            original = moved
        if original is not None:
            break
    else:
        stored = _stored_original(tool_use_id, [p.stem for p in candidates])
        if stored is not None:
            return _page(tool_use_id, stored[0], stored[1], offset)
        where = candidates[0] if len(candidates) == 1 else f"{len(candidates)} transcripts of the project"
        raise NotFound(
            f"no tool result {tool_use_id} in {where}", fix="check the id (toolu_...) and the transcript"
        )
    return _page(tool_use_id, name, original, offset)


def _stored_original(tool_use_id: str, sessions: list[str]) -> tuple[str, str] | None:
    """(tool name, text) of a result the live proxy replaced, as it stored it (redacted) under
    this user and one of ``sessions`` (the Claude Code sessions whose transcripts were searched);
    None when there is no store yet or none of them holds the id."""
    if not sessions:
        return None
    try:
        settings = load_settings()
        if settings.store_url is None and not default_sqlite_path(settings).exists():
            return None  # a read never creates the store
        with open_store(settings) as store:
            for session in sessions:
                found = store.observations.get_observations(
                    originals_session(os.getuid(), session), [tool_use_id]
                )
                if tool_use_id in found:
                    return found[tool_use_id].tool_name, found[tool_use_id].text
    except Exception:
        return None
    return None


def _page(tool_use_id: str, name: str | None, original: str, offset: int) -> ExpandResult:
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


# ---- meter / stats / compress ------------------------------------------------------------------
def context_meter(
    transcript: Path | str | None = None,
    project_root: Path | str | None = None,
    settings: Settings | None = None,
) -> ContextMeter:
    path = resolve_transcript(transcript, project_root)
    return measure(path, settings.context_window if settings else None)


def _load(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """The parsed lines (numbered) and how many did not parse, in one pass that also checks
    the file is a transcript."""
    reader = TranscriptReader(path)
    numbered: list[tuple[int, dict[str, Any]]] = []

    def lines() -> Iterator[tuple[bytes, dict[str, Any] | None]]:
        for n, raw, obj in reader.raw_lines():
            if obj is not None:
                numbered.append((n, obj))
            yield raw, obj

    require_transcript(path, lines())
    return numbered, reader.stats.malformed


def _endless_curve(
    numbered: list[tuple[int, dict[str, Any]]], saved_by_id: dict[str, int]
) -> list[CurvePoint]:
    """Context tokens after each main-chain reply as Claude Code measured them, and the same
    minus what the observations saved up to that point (reset at each compaction)."""
    points: list[CurvePoint] = []
    saved = 0.0
    seen: set[str] = set()
    for line, obj in numbered:
        kind = obj.get("type")
        if kind == "system" and obj.get("subtype") == "compact_boundary":
            saved = 0.0
            continue
        if not on_chain(obj, "main"):
            continue
        if kind == "user":
            saved += CALIBRATION * sum(saved_by_id.get(r.tool_use_id, 0) for _b, r in tool_results_in(obj))
        elif kind == "assistant":
            message = obj.get("message")
            message = message if isinstance(message, dict) else {}  # "message": "text" / true / null
            tokens = usage_from(message.get("usage")).context_tokens
            key = str(message.get("id") or line)
            if tokens and key not in seen:
                seen.add(key)
                if points and tokens < points[-1].tokens:
                    # Claude Code shed content without a compact boundary (older versions clear
                    # old tool results): what left cannot be saved again.
                    saved = max(0.0, saved - (points[-1].tokens - tokens))
                endless = max(0, int(tokens - saved))
                points.append(CurvePoint(line=line, tokens=tokens, endless_tokens=endless))
    return points


def transcript_stats(
    transcript: Path | str | None = None,
    project_root: Path | str | None = None,
    settings: Settings | None = None,
    lookup: Lookup | None = None,
) -> TranscriptStats:
    """The context meter plus what endless mode would save on this transcript."""
    path = resolve_transcript(transcript, project_root)
    numbered, malformed = _load(path)  # parsed once: the meter and the transform share it
    meter = measure_entries(
        merged_entries(numbered, ReadStats()), str(path), settings.context_window if settings else None
    )
    messages = [obj for _n, obj in numbered]
    _, stats = transform(messages, lookup, options_from(settings))
    return TranscriptStats(
        transcript=meter.transcript,
        context_tokens=meter.context_tokens,
        context_window=meter.context_window,
        model=meter.model,
        by_category=meter.by_category,
        compactions=meter.compactions,
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
        curve=_endless_curve(numbered, stats.saved),
    )


def compress(
    source: Path | str, output: Path | str, settings: Settings | None = None, lookup: Lookup | None = None
) -> CompressReport:
    """Write a copy of ``source`` whose tool results are observations; every other line is
    byte-identical and the uuid chain untouched, so the copy is a session Claude Code can resume.
    The source is only read; the copy is written to a temporary file and renamed into place."""
    src = Path(source).expanduser()
    out = Path(output).expanduser()
    if not src.is_file():
        raise InvalidInput("source", f"{src} is not a file", fix="pass a Claude Code .jsonl transcript")
    if out.exists() and out.resolve() == src.resolve():
        raise InvalidInput("output", "is the source file", fix="write the compressed copy to another path")
    if not out.parent.is_dir():
        raise InvalidInput(
            "output", f"folder {out.parent} does not exist", fix="create it or pick another path"
        )
    reader = TranscriptReader(src)
    raw_lines: list[bytes] = []
    objects: list[dict[str, Any] | None] = []
    for _n, raw, obj in reader.raw_lines():
        raw_lines.append(raw)
        objects.append(obj)
    require_transcript(src, zip(raw_lines, objects, strict=True), "source")
    new_messages, stats = transform([o for o in objects if o is not None], lookup, options_from(settings))
    changed = 0
    tmp = out.with_name(f".{out.name}.{os.getpid()}.{int(time.time())}.tmp")
    try:
        with open(tmp, "wb") as handle:
            produced = iter(new_messages)
            for raw, obj in zip(raw_lines, objects, strict=True):
                new = next(produced) if obj is not None else None
                if new is None or new is obj:
                    handle.write(raw)
                else:
                    changed += 1
                    handle.write(orjson.dumps(new) + (b"\n" if raw.endswith(b"\n") else b""))
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return CompressReport(
        source=str(src),
        output=str(out),
        lines=len(raw_lines),
        lines_changed=changed,
        tool_tokens_before=stats.tokens_before,
        tool_tokens_after=stats.tokens_after,
    )
