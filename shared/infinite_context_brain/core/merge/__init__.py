"""Mergers: the deterministic offline merger (always available) and, later, LLM tiers.

``OfflineMerger`` is imported on first use: the types here are what the brain needs at import,
and a hook that only resumes never merges (start-up time).
"""

from typing import TYPE_CHECKING, Any

from .base import Merger, MergeRequest, MergeResult

if TYPE_CHECKING:
    from .offline import OfflineMerger

__all__ = ["MergeRequest", "MergeResult", "Merger", "OfflineMerger"]


def __getattr__(name: str) -> Any:
    if name == "OfflineMerger":
        from .offline import OfflineMerger

        return OfflineMerger
    raise AttributeError(name)
