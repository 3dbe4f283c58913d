"""The Store contract as four small parts, and the whole as their sum.

* ``StateStore``: a session's state read and compare-and-set by version, its bounded history,
  and the advisory session lock;
* ``ChangeFeed``: a callback for every state change, from any process;
* ``ObservationStore``: endless-mode observations keyed by Claude Code's ``tool_use_id``;
* ``MemoryIndex``: working-memory items and their search index.

Each backend (sqlite*.py, redis*.py) implements every part as its own small class on one shared
connection object; a ``Store`` (store.py) holds the four parts, and callers use the part they
need (``store.states.update_state``, ``store.memory.memory_put``): each method is written once
per backend, with nothing forwarding it.

Nothing is deferred: a write is whole (an item with its index entries, a state with its history
row and change event) when the call returns, in one SQLite transaction or one Redis script or
MULTI.

The memory index knows no text analysis: the caller (``memory.working``) turns an item into
``IndexTerms`` and passes them with the item, so storage never imports the memory layer's
vocabulary and a query's terms and an item's terms always come from the same function.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from ..memory.model import MemoryItem
from ..models import HistoryEntry, LockInfo, Observation, ProjectState

#: ``fn(current_state_or_None, next_version) -> HistoryEntry`` for version ``next_version``.
UpdateFn = Callable[[ProjectState | None, int], HistoryEntry]


@dataclass(frozen=True)
class UpdateOutcome:
    entry: HistoryEntry
    attempts: int


@dataclass(frozen=True)
class Change:
    """One event of the change feed: ``kind`` is ``state`` for checkpoints and rollbacks."""

    session_id: str
    version: int
    kind: str
    at: float


ChangeCallback = Callable[[Change], None]


class Subscription(Protocol):
    def close(self) -> None: ...


#: (live tokens, live items, live pinned items, archived items): ``memory_usage``
Usage = tuple[int, int, int, int]


@dataclass(frozen=True)
class PutOutcome:
    """What a ``memory_put`` left, read with the write: the usage and the stored configuration
    (``memory_config``), the two things a store's auto-compaction checks next. Returned, not
    kept for a later read: kept, they went stale when another process wrote in between."""

    usage: Usage
    config: dict[str, Any] | None


def stored_config(raw: str | bytes | None) -> dict[str, Any] | None:
    """A stored memory configuration (JSON text) as ``memory_config`` returns it: None when
    there is none or it is unreadable (the settings then apply)."""
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


@dataclass(frozen=True)
class IndexTerms:
    """What the search index holds for one item: single words (no whitespace), each repeated as
    often as it occurs, because BM25 counts them. Order carries no meaning."""

    body: tuple[str, ...]
    tags: tuple[str, ...]


class IndexedItem(NamedTuple):
    """An item with the terms it is found by."""

    item: MemoryItem
    terms: IndexTerms


class StateStore(Protocol):
    """Versions are dense (1, 2, 3...) per session: every accepted write is ``current + 1``."""

    def get_state(self, session_id: str) -> ProjectState | None: ...

    def current_version(self, session_id: str) -> int: ...

    def update_state(
        self, session_id: str, fn: UpdateFn, *, repair: bool = False, floor: int = 0
    ) -> UpdateOutcome:
        """Compare-and-set: ``fn`` runs on the fresh state until its result is stored
        (see states.py); ``repair=True`` hands ``fn`` None for a corrupt stored state; the new
        version is above ``floor`` too (a wiped store: identity.py)."""
        ...

    def history(self, session_id: str, limit: int | None = None) -> list[HistoryEntry]:
        """Newest first; corrupt rows are skipped."""
        ...

    def history_entry(self, session_id: str, version: int) -> HistoryEntry | None: ...

    def replace_session(self, session_id: str, state: ProjectState, history: list[HistoryEntry]) -> None:
        """Make a session hold exactly ``state`` and ``history`` (versions kept), atomically.
        Used by ``store copy``; normal writes go through ``update_state``."""
        ...

    def sessions(self) -> list[str]:
        """Sessions that have a state."""
        ...

    def acquire_lock(self, session_id: str, owner: str, ttl_seconds: float) -> LockInfo:
        """Advisory: a second holder gets ``acquired=False`` and the holder's name, not an error."""
        ...

    def release_lock(self, session_id: str, owner: str) -> bool: ...

    def lock_holder(self, session_id: str) -> str | None: ...


