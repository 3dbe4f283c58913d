"""A transcript replayed as the Messages API requests Claude Code sent: one request per main-chain
assistant reply, the whole history before it each time (the live proxy's benchmark and tests).

Lines of one reply (same ``message.id``) join into one assistant message, consecutive user lines
(parallel tool results) into one user message, as the client sends them. Compaction is not
replayed by default: the history runs on past a ``compact_boundary`` (its summary is left out),
which is what the session would have sent had it not compacted. Breakpoints sit where Claude Code
2.1 puts them: two in ``system`` and one on the last block of the last message.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from .reader import TranscriptReader

SYSTEM = [
    {"type": "text", "text": "x-anthropic-billing-header: replayed"},
    {
        "type": "text",
        "text": "You are Claude Code, Anthropic's official CLI for Claude.",
        "cache_control": {"type": "ephemeral"},
    },
    {"type": "text", "text": "(replayed request: the system prompt)", "cache_control": {"type": "ephemeral"}},
]
TOOLS = [
    {"name": name, "description": f"The {name} tool.", "input_schema": {"type": "object", "properties": {}}}
    for name in ("Bash", "Read", "Edit", "Write", "Grep", "Glob", "Task", "WebFetch", "TodoWrite")
]


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, list):
        return list(content)
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return []


def conversation(path: Path | str, follow_compactions: bool = False) -> list[tuple[dict[str, Any], bool]]:
    """The main chain as API messages, each with True when it is an assistant reply that a request
    produced (the first message of a reply)."""
    return [(message, reply) for message, reply, _at in _timed(path, follow_compactions)]


def _when(obj: dict[str, Any]) -> float | None:
    stamp = obj.get("timestamp")
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _timed(path: Path | str, follow_compactions: bool) -> list[tuple[dict[str, Any], bool, float | None]]:
    out: list[tuple[dict[str, Any], bool, float | None]] = []
    for _n, _raw, obj in TranscriptReader(Path(path)).raw_lines():
        if obj is None or obj.get("isSidechain"):
            continue
        kind = obj.get("type")
        if kind == "system" and obj.get("subtype") == "compact_boundary" and follow_compactions:
            out = []
            continue
        if kind not in ("user", "assistant"):
            continue
        if obj.get("isCompactSummary") and not follow_compactions:
            continue
        message = obj.get("message")
        if not isinstance(message, dict):
            continue
        if kind == "assistant" and (message.get("model") == "<synthetic>" or obj.get("isApiErrorMessage")):
            continue
        blocks = _blocks(message.get("content"))
        if not blocks:
            continue
        role = "assistant" if kind == "assistant" else "user"
        if out and out[-1][0]["role"] == role:  # one reply's lines, or parallel tool results
            out[-1][0]["content"].extend(blocks)
        else:
            out.append(({"role": role, "content": blocks}, role == "assistant", _when(obj)))
    return out


def requests(
    path: Path | str, model: str = "claude-sonnet-4-5", follow_compactions: bool = False
) -> list[bytes]:
    """Each request body as bytes, as Claude Code shapes it: system and tools first in the cache,
    ``cache_control`` markers on the system prompt and on the last block of the last message."""
    return [body for _at, body in timed_requests(path, model, follow_compactions)]


def timed_requests(
    path: Path | str, model: str = "claude-sonnet-4-5", follow_compactions: bool = False
) -> list[tuple[float, bytes]]:
    """``requests`` with when each was sent (the reply's timestamp, seconds since the epoch; a
    reply without one gets the time of the one before)."""
    convo = _timed(path, follow_compactions)
    bodies: list[tuple[float, bytes]] = []
    at = 0.0
    for i, (_message, is_reply, when) in enumerate(convo):
        at = when if when is not None else at
        if not is_reply or i == 0 or convo[i - 1][0]["role"] != "user":
            continue
        history = [m for m, _r, _w in convo[:i]]
        last = history[-1]
        tail = {**last["content"][-1], "cache_control": {"type": "ephemeral"}}
        history[-1] = {**last, "content": [*last["content"][:-1], tail]}
        body = {
            "model": model,
            "messages": history,
            "system": SYSTEM,
            "tools": TOOLS,
            "metadata": {"user_id": "replay"},
            "max_tokens": 32000,
            "stream": True,
        }
        bodies.append((at, orjson.dumps(body)))
    return bodies
