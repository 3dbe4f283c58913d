"""The Merger contract: ``merge(request) -> MergeResult``.

A request carries the old state (or None), the already redacted context facts, and what a merger
needs to keep the result honest (session id, project root, token cap, the clock). Mergers
return a state without version bookkeeping; ``ProjectBrain`` stamps the version the store
assigns.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from ..facts import ContextFacts
from ..models import ProjectState


@dataclass(frozen=True)
class MergeRequest:
    old: ProjectState | None
    facts: ContextFacts
    session_id: str
    project_root: Path
    token_cap: int
    now: datetime
    token_count: int | None = None


@dataclass(frozen=True)
class MergeResult:
    state: ProjectState
    merged_by: str
    duration_ms: float
    warnings: tuple[str, ...] = ()


class Merger(Protocol):
    #: the tier ("offline", "gemini", "chain")
    name: str

    @property
    def label(self) -> str:
        """What ``merged_by`` / ``refining`` show: "offline", "gemini:<model>"."""
        ...

    @property
    def uses_network(self) -> bool:
        """True when a merge may call a provider (the brain then refines in the background)."""
        ...

    def merge(self, request: MergeRequest) -> MergeResult: ...
