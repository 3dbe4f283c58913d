"""``infinite-context store copy``: move every part of every brain between backends (e.g. the
embedded SQLite file to a team Redis), idempotently.

A brain is more than its state: the copy carries, per session, the state with its history, the
working-memory items (live and archived, with the index terms they are found by) and the memory
configuration, and the endless-mode observations. A session is taken from any of those parts,
because hooks store observations and people store memory items before the first checkpoint.

Rules, the same for every part: what the destination lacks is copied; what it holds identically
is counted as unchanged; what it holds differently is never overwritten and is reported instead.
For the state the histories decide, not the version numbers: a destination is brought up to the
source only when every version it holds is the source's own (it is behind on the same line);
one that is ahead, or whose versions differ from the source's (both were written to apart, even
if the destination's number is lower), or that is older than what the source's history keeps
(nothing to compare it with) keeps its state and history and is listed in ``skipped``. Items
and observations have no version, so a differing copy in the destination is kept as it is (it
may be the newer one: an observation in particular is decided once and must stay byte-stable for
prompt caching).
Nothing in the destination is deleted.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..errors import CorruptState
from ..models import HistoryEntry, ProjectState
from .store import Store

#: items written per memory_put (one transaction each)
MEMORY_BATCH = 500


class CopyReport(BaseModel):
    source: str
    destination: str
    sessions_seen: int = 0
    sessions_copied: int = 0
    sessions_unchanged: int = 0
    history_entries_copied: int = 0
    memory_items_copied: int = 0
    memory_items_unchanged: int = 0
    memory_configs_copied: int = 0
    observations_copied: int = 0
    observations_unchanged: int = 0
    skipped: list[str] = Field(default_factory=list)

    def summary(self) -> str:
        """One line for people; ``skipped`` holds the reasons."""
        return (
            f"{self.source} -> {self.destination}: {self.sessions_seen} sessions; "
            f"states: {self.sessions_copied} copied ({self.history_entries_copied} history entries), "
            f"{self.sessions_unchanged} up to date; memory items: {self.memory_items_copied} copied, "
            f"{self.memory_items_unchanged} up to date, {self.memory_configs_copied} configurations copied; "
            f"observations: {self.observations_copied} copied, {self.observations_unchanged} up to date; "
            f"{len(self.skipped)} skipped."
        )


def copy_all(source: Store, destination: Store) -> CopyReport:
    report = CopyReport(source=source.display_url, destination=destination.display_url)
    sessions = sorted(
        {
            *source.states.sessions(),
            *source.memory.memory_sessions(),
            *source.observations.observation_sessions(),
        }
    )
    for session_id in sessions:
        report.sessions_seen += 1
        _copy_state(source, destination, session_id, report)
        _copy_memory(source, destination, session_id, report)
        _copy_observations(source, destination, session_id, report)
    return report


def _copy_state(source: Store, destination: Store, session_id: str, report: CopyReport) -> None:
    try:
        state = source.states.get_state(session_id)
    except CorruptState:
        report.skipped.append(f"{session_id}: unreadable in the source (roll it back there first)")
        return
    if state is None:
        return
    theirs = destination.states.history(session_id)
    try:
        existing = destination.states.get_state(session_id)
    except CorruptState:
        existing = None  # an unreadable destination row: its history decides alone
    if existing is not None and existing == state:
        report.sessions_unchanged += 1
        return
    ours = list(reversed(source.states.history(session_id)))
    reason = _not_behind(state, ours, existing, theirs)
    if reason is not None:
        report.skipped.append(f"{session_id}: {reason}; the destination keeps its state and history")
        return
    destination.states.replace_session(session_id, state, ours)
    report.sessions_copied += 1
    report.history_entries_copied += len(ours)


def _not_behind(
    state: ProjectState, ours: list[HistoryEntry], existing: ProjectState | None, theirs: list[HistoryEntry]
) -> str | None:
    """Why the destination (``existing``, ``theirs``) may not be replaced by the source's
    ``state`` and history ``ours``; None when each of its versions is the source's own."""
    held = {e.version: e.state for e in ours}
    held[state.meta.version] = state
    versions = {e.version: e.state for e in theirs}
    if existing is not None:
        versions[existing.meta.version] = existing
    if not versions:
        return None
    newest = max(versions)
    if newest > state.meta.version:
        return f"the destination is ahead (v{newest} > v{state.meta.version})"
    differing = sorted(v for v, s in versions.items() if v in held and held[v] != s)
    if differing:
        return (
            f"the histories diverged: the destination's v{differing[0]} differs from the source's "
            f"(the destination holds v{min(versions)}-v{newest}, the source v{min(held)}-v{max(held)})"
        )
    if newest not in held:
        return (
            f"the destination's v{newest} is older than the source's history (v{min(held)}-v{max(held)}): "
            "it cannot be compared, so it is kept"
        )
    return None


def _copy_memory(source: Store, destination: Store, session_id: str, report: CopyReport) -> None:
    exported = source.memory.memory_export(session_id)
    present = destination.memory.memory_get(session_id, [entry.item.id for entry in exported])
    missing, differing = [], 0
    for entry in exported:
        there = present.get(entry.item.id)
        if there is None:
            missing.append(entry)
        elif there == entry.item:
            report.memory_items_unchanged += 1
        else:
            differing += 1
    for start in range(0, len(missing), MEMORY_BATCH):
        destination.memory.memory_put(session_id, missing[start : start + MEMORY_BATCH])
    report.memory_items_copied += len(missing)
    if differing:
        report.skipped.append(
            f"{session_id}: {differing} memory items differ in the destination (kept there)"
        )

    config = source.memory.memory_config(session_id)
    if config is None:
        return
    existing = destination.memory.memory_config(session_id)
    if existing is None:
        destination.memory.memory_set_config(session_id, config)
        report.memory_configs_copied += 1
    elif existing != config:
        report.skipped.append(
            f"{session_id}: the memory configuration differs in the destination (kept there)"
        )


def _copy_observations(source: Store, destination: Store, session_id: str, report: CopyReport) -> None:
    observations = source.observations.all_observations(session_id)
    if not observations:
        return
    present = destination.observations.get_observations(session_id, list(observations))
    missing = [o for tool_use_id, o in observations.items() if tool_use_id not in present]
    differing = sum(1 for t, o in observations.items() if t in present and present[t] != o)
    if missing:
        destination.observations.put_observations(session_id, missing)
    report.observations_copied += len(missing)
    report.observations_unchanged += len(present) - differing
    if differing:
        report.skipped.append(
            f"{session_id}: {differing} observations differ in the destination (kept there)"
        )