class ChangeFeed(Protocol):
    def subscribe(self, callback: ChangeCallback, session_id: str | None = None) -> Subscription:
        """Call ``callback`` for every change (from any process) within about a second."""
        ...

    def close(self) -> None:
        """Stop every subscription."""
        ...


class ObservationStore(Protocol):
    def put_observations(self, session_id: str, observations: list[Observation]) -> None:
        """Store (or replace) observations, keyed by tool use, at once; durable when it returns."""
        ...

    def put_observation(self, session_id: str, observation: Observation) -> None: ...

    def get_observations(self, session_id: str, tool_use_ids: list[str]) -> dict[str, Observation]:
        """Batched lookup; ids without an observation are absent from the result."""
        ...

    def all_observations(self, session_id: str) -> dict[str, Observation]:
        """Every readable observation of a session, by tool_use_id (``store copy``)."""
        ...

    def observation_sessions(self) -> list[str]:
        """Sessions holding at least one observation (a session may have no state yet)."""
        ...


class MemoryIndex(Protocol):
    """Every write is whole and durable when it returns: the items with their index entries and
    the running totals, in one SQLite transaction or one Redis script / MULTI."""

    def memory_put(self, session_id: str, items: list[IndexedItem]) -> PutOutcome:
        """Insert or replace items with their index entries in one transaction. Returns the
        usage and configuration as the write left them."""
        ...

    def memory_update(self, session_id: str, items: list[MemoryItem]) -> None:
        """Rewrite existing items whose text is unchanged (archived, promoted, pinned, tokens):
        their index entries stay as they are."""
        ...

    def memory_accessed(self, session_id: str, items: list[MemoryItem]) -> None:
        """Record that ``items`` were read (their ``accessed_at`` and ``access_count``, and the
        rank these give), never their content: a concurrent update of an item keeps its text,
        pins and tags. Values only move forward (a later access is never undone)."""
        ...

    def memory_get(self, session_id: str, ids: list[str]) -> dict[str, MemoryItem]: ...

    def memory_all(self, session_id: str, archived: bool | None = False) -> list[MemoryItem]:
        """Every item (live, archived, or both with None)."""
        ...

    def memory_page(self, session_id: str, archived: bool, offset: int, limit: int) -> list[MemoryItem]:
        """Newest first."""
        ...

    def memory_ranked(
        self, session_id: str, order: str, offset: int, limit: int
    ) -> list[tuple[MemoryItem, float]]:
        """Live items with their stored key, best first: ``order="rank"`` by the retention
        standing with pins first (``memory.model.rank_key``), or a content type's items by
        ``accessed_at`` (the key in microseconds). Reads ``limit`` items, not the session."""
        ...

    def memory_delete(self, session_id: str, ids: list[str]) -> int:
        """Really delete (the only operation that loses content); returns how many existed."""
        ...

    def memory_search(
        self, session_id: str, terms: list[str], limit: int, archived: bool | None
    ) -> list[tuple[str, float]]:
        """(item id, BM25 relevance >= 0), best first (ties by id), among live (False),
        archived (True) or all (None) items, with this session's statistics only; computed by
        storage/search.py on every backend, so backends rank the same data the same way."""
        ...

    def memory_usage(self, session_id: str) -> Usage:
        """(live tokens, live items, live pinned items, archived items): running totals kept
        in the same transaction as each write, never a scan."""
        ...

    def memory_export(self, session_id: str) -> list[IndexedItem]:
        """Every readable item (live and archived) with the index terms stored for it, so a copy
        is found by the same words without re-analysing the text (``store copy``)."""
        ...

    def memory_sessions(self) -> list[str]:
        """Sessions holding working-memory items or a memory configuration."""
        ...

    def memory_config(self, session_id: str) -> dict[str, Any] | None: ...

    def memory_set_config(self, session_id: str, config: dict[str, Any]) -> None: ...
