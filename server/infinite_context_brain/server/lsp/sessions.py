"""One project brain per workspace folder, with its change-feed subscription and the budget
figures the server pushes to the editor."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infinite_context_brain.core.errors import InvalidInput

from .tooltip import budget_tooltip

if TYPE_CHECKING:  # imported on first use: `initialize` must answer fast
    import asyncio

    from infinite_context_brain.core.brain import ProjectBrain
    from infinite_context_brain.core.config import Settings
    from infinite_context_brain.core.transcript.meter import IncrementalMeter

log = logging.getLogger(__name__)

#: initializationOptions / configuration keys (camelCase, as VS Code settings) -> Settings fields
OPTION_FIELDS = {
    "storeUrl": "store_url",
    "budget": "budget",
    "merge": "merge",
    "contextWindow": "context_window",
    "logLevel": "log_level",
}


def settings_from_options(options: dict[str, Any] | None, folder: Path) -> Settings:
    """Settings for one folder: the editor's options win over the environment."""
    from infinite_context_brain.core.config import load_settings

    overrides: dict[str, Any] = {"project_root": folder}
    for key, value in (options or {}).items():
        name = OPTION_FIELDS.get(key)
        if name is not None and value not in (None, ""):
            overrides[name] = value
    return load_settings(**overrides)


@dataclass
class FolderSession:
    uri: str
    root: Path
    brain: ProjectBrain
    subscription: Any = None
    #: the live Claude Code transcript's meter (a byte cursor: each change reads only new lines)
    live_meter: IncrementalMeter | None = None
    meter: dict[str, Any] = field(default_factory=dict)
    #: the budget notification being computed, and whether another change came in meanwhile
    #: the working-memory usage last seen (memory writes are not in the change feed)
    memory_seen: tuple[int, int, int, int] | None = None
    pushing: asyncio.Task[None] | None = None
    push_again: bool = False
    closed: bool = False

    def budget(self) -> dict[str, Any]:
        """The payload of the ``infiniteContext/budget`` notification: ``ProjectBrain.budget``
        (current version, memory usage, locks; no history, no file checks) plus the meter."""
        report = self.brain.budget()
        memory = report.memory
        return {
            "folderUri": self.uri,
            "contextTokens": self.meter.get("contextTokens"),
            "contextWindow": self.meter.get("contextWindow"),
            "memoryTokens": memory.used if memory else None,
            "memoryBudget": memory.budget if memory else None,
            "version": report.version,
            "lastCheckpoint": report.last_checkpoint.isoformat() if report.last_checkpoint else None,
            "mergedBy": report.merged_by,
            "refining": report.refining,
            "lockHolder": report.lock_holder,
            "store": report.store,
            "currentTask": report.current_task,
            "stateTokens": report.state_tokens,
            "tokenCap": report.token_cap,
            "tooltip": budget_tooltip(report, self.meter, self.root.name),
        }

    def memory_changed(self) -> bool:
        """True when the working memory's usage moved since the last look: another process
        (Claude Code's MCP server, the CLI) stored, updated or compacted. One small read."""
        usage = self.brain.store.memory.memory_usage(self.brain.session_id)
        changed = self.memory_seen is not None and usage != self.memory_seen
        self.memory_seen = usage
        return changed

    def refresh_meter(self) -> bool:
        """Read what the folder's live Claude Code transcript gained; True if the figures changed."""
        from infinite_context_brain.core.transcript.locate import live_transcript
        from infinite_context_brain.core.transcript.meter import IncrementalMeter

        path = live_transcript(self.root)
        if path is None:
            return False
        if self.live_meter is None or self.live_meter.path != path:  # a new Claude Code session
            self.live_meter = IncrementalMeter(path, self.brain.settings.context_window)
        if not self.live_meter.update():
            return False
        meter = self.live_meter.meter()
        figures = {"contextTokens": meter.context_tokens, "contextWindow": meter.context_window}
        changed = figures != self.meter
        self.meter = figures
        return changed


class Sessions:
    """Workspace folders -> FolderSession; opened and closed as folders come and go."""

    def __init__(self, on_change: Callable[[FolderSession], None]) -> None:
        self._by_uri: dict[str, FolderSession] = {}
        #: the open folders as of the last change, read without the lock (the event loop reads it
        #: and must never wait behind a folder whose store is still connecting)
        self._open: tuple[FolderSession, ...] = ()
        self._lock = threading.RLock()
        self.options: dict[str, Any] = {}
        self._on_change = on_change

    def open(self, uri: str, path: Path) -> FolderSession:
        with self._lock:  # held while the store connects: a request for this folder waits for it
            if uri in self._by_uri:
                return self._by_uri[uri]
            from infinite_context_brain.core.brain import ProjectBrain

            brain = ProjectBrain.open(settings=settings_from_options(self.options, path))
            session = FolderSession(uri=uri, root=path, brain=brain)
            # Writes from other processes (Claude Code's MCP server, the CLI, a notebook) arrive here.
            # A folder whose brain has no id yet (nothing written) listens to every change and
            # keeps those of the id it learns once some process writes first.
            session.subscription = brain.store.feed.subscribe(
                lambda change: (
                    self._on_change(session)
                    if not change.session_id or change.session_id == brain.session_id
                    else None
                ),
                brain.session_id or None,
            )
            self._by_uri[uri] = session
            self._open = tuple(self._by_uri.values())
            log.info("session opened", extra={"folder": str(path), "session": brain.session_id})
            return session

    def close(self, uri: str) -> None:
        with self._lock:
            session = self._by_uri.pop(uri, None)
            self._open = tuple(self._by_uri.values())
        if session is not None:
            session.closed = True
            if session.subscription is not None:
                session.subscription.close()
            session.brain.close()

    def close_all(self) -> None:
        for uri in list(self._by_uri):
            self.close(uri)

    def all(self) -> list[FolderSession]:
        return list(self._open)

    def get(self, folder_uri: Any) -> FolderSession:
        with self._lock:
            if folder_uri in (None, ""):
                if len(self._by_uri) == 1:
                    return next(iter(self._by_uri.values()))
                raise InvalidInput(
                    "folderUri",
                    f"is required with {len(self._by_uri)} workspace folders open",
                    fix="pass the workspace folder's URI",
                )
            if not isinstance(folder_uri, str) or folder_uri not in self._by_uri:
                known = ", ".join(self._by_uri) or "none"
                raise InvalidInput(
                    "folderUri",
                    f"{folder_uri!r} is not an open workspace folder (open: {known})",
                    fix="pass one of the workspace folders' URIs",
                )
            return self._by_uri[folder_uri]

    def reconfigure(self, options: dict[str, Any]) -> None:
        """New editor settings: reopen every folder with them."""
        self.options = options
        with self._lock:
            folders = [(s.uri, s.root) for s in self._by_uri.values()]
        for uri, _root in folders:
            self.close(uri)
        for uri, root in folders:
            self.open(uri, root)
