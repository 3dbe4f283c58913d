"""The compare-and-set loop the state part of every backend shares.

A backend's state part implements three atomic primitives (read a session's state, write it
only if the version is still the one read, do the same while holding an exclusive write lock);
``CasStates.update_state`` turns them into the contract:

* attempts 1..N-1 are optimistic: read, run ``fn`` on the fresh state (no lock held), write only
  if nobody moved the version meanwhile, else back off (exponential, full jitter) and re-run;
* the last attempt runs ``fn`` while holding the backend's write lock, so a writer that keeps
  losing the race still finishes instead of failing. ``fn`` must therefore be quick (the
  offline merge, or applying a result computed beforehand): slow work such as an LLM call
  belongs before ``update_state``, never inside it.

Versions are dense (1, 2, 3...) per session: every accepted write is ``current + 1`` (or
``floor + 1`` after a wiped store, see identity.py).
"""

from __future__ import annotations

import abc
import random
import time
from collections.abc import Callable

from pydantic import ValidationError

from ..errors import ConflictError, CorruptState, StorageError
from ..models import HistoryEntry, Observation, ProjectState
from .parts import UpdateFn, UpdateOutcome

BACKOFF_BASE_SECONDS = 0.01
BACKOFF_CAP_SECONDS = 0.5


def backoff_delay(attempt: int, rng: random.Random | None = None) -> float:
    """Full-jitter exponential backoff: uniform(0, min(cap, base * 2**attempt))."""
    ceiling = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * (2**attempt))
    return (rng or random).uniform(ceiling / 4, ceiling)


def parse_state(raw: bytes | str, *, session_id: str, where: str) -> ProjectState:
    try:
        return ProjectState.model_validate_json(raw)
    except ValidationError as exc:
        raise CorruptState(
            f"the stored state of session {session_id} ({where}) is unreadable: {exc.errors()[0]['msg']}",
            fix="run `infinite-context rollback` to restore the newest intact version from history",
        ) from None


def parse_observation(raw: bytes | str) -> Observation | None:
    try:
        return Observation.model_validate_json(raw)
    except ValidationError:
        return None


def parse_entry(raw: bytes | str, *, session_id: str) -> HistoryEntry | None:
    """A corrupt history row is skipped (None) rather than hiding the good ones around it."""
    try:
        return HistoryEntry.model_validate_json(raw)
    except ValidationError:
        return None


class CasStates(abc.ABC):
    """The state part's shared behaviour; a backend fills in the three primitives (and the rest
    of ``parts.StateStore``: history, locks, ``replace_session``, ``sessions``)."""

    def __init__(self, *, history_size: int = 5, cas_attempts: int = 3) -> None:
        self.history_size = history_size
        self.cas_attempts = cas_attempts

    @abc.abstractmethod
    def _read(self, session_id: str) -> tuple[int, bytes | None]:
        """(current version, raw state JSON) with (0, None) for a session never written."""

    @abc.abstractmethod
    def _write_if(self, session_id: str, expected_version: int, entry: HistoryEntry) -> bool:
        """Atomically store ``entry`` (state + history row + trim + change event) if the version
        is still ``expected_version``; False if another writer got there first."""

    @abc.abstractmethod
    def _update_exclusive(
        self, session_id: str, build: Callable[[int, bytes | None], HistoryEntry]
    ) -> HistoryEntry:
        """Hold the session's write lock, read, ``build(version, raw)``, write; cannot lose."""

    def get_state(self, session_id: str) -> ProjectState | None:
        version, raw = self._read(session_id)
        if raw is None:
            return None
        return parse_state(raw, session_id=session_id, where=f"version {version}")

    def current_version(self, session_id: str) -> int:
        return self._read(session_id)[0]

    def update_state(
        self, session_id: str, fn: UpdateFn, *, repair: bool = False, floor: int = 0
    ) -> UpdateOutcome:
        """Compare-and-set loop (see the module docstring).

        ``repair=True`` hands ``fn`` None instead of raising when the stored state is corrupt,
        so a rollback can write over it with a version from history. ``floor``: the new version
        is above it even when the store holds less (a wiped store, see identity.py).
        """

        def build(version: int, raw: bytes | None) -> HistoryEntry:
            current = None
            if raw is not None:
                try:
                    current = parse_state(raw, session_id=session_id, where=f"version {version}")
                except CorruptState:
                    if not repair:
                        raise
            nxt = max(version, floor) + 1
            entry = fn(current, nxt)
            if entry.version != nxt or entry.state.meta.version != nxt:
                raise StorageError(f"update produced version {entry.version}, expected {nxt}")
            return entry

        for attempt in range(1, self.cas_attempts + 1):
            if attempt == self.cas_attempts:
                return UpdateOutcome(self._update_exclusive(session_id, build), attempt)
            version, raw = self._read(session_id)
            entry = build(version, raw)
            if self._write_if(session_id, version, entry):
                return UpdateOutcome(entry, attempt)
            time.sleep(backoff_delay(attempt))
        raise ConflictError(  # unreachable: the last attempt is exclusive
            f"session {session_id} kept changing", fix="retry the checkpoint"
        )
