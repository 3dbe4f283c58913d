"""Issue trackers reached through MCP servers (Linear, Jira, GitHub, GitLab...): the items a
session created, claimed, closed or looked at, with their titles, and the open items a listing
showed.

Claude Code names an MCP tool ``mcp__<server>__<tool>``. A tracker's tools are told by their verb
(``create_issue``, ``update_issue``, ``get_issue``, ``list_issues``, ``search_issues``...); their
results are JSON text whose items carry an ``identifier`` (Linear's ``ENT-96``), a ``key`` (Jira's
``PROJ-12``) or a ``number`` (GitHub's ``#12``), a ``title`` or ``summary``, and a ``state`` or
``status`` (a name, or an object with one). Nothing else is assumed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..facts import TrackerEvent

_TOOL = re.compile(
    r"^mcp__[^_].*__(create|update|get|view|list|search|find)_?(issues?|tickets?|tasks?)\b", re.I
)
_DONE = re.compile(
    r"\b(?:done|closed|complete[d]?|resolved|fixed|cancel+ed|canceled|duplicate|merged)\b", re.I
)
_STARTED = re.compile(r"\b(?:in[ _-]?progress|started|doing|in review|active)\b", re.I)
TITLE_CHARS = 160
MAX_OPEN = 15


@dataclass
class TrackerReading:
    events: list[TrackerEvent] = field(default_factory=list)
    #: a listing's open items ("ENT-96: title"), None when the call listed nothing
    open_items: list[str] | None = None
    #: items the session created: work put on the tracker for later
    created: list[str] = field(default_factory=list)


def _objects(text: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(text)
    except ValueError:
        return []
    if isinstance(data, dict):
        for key in ("issues", "nodes", "items", "results", "data", "tasks"):
            if isinstance(data.get(key), list):
                return [d for d in data[key] if isinstance(d, dict)]
        return [data]
    return [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []


def _id(item: dict[str, Any]) -> str:
    for key in ("identifier", "key"):
        if isinstance(item.get(key), str) and item[key].strip():
            return str(item[key]).strip()
    number = item.get("number")
    return f"#{number}" if isinstance(number, int) and not isinstance(number, bool) else ""


def _title(item: dict[str, Any]) -> str:
    for key in ("title", "summary", "name"):
        if isinstance(item.get(key), str):
            flat = " ".join(str(item[key]).split())
            return flat if len(flat) <= TITLE_CHARS else flat[: TITLE_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return ""


def _state(item: dict[str, Any]) -> str:
    for key in ("state", "status"):
        value = item.get(key)
        if isinstance(value, dict):
            value = value.get("name") or value.get("type")
        if isinstance(value, str):
            return value
    return ""


def read_tracker_call(tool: str, data: dict[str, Any], result: str) -> TrackerReading | None:
    """What one MCP tracker call did (None when ``tool`` is no tracker call)."""
    found = _TOOL.match(tool)
    if found is None:
        return None
    verb = found.group(1).lower()
    items = [(i, _id(i)) for i in _objects(result)]
    items = [(i, key) for i, key in items if key]
    reading = TrackerReading()
    if verb in {"list", "search", "find"}:
        reading.open_items = [
            f"{key}: {_title(item)}" for item, key in items if not _DONE.search(_state(item))
        ][:MAX_OPEN]
        return reading
    asked_state = data.get("state") or data.get("status") or data.get("stateId")
    for item, key in items[:1]:
        title, state = _title(item), _state(item) or (asked_state if isinstance(asked_state, str) else "")
        if verb == "create":
            reading.events.append(TrackerEvent(item=key, action="created", title=title))
            reading.created.append(f"{key}: {title}" if title else key)
        elif verb == "update" and _DONE.search(state):
            reading.events.append(TrackerEvent(item=key, action="closed"))
        elif verb == "update" and _STARTED.search(state):
            reading.events.append(TrackerEvent(item=key, action="claimed", title=title))
        else:
            reading.events.append(TrackerEvent(item=key, action="viewed", title=title))
    return reading
