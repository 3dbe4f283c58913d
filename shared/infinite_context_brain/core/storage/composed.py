"""``ComposedStore``: a whole ``Store`` joined from the four parts a backend builds.

Written once for every backend, so a backend is four small classes on one connection plus a
constructor, and each Store method has exactly one implementation per backend. The parts stay
reachable (``store.states``, ``store.feed``, ``store.observations``, ``store.memory``) for code
that needs only one of them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..memory.model import MemoryItem
from ..models import HistoryEntry, LockInfo, Observation, ProjectState
from .parts import (
    ChangeCallback,
    ChangeFeed,
    IndexedItem,
    MemoryIndex,
    ObservationStore,
    PutOutcome,
    StateStore,
    Subscription,
    UpdateFn,
    UpdateOutcome,
)

log = logging.getLogger(__name__)


class ComposedStore:
    def __init__(
        self,
        *,
        display_url: str,
        states: StateStore,
        feed: ChangeFeed,
        observations: ObservationStore,
        memory: MemoryIndex,
        close: Callable[[], None],
    ) -> None:
        #: the store location as shown to people (never with a password).
        self.display_url = display_url
        self.states = states
        self.feed = feed
        self.observations = observations
        self.memory = memory
        self._close_connection = close

    # ---- state, history, advisory lock ------------------------------------------------------
    def get_state(self, session_id: str) -> ProjectState | None:
        return self.states.get_state(session_id)

    def current_version(self, session_id: str) -> int:
        return self.states.current_version(session_id)

    def update_state(
        self, session_id: str, fn: UpdateFn, *, repair: bool = False, floor: int = 0
    ) -> UpdateOutcome:
        return self.states.update_state(session_id, fn, repair=repair, floor=floor)

    def history(self, session_id: str, limit: int | None = None) -> list[HistoryEntry]:
        return self.states.history(session_id, limit)

    def history_entry(self, session_id: str, version: int) -> HistoryEntry | None:
        return self.states.history_entry(session_id, version)

    def replace_session(self, session_id: str, state: ProjectState, history: list[HistoryEntry]) -> None:
        self.states.replace_session(session_id, state, history)

    def sessions(self) -> list[str]:
        return self.states.sessions()

    def acquire_lock(self, session_id: str, owner: str, ttl_seconds: float) -> LockInfo:
        return self.states.acquire_lock(session_id, owner, ttl_seconds)

    def release_lock(self, session_id: str, owner: str) -> bool:
        return self.states.release_lock(session_id, owner)

    def lock_holder(self, session_id: str) -> str | None:
        return self.states.lock_holder(session_id)

    # ---- change feed ------------------------------------------------------------------------
    def subscribe(self, callback: ChangeCallback, session_id: str | None = None) -> Subscription:
        return self.feed.subscribe(callback, session_id)

    # ---- observations -----------------------------------------------------------------------
    def put_observations(self, session_id: str, observations: list[Observation]) -> None:
        self.observations.put_observations(session_id, observations)

    def put_observation(self, session_id: str, observation: Observation) -> None:
        self.observations.put_observation(session_id, observation)

    def get_observations(self, session_id: str, tool_use_ids: list[str]) -> dict[str, Observation]:
        return self.observations.get_observations(session_id, tool_use_ids)

    def all_observations(self, session_id: str) -> dict[str, Observation]:
        return self.observations.all_observations(session_id)

    def observation_sessions(self) -> list[str]:
        return self.observations.observation_sessions()

    # ---- working memory ---------------------------------------------------------------------
    def memory_put(self, session_id: str, items: list[IndexedItem]) -> PutOutcome | None:
        return self.memory.memory_put(session_id, items)

    def memory_update(self, session_id: str, items: list[MemoryItem]) -> None:
        self.memory.memory_update(session_id, items)

    def memory_touch(self, session_id: str, items: list[MemoryItem]) -> None:
        self.memory.memory_touch(session_id, items)

    def memory_flush(self) -> None:
        self.memory.memory_flush()

    def memory_settle(self, until: Callable[[], bool] | None = None) -> None:
        self.memory.memory_settle(until)

    def memory_get(self, session_id: str, ids: list[str]) -> dict[str, MemoryItem]:
        return self.memory.memory_get(session_id, ids)

    def memory_ranked(
        self, session_id: str, order: str, offset: int, limit: int
    ) -> list[tuple[MemoryItem, float]]:
        return self.memory.memory_ranked(session_id, order, offset, limit)

    def memory_all(self, session_id: str, archived: bool | None = False) -> list[MemoryItem]:
        return self.memory.memory_all(session_id, archived)

    def memory_page(self, session_id: str, archived: bool, offset: int, limit: int) -> list[MemoryItem]:
        return self.memory.memory_page(session_id, archived, offset, limit)

    def memory_delete(self, session_id: str, ids: list[str]) -> int:
        return self.memory.memory_delete(session_id, ids)

    def memory_search(
        self, session_id: str, terms: list[str], limit: int, archived: bool
    ) -> list[tuple[str, float]]:
        return self.memory.memory_search(session_id, terms, limit, archived)

    def memory_usage(self, session_id: str) -> tuple[int, int, int, int]:
        return self.memory.memory_usage(session_id)

    def memory_export(self, session_id: str) -> list[IndexedItem]:
        return self.memory.memory_export(session_id)

    def memory_sessions(self) -> list[str]:
        return self.memory.memory_sessions()

    def memory_config(self, session_id: str) -> dict[str, Any] | None:
        return self.memory.memory_config(session_id)

    def memory_set_config(self, session_id: str, config: dict[str, Any]) -> None:
        self.memory.memory_set_config(session_id, config)

    # ---- lifetime ---------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the change feed's listeners first: they read through the same connection; write
        buffered access bookkeeping and deferred index entries before the connection goes."""
        self.feed.close()
        try:
            self.memory.memory_flush()
        except Exception:  # bookkeeping only: closing goes on
            log.warning("could not store access times of working-memory items", exc_info=True)
        try:
            self.memory.memory_settle()
        except Exception:  # kept in the items' rows: the next open settles them
            log.warning("could not write deferred index entries of working-memory items", exc_info=True)
        self._close_connection()

    def __enter__(self) -> ComposedStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
