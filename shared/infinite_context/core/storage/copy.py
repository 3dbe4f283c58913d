"""``infinite-context store copy``: move every session between backends (e.g. the embedded
SQLite file to a team Redis), idempotently.

A session is copied when the destination does not have it or holds an older version; an
identical session is skipped; a destination that is ahead (or diverged at the same version) is
never overwritten and is reported instead. Later data kinds (memory items, observations) join
``copy_all`` as they arrive.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..errors import CorruptState
from .base import BaseStore


class CopyReport(BaseModel):
    source: str
    destination: str
    sessions_seen: int = 0
    sessions_copied: int = 0
    sessions_unchanged: int = 0
    history_entries_copied: int = 0
    skipped: list[str] = Field(default_factory=list)


def copy_all(source: BaseStore, destination: BaseStore) -> CopyReport:
    report = CopyReport(source=source.display_url, destination=destination.display_url)
    for session_id in source.sessions():
        report.sessions_seen += 1
        try:
            state = source.get_state(session_id)
        except CorruptState:
            report.skipped.append(f"{session_id}: unreadable in the source (roll it back there first)")
            continue
        if state is None:
            continue
        try:
            existing = destination.get_state(session_id)
        except CorruptState:
            existing = None  # a corrupt destination row is repaired by the copy
        if existing is not None:
            if existing.meta.version > state.meta.version:
                report.skipped.append(
                    f"{session_id}: destination is ahead (v{existing.meta.version} > v{state.meta.version})"
                )
                continue
            if existing.meta.version == state.meta.version:
                if existing == state:
                    report.sessions_unchanged += 1
                else:
                    report.skipped.append(
                        f"{session_id}: both hold v{state.meta.version} with different content"
                    )
                continue
        history = list(reversed(source.history(session_id)))
        destination.replace_session(session_id, state, history)
        report.sessions_copied += 1
        report.history_entries_copied += len(history)
    return report
