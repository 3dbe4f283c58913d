"""Mergers: the deterministic offline merger (always available) and, later, LLM tiers."""

from .base import Merger, MergeRequest, MergeResult
from .offline import OfflineMerger

__all__ = ["MergeRequest", "MergeResult", "Merger", "OfflineMerger"]
