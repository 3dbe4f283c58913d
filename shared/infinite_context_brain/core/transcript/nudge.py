"""Before the context is lost, ask the model to write the hand-off itself.

The model in the session is the best summariser there is, and it is already running. Once a
session's context passes a share of its window (``DEFAULT_SHARE``; ``checkpoint_nudge``), the
next hook that can reach the model (``PostToolUse``, ``Stop``) asks it, once between compactions,
to call the ``checkpoint`` tool with its fields. A ``/clear`` or a compaction after that finds
the model's own account of what is left and why, beside what the hand-off reads from the
transcript. At ``Stop``, Claude Code hands the request to the model as "Stop hook feedback"; the
model answers and stops again, this time with ``stop_hook_active`` set, and is let go.

Once asked is once: the request's words (``MARK``) are in the transcript from then on, and so is a
call of the checkpoint tool the model made by itself; either since the last compaction means no
request. Claude Code writes the transcript a moment after a hook answers, so each ask is also
recorded in the data folder (``asks/<transcript key>``: where the transcript ended then) for the
hook that comes before that. Standard library only, because the hooks' fast path runs it after
every tool call and answer: it reads the transcript's last ``TAIL_BYTES``; past the share, the
whole file once, then only what came since the ask.
"""

from __future__ import annotations

import json
import os
import re

from ..files import DIR_MODE, FILE_MODE
from .key import transcript_key
from .window import context_tokens, window_for

SHARE_VARIABLE = "INFINITE_CONTEXT_CHECKPOINT_NUDGE"
#: ``Settings.context_window``'s variable (the window, when the model name does not tell it)
WINDOW_VARIABLE = "INFINITE_CONTEXT_CONTEXT_WINDOW"
#: the share of the window past which the model is asked (0 asks never)
DEFAULT_SHARE = 0.6
#: the words the request starts with; found again in the transcript, they mean "asked already"
MARK = "infinite-context asks for a checkpoint"
TAIL_BYTES = 512 * 1024
#: Claude Code's system entry at a compaction (a line of its own, unlike a mention in text)
_BOUNDARY = re.compile(rb'"subtype":\s*"compact_boundary"')
#: a call of our MCP tool in the transcript: its name is ``mcp__<server>__checkpoint``
_CHECKPOINT_CALL = re.compile(rb'"name":\s*"mcp__[^"]*__checkpoint",\s*"input"')


class NudgeSettingError(ValueError):
    """A nudge variable in the environment that is not a number in range (names the variable)."""


def share_from_environment() -> float:
    """``checkpoint_nudge`` as the environment gives it, without pydantic (the hooks' fast path);
    raises ``NudgeSettingError`` naming the variable for a value out of range."""
    raw = os.environ.get(SHARE_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_SHARE
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise NudgeSettingError(f"{SHARE_VARIABLE}={raw!r}: give a share of the window, 0 to 1 (0: never)")
    return value


def window_from_environment() -> int | None:
    raw = os.environ.get(WINDOW_VARIABLE, "").strip()
    return int(raw) if raw.isdigit() and int(raw) >= 1000 else None


def last_context(path: str) -> tuple[int, str] | None:
    """The context tokens of the last main-chain answer and its model, from the transcript's
    tail (None: no answer with usage there)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - TAIL_BYTES))
            tail = f.read()
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        if b'"assistant"' not in line or b'"usage"' not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # the first line of the tail is cut, or one is being written
        if not isinstance(entry, dict) or entry.get("type") != "assistant" or entry.get("isSidechain"):
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            continue
        tokens = context_tokens(message.get("usage"))
        if tokens:
            return tokens, str(message.get("model") or "")
    return None


def asked_since_compaction(path: str, asked_at: int | None = None) -> bool:
    """The model was asked already (``asked_at``: where the transcript ended when it was, by the
    record), or called the checkpoint tool by itself, since the last compaction (the whole
    session when there was none)."""
    try:
        with open(path, "rb") as f:
            # asked before: only what came since can hold a compaction (one read per stretch of
            # the whole file, not one per tool call)
            recorded = asked_at is not None and 0 <= asked_at <= os.fstat(f.fileno()).st_size
            f.seek(asked_at if recorded and asked_at is not None else 0)
            text = f.read()
    except OSError:
        return True  # nothing to go on: never ask blind
    ends = [found.end() for found in _BOUNDARY.finditer(text)]
    if recorded and not ends:
        return True
    since = text[ends[-1] :] if ends else text
    return MARK.encode() in since or _CHECKPOINT_CALL.search(since) is not None


def record_path(data_dir: str, transcript: str) -> str:
    """Where an ask for ``transcript`` is recorded."""
    return os.path.join(data_dir, "asks", transcript_key(transcript))


def _recorded(record: str | None) -> int | None:
    if record is None:
        return None
    try:
        with open(record, "rb") as f:
            return int(f.read(32).strip() or b"-1")
    except (OSError, ValueError):
        return None


def _record(record: str | None, offset: int) -> None:
    if record is None:
        return
    try:
        os.makedirs(os.path.dirname(record), mode=DIR_MODE, exist_ok=True)
        fd = os.open(record, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            f.write(str(offset).encode())
    except OSError:
        pass  # the transcript will say it soon: at worst one more ask


def due(
    path: str, share: float, *, active: bool = False, window: int | None = None, record: str | None = None
) -> tuple[int, int] | None:
    """(context tokens, window) when the model should be asked for a checkpoint now, recorded as
    asked in ``record`` (``record_path``); None when it is off, Claude Code is already continuing
    for a Stop hook, the context is below the share, or it was asked (or checkpointed) since the
    last compaction."""
    if active or share <= 0:
        return None
    found = last_context(path)
    if found is None:
        return None
    tokens, model = found
    size = window_for(model, tokens, window)
    if tokens < share * size:
        return None
    recorded = _recorded(record)
    if asked_since_compaction(path, recorded):
        if recorded is None:  # checkpointed by itself: the next hooks read only what follows
            _record(record, os.path.getsize(path))
        return None
    _record(record, os.path.getsize(path))
    return tokens, size
