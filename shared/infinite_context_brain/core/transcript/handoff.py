"""Checkpoint a Claude Code session from its transcript, before its context is lost.

The SessionEnd and PreCompact hooks call ``checkpoint_from_transcript``: it reads the facts of
what was added to the transcript since the last hand-off of that transcript (a byte cursor per
transcript under the data dir), and checkpoints them with the offline merge at once (LLM
refinement follows in the background when a key is set). Paths are made relative to the project,
or to the folder the session started in when the brain's project is elsewhere (a replay).
It is safe to run twice and concurrently: the cursor file is locked while a hand-off runs, and
nothing new means no checkpoint.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InvalidInput
from ..facts import TranscriptCursor
from ..files import open_private, private_dir
from ..models import Observation
from .digest import digest, session_root
from .key import transcript_key
from .observe import build_observation
from .reader import AssistantEntry, ToolResult, ToolUse, TranscriptReader, UserEntry

if TYPE_CHECKING:
    from ..brain import ProjectBrain
    from ..models import CheckpointResult


@dataclass
class HandoffResult:
    transcript: str
    from_offset: int
    to_offset: int
    checkpoint: CheckpointResult | None  # None: nothing new since the last hand-off
    reason: str
    #: observations stored from the transcript because no PostToolUse had stored them
    backfilled: int = 0


def cursor_path(data_dir: Path, transcript: Path) -> Path:
    return data_dir / "cursors" / f"{transcript_key(transcript)}.json"


def _stored_offset(brain: ProjectBrain, key: str, size: int) -> int:
    """How far the brain's current version says this transcript was handed off (0 if not, or if
    the transcript is shorter than that: another file under the same path)."""
    if not brain.session_id:
        return 0
    state = brain.store.states.get_state(brain.session_id)
    offset = state.meta.handoffs.get(key, 0) if state is not None else 0
    return offset if 0 <= offset <= size else 0


def _read_cursor(path: Path, transcript: Path) -> int:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        offset = int(data.get("offset", 0))
    except (OSError, ValueError, AttributeError):
        return 0
    # A transcript that shrank is not the one the cursor was for: start over.
    return offset if 0 <= offset <= transcript.stat().st_size else 0


def checkpoint_from_transcript(
    brain: ProjectBrain, transcript: Path | str | None, reason: str
) -> HandoffResult:
    if not transcript:
        raise InvalidInput(
            "transcript_path", "missing", fix="run this as a Claude Code hook (it sends the path)"
        )
    path = Path(transcript).expanduser()
    if not path.exists():  # a session that never wrote a line (`claude mcp list` ends one)
        return HandoffResult(str(path), 0, 0, None, reason)
    if not path.is_file():
        raise InvalidInput("transcript_path", f"{path} is not a file", fix="check the Claude Code session")
    cursor = cursor_path(brain.settings.resolved_data_dir(), path)
    private_dir(cursor.parent)
    with os.fdopen(open_private(cursor.with_suffix(".lock"), os.O_WRONLY | os.O_APPEND), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a concurrent PreCompact / SessionEnd waits, then sees no news
        key = transcript_key(path)
        # The version a crashed hand-off stored before its cursor file counts as handed off.
        start = max(_read_cursor(cursor, path), _stored_offset(brain, key, path.stat().st_size))
        reader = TranscriptReader(path, start=start, complete_lines_only=True)
        entries = list(reader)
        started_in = session_root(path)
        facts = digest(entries, [brain.project.root, *([started_in] if started_in else [])])
        facts.handoff = TranscriptCursor(key=key, offset=reader.end)
        result = None
        if not facts.is_empty():
            tokens = next(
                (
                    e.usage.context_tokens
                    for e in reversed(entries)
                    if isinstance(e, AssistantEntry) and not e.is_sidechain and e.usage.context_tokens
                ),
                None,
            )
            result = brain.checkpoint(facts=facts, token_count=tokens, wait=False)
        # Tool uses whose PostToolUse never reached us (the MCP server a hook calls was not
        # connected, or stopped before storing): the transcript holds them too.
        calls = tool_calls_in(entries)
        missing = set(brain.missing_observations([use.id for use, _result in calls]))
        max_tokens = brain.settings.observation_max_tokens
        brain.add_observations([observation(use, res, max_tokens) for use, res in calls if use.id in missing])
        backfilled = len(missing)
        tmp = cursor.with_name(f".{cursor.name}.{os.getpid()}.tmp")
        with os.fdopen(open_private(tmp, os.O_WRONLY | os.O_TRUNC), "w", encoding="utf-8") as out:
            out.write(json.dumps({"transcript": str(path), "offset": reader.end, "reason": reason}))
        tmp.replace(cursor)
    return HandoffResult(str(path), start, reader.end, result, reason, backfilled)


def tool_calls_in(entries: Iterable[object]) -> list[tuple[ToolUse, ToolResult]]:
    """Each tool result in ``entries`` whose use is among them too, with that use."""
    uses: dict[str, ToolUse] = {}
    out: list[tuple[ToolUse, ToolResult]] = []
    for entry in entries:
        if isinstance(entry, AssistantEntry):
            uses.update((use.id, use) for use in entry.tool_uses)
        elif isinstance(entry, UserEntry):
            out += [(uses[r.tool_use_id], r) for r in entry.tool_results if r.tool_use_id in uses]
    return out


def observation(use: ToolUse, result: ToolResult, max_tokens: int) -> Observation:
    """The observation of one tool call read from the transcript."""
    return build_observation(
        use.id,
        use.name,
        use.input,
        result.text(),
        is_error=result.is_error,
        extra=result.extra,
        max_tokens=max_tokens,
    )
